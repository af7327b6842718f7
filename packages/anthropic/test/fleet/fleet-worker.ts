import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { seededRandom } from '@memory-mounter/testing';
import {
  MemoryMounter,
  NodeFileSystem,
  type Logger,
  type StoreClient,
  type StoreListFolderOptions,
  type StoreListVersionsOptions,
  type StoreMemory,
  type SyncReport,
} from '@memory-mounter/core';
import { sha256, type JournalEntry, type PassPhase, type PassSummary } from './fleet-journal.js';

/**
 * One worker of the fleet test (fleet.test.ts runs it as a bundle, see
 * core/test/reliability/child-bundle.ts): a MemoryMounter over AnthropicStoreClient and the real
 * SDK, against the parent's emulator, on a real temp dir of its own. A seeded agent edits,
 * creates, deletes and renames files in a small path space every worker shares, calling
 * `reconcile()` (not forced: `memory_sync_interval` decides) after each step; then the worker
 * finalizes. Everything it did and saw goes to its journal (fleet-journal.ts).
 */
export interface FleetWorkerArgs {
  worker: number;
  seed: number;
  baseURL: string;
  storeId: string;
  memoryRoot: string;
  mountPath: string;
  journal: string;
  paths: string[];
  steps: number;
  /** Seconds, the mounter's `memory_sync_interval`. */
  syncInterval: number;
  /** The agent waits up to this long (ms, seeded) between steps. */
  stepPauseMs: number;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };


/**
 * The engine's store client with each write call journaled around (start, end, what it sent),
 * so the checker can tell this worker's memory versions from every other writer's. Reads pass
 * through untouched, the optional feed and folder listings included.
 */
class JournalingStoreClient implements StoreClient {
  constructor(
    readonly inner: AnthropicStoreClient,
    readonly log: (entry: JournalEntry) => void,
  ) {}

  list(storeId: string, opts?: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal }): AsyncIterable<StoreMemory> {
    return this.inner.list(storeId, opts);
  }

  get(storeId: string, memoryId: string, opts?: { signal?: AbortSignal }): Promise<StoreMemory> {
    return this.inner.get(storeId, memoryId, opts);
  }

  listVersions(storeId: string, opts?: StoreListVersionsOptions) {
    return this.inner.listVersions(storeId, opts);
  }

  listFolder(storeId: string, opts?: StoreListFolderOptions) {
    return this.inner.listFolder(storeId, opts);
  }

  create(storeId: string, input: { path: string; content: string }, opts?: { signal?: AbortSignal }): Promise<StoreMemory> {
    return this.#journaled({ op: 'create', path: input.path, sha: sha256(input.content) }, () => this.inner.create(storeId, input, opts));
  }

  update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts?: { signal?: AbortSignal },
  ): Promise<StoreMemory> {
    return this.#journaled(
      {
        op: 'update',
        memoryId,
        ...(input.path !== undefined && { newPath: input.path }),
        ...(input.content !== undefined && { sha: sha256(input.content) }),
      },
      () => this.inner.update(storeId, memoryId, input, opts),
    );
  }

  delete(storeId: string, memoryId: string, opts?: { expected_content_sha256?: string; signal?: AbortSignal }): Promise<void> {
    return this.#journaled({ op: 'delete', memoryId }, () => this.inner.delete(storeId, memoryId, opts));
  }

  async #journaled<T>(request: { op: 'create' | 'update' | 'delete'; memoryId?: string; path?: string; newPath?: string; sha?: string }, call: () => Promise<T>): Promise<T> {
    const start = Date.now();
    let ok = false;
    try {
      const result = await call();
      ok = true;
      return result;
    } finally {
      this.log({ type: 'request', ...request, start, end: Date.now(), ok });
    }
  }
}

function summary(report: SyncReport): PassSummary | null {
  const store = report.stores[0];
  if (!store) return null;
  return {
    status: store.status,
    pushed: store.pushed,
    pulled: store.pulled,
    deletedLocal: store.deletedLocal,
    deletedRemote: store.deletedRemote,
    renamed: store.renamed.map(({ from, to, side }) => ({ from, to, side })),
    conflicts: store.conflicts,
    errors: store.errors.length,
    errorPaths: store.errors.flatMap((e) => (e.path === undefined ? [] : [e.path])),
  };
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as FleetWorkerArgs;
  const log = (entry: JournalEntry) => appendFileSync(args.journal, `${JSON.stringify(entry)}\n`);
  // Every HTTP request this worker sends, SDK retries included: the "requests per pass" figure.
  let requests = 0;
  const countingFetch: typeof fetch = (input, init) => {
    requests++;
    return fetch(input, init);
  };
  // The SDK's own retry policy (2 retries, honouring retry-after), as a host would run it.
  const sdk = new Anthropic({ apiKey: `fleet-${args.worker}`, baseURL: args.baseURL, fetch: countingFetch });
  const storeClient = new JournalingStoreClient(new AnthropicStoreClient({ client: sdk }), log);
  const mounter = new MemoryMounter({
    storeClient,
    fileSystem: new NodeFileSystem(),
    memoryRoot: args.memoryRoot,
    memory_sync_interval: args.syncInterval,
    deleteGracePeriod: 0,
    newFileSettle: 0,
    logger: silent,
  });
  mounter.on('pushed', (e) => log({ type: 'pushed', t: Date.now(), path: e.path, sha: e.sha }));
  mounter.on('pulled', (e) => log({ type: 'pulled', t: Date.now(), path: e.path, sha: e.sha }));
  mounter.on('conflict', (e) => log({ type: 'conflict', t: Date.now(), path: e.path, storeSha: e.storeSha, localSha: e.localSha }));
  mounter.on('deleted', (e) => log({ type: 'deleted', t: Date.now(), path: e.path, side: e.side }));

  const random = seededRandom(args.seed * 1_000 + args.worker);
  const root = join(args.memoryRoot, args.mountPath.slice('/mnt/memory/'.length));
  const at = (path: string) => join(root, path);
  const present = (path: string) => existsSync(at(path));
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;

  const start = Date.now();
  await mounter.materialize([{ type: 'memory_store', memory_store_id: args.storeId, mount_path: args.mountPath }]);
  log({ type: 'materialize', start, end: Date.now() });

  let passes = 0;
  const passLogged = (phase: PassPhase, report: SyncReport | null, before: number) => {
    log({ type: 'pass_start', n: passes, t: report ? Date.parse(report.startedAt) : Date.now(), phase, requests: before });
    log({ type: 'pass', n: passes, t: report ? Date.parse(report.finishedAt) : Date.now(), phase, requests: requests - before, report: report && summary(report) });
    passes++;
  };

  for (let step = 0; step < args.steps; step++) {
    const path = pick(args.paths);
    const roll = random();
    const t = Date.now();
    if (roll < 0.55) {
      // Unique content: a sha names one agent write of one worker.
      const content = `fleet seed=${args.seed} worker=${args.worker} step=${step}\n${random().toString(36).repeat(1 + Math.floor(random() * 20))}\n`;
      mkdirSync(dirname(at(path)), { recursive: true });
      writeFileSync(at(path), content);
      log({ type: 'write', t, passes, path, sha: sha256(content) });
    } else if (roll < 0.75 && present(path)) {
      const sha = sha256(readFileSync(at(path), 'utf8'));
      rmSync(at(path));
      log({ type: 'delete', t, passes, path, sha });
    } else if (roll < 0.9 && present(path)) {
      const free = args.paths.filter((p) => !present(p));
      if (free.length > 0) {
        const to = pick(free);
        const sha = sha256(readFileSync(at(path), 'utf8'));
        mkdirSync(dirname(at(to)), { recursive: true });
        renameSync(at(path), at(to));
        log({ type: 'rename', t, passes, path, to, sha });
      }
    }
    // Not forced: a pass runs when memory_sync_interval has gone by, as in a tool loop.
    const before = requests;
    const report = await mounter.reconcile();
    if (report) passLogged('reconcile', report, before);
    await sleep(Math.floor(random() * args.stepPauseMs));
  }

  const before = requests;
  const finalized = await mounter.finalize({ outcome: 'completed' });
  // Finalize's two passes share one request count: the first carries it, the flush 0.
  passLogged('final_sync', finalized.sync, before);
  passLogged('flush', finalized.flush, requests);
  log({ type: 'finalized', t: Date.now(), unpushed: finalized.unpushed.map(({ path, code }) => ({ path, code })), requests });
  process.stdout.write('done\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`fleet worker failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(2);
});
