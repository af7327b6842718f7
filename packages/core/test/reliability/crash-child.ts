import { appendFileSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MemoryMounter, MemoryMountError, type Logger, type RecoveryReport } from '@memory-mounter/core';
import { seededRandom, selfCheckingContent, sha256 } from './self-checking-content.js';

/**
 * The worker the crash test kills (crash.test.ts runs it as a bundle, see child-bundle.ts). It
 * mounts one store served by the parent's MemoryApiServer through the real SDK, then loops for
 * ever: the agent writes or deletes a memory file, and a forced reconcile syncs. The parent
 * changes the store meanwhile and sends SIGKILL at a random moment.
 *
 * The agent writes as a careful tool does (a complete file renamed into place), and journals the
 * sha of each content before it lands, so the parent can tell the agent's versions from others.
 *
 * With `mode: 'recover'` it is the next worker starting up on that host instead: it runs
 * `MemoryMounter.recover`, then mounts the same store at the same path and finalizes, and prints
 * one `result <json>` line (RecoverChildResult).
 */
export interface CrashChildArgs {
  mode?: 'work' | 'recover';
  /** The mounters' stateDir, beside memoryRoot. */
  stateDir: string;
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

export interface RecoverChildResult {
  recovery: RecoveryReport;
  /** The restart at the same path: `ok`, or the MemoryMountError code (or message) it failed with. */
  restart: string;
  /** What the restart's finalize removed and left. */
  finalized: { removed: string[]; leftInPlace: string[] } | null;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as CrashChildArgs;
  // The SDK is a dependency of @memory-mounter/anthropic, not of core: the bundler finds it
  // through nodePaths, and this file needs only its constructor.
  const Anthropic = (require('@anthropic-ai/sdk') as { default: new (options: object) => unknown }).default;
  const sdk = new Anthropic({ apiKey: 'crash-test', baseURL: args.baseURL, maxRetries: 0 });
  const storeClient = new AnthropicStoreClient({ client: sdk as never });
  if (args.mode === 'recover') return recoverAndRestart(args, storeClient);
  const mounter = new MemoryMounter({
    storeClient,
    memoryRoot: args.memoryRoot,
    stateDir: args.stateDir,
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

async function recoverAndRestart(args: CrashChildArgs, storeClient: AnthropicStoreClient): Promise<void> {
  const { memoryRoot, stateDir } = args;
  const recovery = await MemoryMounter.recover({ storeClient, memoryRoot, stateDir, logger: silent });
  const result: RecoverChildResult = { recovery, restart: 'ok', finalized: null };
  const restart = new MemoryMounter({ storeClient, memoryRoot, stateDir, logger: silent });
  try {
    await restart.materialize([{ type: 'memory_store', memory_store_id: args.storeId, mount_path: args.mountPath }]);
  } catch (err) {
    result.restart = err instanceof MemoryMountError ? err.code : String(err);
  }
  const report = await restart.finalize();
  result.finalized = { removed: report.removed, leftInPlace: report.leftInPlace.map((l) => `${l.path}: ${l.reason}`) };
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`crash child failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(2);
});
