import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MemoryMounter, type Logger } from '@memory-mounter/core';

/**
 * Issue 19 item 7 at a real descriptor limit: fd-budget.test.ts runs this (bundled, see
 * child-bundle.ts) under `ulimit -n 256`, against the parent's MemoryApiServer through the real
 * SDK. `session`: mounts the stores (300 folders each), makes a chain of CHAIN folders in the
 * first, edits EDITS files per store, runs a pass, then finalizes. `crash`: the same up to the
 * pass, then edits again and kills itself (SIGKILL) before any pass pushes them. `recover`: the
 * next worker's `MemoryMounter.recover`. Prints one `result <json>` line; the peak of open
 * descriptors is sampled from /proc/self/fd every 2 ms.
 */
export interface FdBudgetArgs {
  mode: 'session' | 'crash' | 'recover';
  baseURL: string;
  memoryRoot: string;
  stateDir: string;
  storeIds: string[];
  /** Each store's memory paths (300, one per folder). */
  paths: string[];
  edits: number;
  chain: number;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const edited = (path: string, round: number) => `${path}, edited (round ${round})\n`;

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as FdBudgetArgs;
  let peak = 0;
  const sample = setInterval(() => {
    try {
      peak = Math.max(peak, readdirSync('/proc/self/fd').length - 1);
    } catch {
      // Out of descriptors this very moment: the next sample counts them.
    }
  }, 2);
  // The SDK is a dependency of @memory-mounter/anthropic, not of core: the bundler finds it
  // through nodePaths, and this file needs only its constructor.
  const Anthropic = (require('@anthropic-ai/sdk') as { default: new (options: object) => unknown }).default;
  const sdk = new Anthropic({ apiKey: 'fd-budget', baseURL: args.baseURL, maxRetries: 0 });
  const storeClient = new AnthropicStoreClient({ client: sdk as never });
  const result: Record<string, unknown> = {};
  const t0 = Date.now();
  const ms: Record<string, number> = {};
  result.ms = ms;
  const { memoryRoot, stateDir } = args;
  if (args.mode === 'recover') {
    const recovery = await MemoryMounter.recover({ storeClient, memoryRoot, stateDir, logger: silent });
    ms.recover = Date.now() - t0;
    result.recovery = recovery.stores.map((s) => ({ path: s.path, outcome: s.outcome, pushed: s.pushed.length, unpushed: s.unpushed.length, left: s.left?.reason }));
  } else {
    const mounter = new MemoryMounter({ storeClient, memoryRoot, stateDir, logger: silent, newFileSettle: 0 });
    const mounts = await mounter.materialize(args.storeIds.map((id, i) => ({ type: 'memory_store', memory_store_id: id, name: `s${i}` })));
    result.mounted = mounts.length;
    ms.materialize = Date.now() - t0;
    const chainTop = join(mounts[0]!.path, 'chain');
    mkdirSync(join(chainTop, ...Array.from({ length: args.chain }, () => 'c')), { recursive: true });
    writeFileSync(join(chainTop, ...Array.from({ length: args.chain }, () => 'c'), 'bottom.md'), 'at the bottom\n');
    const edit = (round: number) => {
      for (const mount of mounts) {
        for (let i = 0; i < args.edits; i++) {
          const path = args.paths[i * Math.floor(args.paths.length / args.edits)]!;
          writeFileSync(join(mount.path, path), edited(path, round));
        }
      }
    };
    edit(1);
    const pass = await mounter.reconcile({ force: true });
    ms.pass = Date.now() - t0;
    result.pass = pass?.stores.map((s) => ({ status: s.status, pushed: s.pushed.length, errors: s.errors.length }));
    if (args.mode === 'crash') {
      edit(2);
      clearInterval(sample);
      process.stdout.write(`result ${JSON.stringify({ ...result, peak })}\n`, () => process.kill(process.pid, 'SIGKILL'));
      return;
    }
    const report = await mounter.finalize();
    ms.finalize = Date.now() - t0;
    result.finalize = { removed: report.removed.length, leftInPlace: report.leftInPlace, unpushed: report.unpushed.length, timedOut: report.timedOut };
  }
  clearInterval(sample);
  process.stdout.write(`result ${JSON.stringify({ ...result, peak })}\n`);
}

main().catch((err: unknown) => {
  process.stdout.write(`result ${JSON.stringify({ error: err instanceof Error ? `${err.message} ${(err as { cause?: unknown }).cause ?? ''}` : String(err) })}\n`);
  process.exit(2);
});
