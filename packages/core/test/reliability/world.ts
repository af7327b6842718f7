import { posix } from 'node:path';
import { MemoryMounter } from '@memory-mounter/core';
import type { DeletionMode, FileSystem, FinalizeReport, Logger, StoreClient, SyncReport } from '@memory-mounter/core';
import { InMemoryStoreClient, type StoreOp } from '@memory-mounter/testing';
import { Agent } from './agent.js';
import { ConfinedFileSystem } from './confined-file-system.js';
import { FaultLedger } from './fault-ledger.js';
import { coverage } from './coverage.js';
import type { KnownBug } from './known-bugs.js';
import { memfsHostDisk, nodeHostDisk, sha256, type DiskKind, type HostDisk, type Tree } from './host-disk.js';
import { ObservedStoreClient, type OutgoingRequest, type RequestObserver } from './observed-store-client.js';
import { Oracle, type StoreKey, type StoreSpec } from './oracle.js';
import { describeTreeDiff, memoryFiles, sameTree, storeShas } from './tree.js';

/**
 * One case of the model-based tests: a host (real temp dir or memfs) with a canary folder beside
 * memoryRoot, a fake store service with a second writer and injected faults, a mounter with an
 * injected clock, the agent, and the oracle watching all of it. Every step runs through `step`,
 * which checks the invariants after it and throws with the steps so far when one broke.
 */

/** Paths the agent and the other writer act on. No file path is a folder of another. */
export const FILE_PATHS = ['/a.md', '/b.md', '/d/c.md', '/d/e/f.md', '/g/h.md'] as const;
export const DIR_PATHS = ['/d', '/d/e', '/g', '/bulk'] as const;
/** A folder of twelve memories, so that one `rm -rf` exceeds the per-pass delete cap. */
export const BULK_PATHS = Array.from({ length: 12 }, (_, i) => `/bulk/n${String(i).padStart(2, '0')}.md`);

/** Remote paths the engine must skip (see corpus.test.ts for the full list). */
export const HOSTILE_REMOTE_PATHS = ['/.anthropic-memory-store', '/.mm-tmp-0123456789abcdef', '/d\\c.md', '/../escape.md'] as const;

export const CANARY_TEXT = 'CANARY-host-secret-5b1e';

export interface Scenario {
  disk: DiskKind;
  deletionMode: DeletionMode;
  graceSeconds: number;
  syncIntervalSeconds: number;
  finalSyncTimeoutSeconds: number;
  seedRw: readonly string[];
  seedRo: readonly string[];
  bulk: boolean;
  /** Known engine bugs the oracle counts instead of failing on (random runs; see known-bugs.ts). */
  tolerate?: readonly KnownBug[];
}

/** The agent acts on the path of the `nth` request of `op` to `store` while it is in flight. */
export interface Interleaving {
  store: StoreKey;
  op: StoreOp;
  nth: number;
  act: 'write' | 'delete';
  /** The path acted on during a listing (a listing has no path of its own). */
  listPath: string;
}

/**
 * Ways to plant a defect between the engine and the world, used only by the tests that show the
 * oracle catches one (oracle.test.ts).
 */
export interface Sabotage {
  client?: (client: StoreClient) => StoreClient;
  fileSystem?: (fs: FileSystem) => FileSystem;
}

const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export class Case implements RequestObserver {
  readonly steps: string[] = [];
  readonly clock = { now: 1_700_000_000_000 };
  readonly fake: InMemoryStoreClient;
  readonly faults: FaultLedger;
  readonly oracle: Oracle;
  readonly agent: Agent;
  readonly specs: StoreSpec[];
  readonly memoryRoot: string;
  /** The last report of a reconcile that ran. */
  lastReport: SyncReport | undefined;
  #mounter: MemoryMounter | undefined;
  #outsideTree: Tree;
  #interleaving: (Interleaving & { seen: number }) | undefined;
  #tokens = 0;

  private constructor(
    readonly scenario: Scenario,
    readonly disk: HostDisk,
  ) {
    this.memoryRoot = `${disk.base}/mnt-memory`;
    const outside = `${disk.base}/outside`;
    disk.mkdir(this.memoryRoot);
    disk.mkdir(`${outside}/dir/e`);
    disk.writeFile(`${outside}/canary.txt`, `${CANARY_TEXT}\n`);
    for (const name of ['c.md', 'h.md', 'e/f.md']) disk.writeFile(`${outside}/dir/${name}`, `${CANARY_TEXT} ${name}\n`);
    this.#outsideTree = disk.tree(outside);

    this.specs = [
      { key: 'rw', id: 'memstore_rw', access: 'read_write', mountPath: '/mnt/memory/rw', root: `${this.memoryRoot}/rw` },
      { key: 'ro', id: 'memstore_ro', access: 'read_only', mountPath: '/mnt/memory/ro', root: `${this.memoryRoot}/ro` },
    ];
    this.fake = new InMemoryStoreClient({ now: () => this.clock.now });
    this.faults = new FaultLedger(this.fake);
    this.agent = new Agent(disk, { file: `${outside}/canary.txt`, dir: `${outside}/dir` });
    this.oracle = new Oracle(
      {
        now: () => this.clock.now,
        kindOf: (p) => disk.kindOf(p),
        readFile: (p) => disk.readFile(p),
        storeShas: (id) => storeShas(this.fake, id),
      },
      this.specs,
      {
        deletionMode: scenario.deletionMode,
        graceMs: scenario.graceSeconds * 1000,
        syncIntervalMs: scenario.syncIntervalSeconds * 1000,
        canaryText: CANARY_TEXT,
        tolerate: new Set(scenario.tolerate ?? []),
      },
    );
  }

  /** Builds the host, seeds both stores and materializes them. */
  static async open(scenario: Scenario, sabotage: Sabotage = {}): Promise<Case> {
    const disk = scenario.disk === 'node' ? await nodeHostDisk() : memfsHostDisk();
    const c = new Case(scenario, disk);
    coverage.cases++;
    const seedRw = [...scenario.seedRw, ...(scenario.bulk ? BULK_PATHS : [])];
    for (const path of seedRw) c.fake.putAs('memstore_rw', path, `seed ${path}\n`);
    for (const path of scenario.seedRo) c.fake.putAs('memstore_ro', path, `seed ro ${path}\n`);
    const fileSystem = new ConfinedFileSystem(disk.fs, c.memoryRoot, (p) => disk.kindOf(p), (v) => c.oracle.violate(`I3: ${v}`));
    const storeClient = new ObservedStoreClient(c.fake, c);
    c.#mounter = new MemoryMounter({
      storeClient: sabotage.client?.(storeClient) ?? storeClient,
      fileSystem: sabotage.fileSystem?.(fileSystem) ?? fileSystem,
      memoryRoot: c.memoryRoot,
      now: () => c.clock.now,
      logger: silentLogger,
      memory_sync_interval: scenario.syncIntervalSeconds,
      memory_sync_deletions: scenario.deletionMode,
      deleteGracePeriod: scenario.graceSeconds,
      finalSyncTimeout: scenario.finalSyncTimeoutSeconds,
      // The model's agent writes between steps, not during them: nothing is ever mid-write.
      newFileSettle: 0,
    });
    await c.step('materialize', async () => {
      await c.mounter.materialize(
        c.specs.map((s) => ({ type: 'memory_store', memory_store_id: s.id, name: s.key, mount_path: s.mountPath, access: s.access })),
      );
      const trees = c.trees();
      for (const spec of c.specs) {
        const local = memoryFiles(trees.get(spec.key)!);
        const remote = storeShas(c.fake, spec.id);
        if (local.size !== remote.size || [...remote].some(([p, sha]) => local.get(p) !== sha)) {
          c.oracle.violate(`materialize: ${spec.root} does not hold the store ${spec.id}`);
        }
      }
      c.oracle.afterMaterialize(trees);
    });
    return c;
  }

  get mounter(): MemoryMounter {
    return this.#mounter!;
  }

  spec(key: StoreKey): StoreSpec {
    return this.specs.find((s) => s.key === key)!;
  }

  /** A fresh, recognisable content token. */
  token(who: 'agent' | 'remote'): string {
    return `${who}-${++this.#tokens}`;
  }

  trees(): Map<StoreKey, Tree> {
    return new Map(this.specs.map((s) => [s.key, this.disk.tree(s.root)]));
  }

  // --- Steps -----------------------------------------------------------------------------------

  /** Runs one step, then checks every invariant; throws with the story so far when one broke. */
  async step(label: string, body: () => Promise<void> | void): Promise<void> {
    this.steps.push(label);
    coverage.steps++;
    try {
      await body();
    } catch (err) {
      this.oracle.violate(`${label} threw: ${err instanceof Error ? err.stack : String(err)}`);
    }
    this.checkOutside();
    this.oracle.afterStep(this.trees());
    if (this.oracle.violations.length > 0) {
      throw new Error(
        `${this.oracle.violations.join('\n')}\n\nscenario: ${JSON.stringify(this.scenario)}\nsteps:\n  ${this.steps.join('\n  ')}`,
      );
    }
  }

  /** An agent action on one store's folder, with what it changed handed to the oracle. */
  agentStep(label: string, key: StoreKey, action: (root: string, agent: Agent) => boolean): Promise<void> {
    return this.step(label, () => {
      const root = this.spec(key).root;
      const before = this.disk.tree(root);
      if (action(root, this.agent)) this.oracle.noteAgentChange(key, before, this.disk.tree(root));
    });
  }

  reconcile(force: boolean, interleaving?: Interleaving): Promise<void> {
    const label = `reconcile(${force ? 'force' : ''})${interleaving ? ` with the agent acting ${describeInterleaving(interleaving)}` : ''}`;
    return this.step(label, async () => {
      this.oracle.beginPass('reconcile', this.trees());
      this.#interleaving = interleaving && { ...interleaving, seen: 0 };
      let report: SyncReport | null;
      try {
        report = await this.mounter.reconcile({ force });
      } finally {
        this.#interleaving = undefined;
      }
      this.lastReport = report ?? this.lastReport;
      if (report) countPass(report);
      this.oracle.endReconcile(report, force, this.trees());
    });
  }

  finalize(outcome: 'completed' | 'aborted'): Promise<void> {
    return this.step(`finalize(${outcome})`, async () => {
      const before = this.trees();
      this.oracle.beginPass(outcome === 'completed' ? 'finalize_completed' : 'finalize_aborted', before);
      const report: FinalizeReport = await this.mounter.finalize({ outcome });
      if (report.sync) countPass(report.sync);
      countPass(report.flush);
      coverage.finalizes++;
      if (report.timedOut.sync || report.timedOut.flush) coverage.finalizeBoundsHit++;
      this.oracle.endFinalize(report, this.trees());
      // Nothing of ours may be left under memoryRoot but the folders reported left in place.
      const left = new Set(report.leftInPlace.map((l) => posix.basename(l.path)));
      for (const name of this.disk.names(this.memoryRoot)) {
        if (!left.has(name)) this.oracle.violate(`finalize left ${this.memoryRoot}/${name} behind unreported`);
      }
    });
  }

  /** Faults off, latency 0, two forced passes: then store and folder must agree (I7). */
  async quiesce(): Promise<void> {
    await this.step('quiesce: faults drained, latency 0', async () => {
      this.fake.latencyMs = 0;
      await this.faults.drain();
    });
    await this.reconcile(true);
    await this.reconcile(true);
    await this.step('quiescence check', () => {
      if (this.lastReport) this.oracle.checkConverged(this.lastReport, this.trees());
    });
    await this.finalize('completed');
  }

  async close(): Promise<void> {
    await this.disk.dispose();
  }

  // --- RequestObserver -------------------------------------------------------------------------

  beforeRequest(request: OutgoingRequest): void {
    this.oracle.checkRequest(request);
    if (request.op === 'delete' && this.specs.some((s) => s.id === request.storeId)) coverage.remoteDeletesSent++;
    const plan = this.#interleaving;
    if (!plan || request.op !== plan.op || request.storeId !== this.spec(plan.store).id) return;
    if (++plan.seen !== plan.nth) return;
    const path = request.op === 'list' ? plan.listPath : request.path;
    if (path === undefined) return;
    const root = this.spec(plan.store).root;
    const before = entryTree(this.disk, root, path);
    const done = plan.act === 'write' ? this.agent.write(root, path, 'text', this.token('agent')) : this.agent.delete(root, path);
    if (!done) return;
    coverage.agentActionsDuringPasses++;
    this.oracle.noteAgentChange(plan.store, before, entryTree(this.disk, root, path), path);
  }

  afterFailure(_request: OutgoingRequest, error: unknown): void {
    if (this.faults.noteFailure(error)) coverage.faultsFired++;
  }

  // --- I3: nothing outside the mounts ----------------------------------------------------------

  private checkOutside(): void {
    const outside = `${this.disk.base}/outside`;
    const now = this.disk.tree(outside);
    if (!sameTree(this.#outsideTree, now)) this.oracle.violate(`I3: the canary folder changed: ${describeTreeDiff(this.#outsideTree, now)}`);
    for (const name of this.disk.names(this.disk.base)) {
      if (name !== 'mnt-memory' && name !== 'outside') this.oracle.violate(`I3: ${this.disk.base}/${name} appeared outside memoryRoot`);
    }
  }
}

function countPass(report: SyncReport): void {
  coverage.passes++;
  for (const store of report.stores) {
    coverage.mostDeletesInOnePass = Math.max(coverage.mostDeletesInOnePass, store.deletedRemote.length);
    coverage.conflictsReported += store.conflicts.length;
    if (store.status === 'redownloaded') coverage.redownloads++;
    if (store.status === 'skipped' && (store.reason ?? '').startsWith('folder not trusted')) coverage.distrustedFolders++;
  }
}

/** The one entry at `path`, as a tree (for an agent action during a pass). */
function entryTree(disk: HostDisk, root: string, path: string): Tree {
  const host = posix.join(root, path);
  const kind = disk.kindOf(host);
  const tree: Tree = new Map();
  if (kind === 'file') tree.set(path, { kind, sha: sha256(disk.readFile(host)!) });
  else if (kind) tree.set(path, { kind });
  return tree;
}

function describeInterleaving(i: Interleaving): string {
  return `(${i.act} ${i.op === 'list' ? i.listPath : 'its path'}) at ${i.op} #${i.nth} to ${i.store}`;
}
