import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MARKER_FILE, MemoryMounter, NodeFileSystem, type Logger } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';
import { checkFleet, type FleetVerdict } from './fleet-check.js';
import { readJournal, sha256 } from './fleet-journal.js';
import type { FleetWorkerArgs } from './fleet-worker.js';

export interface FleetOptions {
  seed: number;
  workers: number;
  /** Agent steps per worker. */
  steps: number;
  /** Share of writes answered 503, and of those the share carried out first. */
  faultFraction: number;
  appliedFraction: number;
  /** The worker bundle (child-bundle.ts). */
  bundle: string;
}

export interface FleetResult extends FleetVerdict {
  seed: number;
  workers: number;
  faults: { applied: number; notApplied: number };
  /** Every request the emulator answered, materializes and finalizes included. */
  emulatorRequests: number;
  durationMs: number;
}

const STORE = 'memstore_fleet';
const MOUNT_PATH = '/mnt/memory/fleet';
// Small, so that workers really collide; no path is a folder of another.
const PATHS = ['/a.md', '/b.md', '/c.md', '/notes/d.md', '/notes/e.md', '/notes/f.md', '/deep/x/g.md', '/deep/x/h.md'];
const SYNC_INTERVAL_S = 0.25;
const STEP_PAUSE_MS = 60;
const WORKER_TIMEOUT_MS = 120_000;
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * One fleet run: the emulator here with one seeded store, `workers` child processes mounting it
 * through the real SDK (fleet-worker.ts), seeded 503s on writes throughout (some carried out
 * first), then, once every worker has finalized, a fresh materialize into a new root and the
 * checker (fleet-check.ts) over the journals and the store's version history.
 */
export async function runFleet(options: FleetOptions): Promise<FleetResult> {
  const started = Date.now();
  const base = await realpath(await mkdtemp(join(tmpdir(), `mm-fleet-${options.seed}-`)));
  // retry-after 10 ms: the SDK's retries of a 503 stay quick.
  const server = new MemoryApiServer({ retryAfterSeconds: 0.01 });
  const baseURL = await server.start();
  let keep = Boolean(process.env.FLEET_KEEP);
  try {
    server.seed(STORE, Object.fromEntries(PATHS.filter((_, i) => i % 2 === 0).map((p) => [p, `seed ${p}\n`])));
    const faults = server.failWritesAtRandom({ seed: options.seed, fraction: options.faultFraction, appliedFraction: options.appliedFraction })!;

    const journals = await Promise.all(
      Array.from({ length: options.workers }, async (_, worker) => {
        const memoryRoot = join(base, `worker-${worker}`);
        const journal = join(base, `journal-${worker}.jsonl`);
        await mkdir(memoryRoot);
        appendFileSync(journal, '');
        const args: FleetWorkerArgs = {
          worker,
          seed: options.seed,
          baseURL,
          storeId: STORE,
          memoryRoot,
          mountPath: MOUNT_PATH,
          journal,
          paths: PATHS,
          steps: options.steps,
          syncInterval: SYNC_INTERVAL_S,
          stepPauseMs: STEP_PAUSE_MS,
        };
        await runWorker(options.bundle, args);
        return readJournal(journal);
      }),
    );
    server.failWritesAtRandom(undefined);
    const faultCounts = { ...faults.counts };
    const emulatorRequests = server.requestCount();

    const finalStore = server.snapshot(STORE);
    const materialized = await freshMaterialize(baseURL, join(base, 'fresh'));
    writeFileSync(join(base, 'versions.json'), JSON.stringify(server.versions(STORE), null, 1));
    const verdict = checkFleet({
      journals,
      versions: server.versions(STORE),
      finalStore,
      materialized,
      finalShas: Object.fromEntries(Object.entries(finalStore).map(([p, c]) => [p, sha256(c)])),
    });
    keep = verdict.problems.length > 0 || Boolean(process.env.FLEET_KEEP);
    return { ...verdict, seed: options.seed, workers: options.workers, faults: faultCounts, emulatorRequests, durationMs: Date.now() - started };
  } finally {
    await server.close();
    // A run that found a problem keeps its journals and versions.json for a look (FLEET_KEEP=1: every run).
    if (keep) process.stderr.write(`fleet seed ${options.seed}: kept ${base}\n`);
    else await rm(base, { recursive: true, force: true });
  }
}

async function runWorker(bundle: string, args: FleetWorkerArgs): Promise<void> {
  const child = spawn(process.execPath, [bundle, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  const timer = setTimeout(() => child.kill('SIGKILL'), WORKER_TIMEOUT_MS);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  if (code !== 0) throw new Error(`fleet worker ${args.worker} (seed ${args.seed}) exited ${code ?? signal}: ${stderr.slice(-2_000)}`);
}

/** What a new worker would get: the store materialized into an empty root, as `{ path: content }`. */
async function freshMaterialize(baseURL: string, memoryRoot: string): Promise<Record<string, string>> {
  await mkdir(memoryRoot);
  const client = new Anthropic({ apiKey: 'fleet-check', baseURL, maxRetries: 0 });
  const mounter = new MemoryMounter({ storeClient: new AnthropicStoreClient({ client }), fileSystem: new NodeFileSystem(), memoryRoot, logger: silent });
  const [mounted] = await mounter.materialize([{ type: 'memory_store', memory_store_id: STORE, mount_path: MOUNT_PATH }]);
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name !== MARKER_FILE) files[`/${relative(mounted!.path, full)}`] = readFileSync(full, 'utf8');
    }
  };
  walk(mounted!.path);
  await mounter.finalize({ outcome: 'completed' });
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1)));
}
