import Anthropic from '@anthropic-ai/sdk';
import { EnvironmentWorker } from '@memory-mounter/anthropic';

// Polls with the environment key; each session's calls use the sessions token of its work item.
const environmentKey = process.env.ANTHROPIC_ENVIRONMENT_KEY!;
const worker = new EnvironmentWorker({
  client: new Anthropic({ authToken: environmentKey }),
  environmentId: process.env.ANTHROPIC_ENVIRONMENT_ID!,
  environmentKey,
  workdir: process.env.WORKDIR, // where the agent's tools work; default the current directory
  memoryRoot: process.env.MEMORY_ROOT, // where /mnt/memory lies on this host; default /mnt/memory
});
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
await worker.run(stop.signal); // SIGINT/SIGTERM: the session in flight is finalized, then it returns
