import { appendFileSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MemoryMounter, type Logger } from '@memory-mounter/core';
import { seededRandom, selfCheckingContent, sha256 } from './self-checking-content.js';

/**
 * The worker the crash test kills (crash.test.ts runs it as a bundle, see child-bundle.ts). It
 * mounts one store served by the parent's MemoryApiServer through the real SDK, then loops for
 * ever: the agent writes or deletes a memory file, and a forced reconcile syncs. The parent
 * changes the store meanwhile and sends SIGKILL at a random moment.
 *
 * The agent writes as a careful tool does (a complete file renamed into place), and journals the
 * sha of each content before it lands, so the parent can tell the agent's versions from others.
 */
export interface CrashChildArgs {
  baseURL: string;
  memoryRoot: string;
  mountPath: string;
  storeId: string;
  /** The agent's scratch folder, beside memoryRoot (same filesystem, so rename is atomic). */
  staging: string;
  /** One sha256 per line: every content the agent wrote. */
  journal: string;
  seed: number;
  /** Memory paths the agent writes and deletes. */
  paths: string[];
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as CrashChildArgs;
  // The SDK is a dependency of @memory-mounter/anthropic, not of core: the bundler finds it
  // through nodePaths, and this file needs only its constructor.
  const Anthropic = (require('@anthropic-ai/sdk') as { default: new (options: object) => unknown }).default;
  const sdk = new Anthropic({ apiKey: 'crash-test', baseURL: args.baseURL, maxRetries: 0 });
  const mounter = new MemoryMounter({
    storeClient: new AnthropicStoreClient({ client: sdk as never }),
    memoryRoot: args.memoryRoot,
    deleteGracePeriod: 0,
    logger: silent,
  });
  const random = seededRandom(args.seed * 7919);
  const root = join(args.memoryRoot, args.mountPath.slice('/mnt/memory/'.length));
  mkdirSync(args.staging, { recursive: true });

  process.stdout.write('ready\n');
  const started = Date.now();
  await mounter.materialize([{ type: 'memory_store', memory_store_id: args.storeId, mount_path: args.mountPath }]);
  process.stdout.write(`materialized\n`);
  if (process.env.CRASH_CHILD_TIMING) process.stderr.write(`materialize took ${Date.now() - started} ms\n`);

  for (let n = 0; ; n++) {
    const path = args.paths[Math.floor(random() * args.paths.length)]!;
    const target = join(root, path);
    const roll = random();
    if (roll < 0.6) {
      const content = selfCheckingContent('agent', n, Math.floor(random() * 60_000), random);
      const staged = join(args.staging, `w${n}`);
      writeFileSync(staged, content);
      appendFileSync(args.journal, `${sha256(content)}\n`);
      mkdirSync(dirname(target), { recursive: true });
      renameSync(staged, target);
    } else if (roll < 0.7) {
      rmSync(target, { force: true });
    }
    await mounter.reconcile({ force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`crash child failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(2);
});
