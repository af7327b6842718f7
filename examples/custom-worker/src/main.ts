import Anthropic from '@anthropic-ai/sdk';
import { runEmulatedSession } from './emulated.js';
import { customWorker } from './worker.js';

/**
 * `start --emulator`: the same worker, offline, against the emulated service (src/emulated.ts);
 * prints the session's timeline and exits 1 when its end state is wrong.
 *
 * Otherwise the worker against the live service. Needs ANTHROPIC_ENVIRONMENT_ID and
 * ANTHROPIC_ENVIRONMENT_KEY; the operator prepares /mnt/memory (`mkdir -p /mnt/memory`, owned by
 * the worker's user) and, for crash recovery, STATE_DIR (a folder outside the sandbox).
 * SIGINT/SIGTERM end the loop; the session in flight is finalized `aborted`.
 */
async function main(): Promise<void> {
  const environmentId = required('ANTHROPIC_ENVIRONMENT_ID');
  const environmentKey = required('ANTHROPIC_ENVIRONMENT_KEY');
  // The environment key is the worker's one standing credential; each work item's calls swap it
  // for that item's sessions token.
  const client = new Anthropic({ authToken: environmentKey });
  const stop = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => stop.abort());

  await customWorker({
    client,
    environmentId,
    environmentKey,
    workdir: process.env['WORKDIR'] ?? process.cwd(),
    ...(process.env['STATE_DIR'] && { stateDir: process.env['STATE_DIR'] }),
  }).run(stop.signal);
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

if (process.argv.includes('--emulator')) {
  const outcome = await runEmulatedSession();
  process.exitCode = outcome.passed ? 0 : 1;
} else {
  await main();
}
