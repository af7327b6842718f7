import { posix } from 'node:path';
import { MemoryMounter } from '@memory-mounter/core';
import type { DeletionMode, FileSystem, FinalizeReport, Logger, RecoveryReport, StoreClient, SyncReport } from '@memory-mounter/core';
import { InMemoryStoreClient, type StoreOp } from '@memory-mounter/testing';
import { Agent } from './agent.js';
import { ConfinedFileSystem } from './confined-file-system.js';
import { DiskFaults } from './disk-faults.js';
import { FaultLedger, LOST_ANSWER_MESSAGE, type Interception } from './fault-ledger.js';
import { FeedFaultQueue, ServerClock, type FeedFault, type FolderFault, type ServerClockMode } from './feed-faults.js';
import { KillSwitch } from './kill-switch.js';
import { coverage } from './coverage.js';
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
  /**
   * The engine's `requestTimeout` and `syncTimeout` (seconds). Small in the random cases, so a
   * stalled call or an outage costs a fraction of a second of real time; the engine's defaults
   * (30 and 60) when absent.
   */
  requestTimeoutSeconds?: number;
  syncTimeoutSeconds?: number;
  seedRw: readonly string[];
  seedRo: readonly string[];
  bulk: boolean;
  /** The mounter's `conflictCopies`: the loser of each conflict is written beside the file. */
  conflictCopies?: boolean;
  /**
   * The store's change feed and folder listings (issue 9): absent, the client has neither and
   * every pass lists in full (the engine's path before the feed).
   */
  feed?: FeedScenario;
}

export interface FeedScenario {
  /** The client offers `listVersions`. */
  versions: boolean;
  /** The client offers `listFolder` (the download fans out by folder). */
  folders: boolean;
  /** The service's clock: ms, or whole seconds (versions tie in bulk). */
  clock: ServerClockMode;
  /** The mounter's `fullListingEvery` and `fullListingInterval` (seconds). */
  fullListingEvery: number;
  fullListingInterval: number;
}

/**
 * The worker is killed (SIGKILL) at the `nth` request of `op` to any store during a forced pass:
 * the request reaches the store (`applied`) or not, and its answer never comes back.
 */
export interface CrashPoint {
  op: StoreOp;
  nth: number;
  applied: boolean;
}

/** The agent acts on the path of the `nth` request of `op` to `store` while it is in flight. */
export interface Interleaving {
  store: StoreKey;
  op: StoreOp;
  nth: number;
  act: 'write' | 'delete';
  /** The path acted on during a listing (a listing has no path of its own). */
  listPath: string;
  /**
   * Who acts: the agent (default), or the other writer writing `listPath` in the store — for a
   * feed read, right after the store answered it, so its version is committed during the read
   * but not in it.
   */
  who?: 'agent' | 'remote';
}

/**
 * Ways to plant a defect between the engine and the world, used only by the tests that show the
 * oracle catches one (oracle.test.ts).
 */
export interface Sabotage {
  client?: (client: StoreClient) => StoreClient;
  fileSystem?: (fs: FileSystem) => FileSystem;
}

/**
 * The engine's time bounds are real timers, so the oracle checks them on the wall clock.
 * Reconcile: `syncTimeout` plus the wind-down the engine documents (about 1 s: a cut-off pass's
 * calls get that long to settle before they are left), plus 0.5 s for a loaded 2-core host.
 * Finalize: `finalSyncTimeout` plus 2 s, SPEC 6.2's bound as it stands, no extra slack.
 */
export const RECONCILE_SLACK_MS = 1_500;
export const FINALIZE_SLACK_MS = 2_000;
const DEFAULT_SYNC_TIMEOUT_S = 60;
/** The bound of the operator's second `recover`, once the faults are over; doubled at each further try. */
const RECOVER_RETRY_BOUND_S = 2;
/** The `syncTimeout` of a worker whose downloads were cut off twice by the scenario's bound (a loaded host). */
const LOADED_HOST_SYNC_TIMEOUT_S = 10;

/** The message of the warning finalize logs for each store with unpushed changes (mounter.ts). */
const UNPUSHED_WARNING = /^finalize: local changes not pushed/;

/** The info line the engine logs when the feed refuses a session (remote-view.ts). */
const FEED_REFUSED_INFO = /^change feed not available to this session/;

/** A logger that drops everything but finalize's unpushed warnings and the feed's refusals, which the oracle checks. */
/** `MM_TRACE=1`: every line the engine logs in a case is printed, to read a counterexample by. */
function trace(level: keyof Logger, msg: string, fields: Record<string, unknown> | undefined): void {
  if (process.env.MM_TRACE) console.log(level, msg, JSON.stringify(fields ?? {}));
}

class CapturingLogger implements Logger {
  readonly unpushedWarnings: Record<string, unknown>[] = [];
  onFeedRefused: (storeId: string) => void = () => undefined;
  debug(msg: string, fields?: Record<string, unknown>) {
    trace('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>) {
    trace('info', msg, fields);
    if (FEED_REFUSED_INFO.test(msg)) this.onFeedRefused(String(fields?.memory_store_id));
  }
  error(msg: string, fields?: Record<string, unknown>) {
    trace('error', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>) {
    trace('warn', msg, fields);
    if (UNPUSHED_WARNING.test(msg)) this.unpushedWarnings.push(fields ?? {});
  }
}

export class Case implements RequestObserver {
  readonly steps: string[] = [];
  readonly clock = { now: 1_700_000_000_000 };
  readonly fake: InMemoryStoreClient;
  readonly faults: FaultLedger;
  readonly feedFaults = new FeedFaultQueue();
  readonly diskFaults = new DiskFaults();
  /** Full listings to come that skip an entry while the other writer writes `path` (one store each). */
  #listingSkips: { store: StoreKey; index: number; path: string }[] = [];
  /** A worker's materialize is under way. */
  #downloading = false;
  /** The service's clock, which stamps the memory versions. */
  readonly serverClock: ServerClock;
  readonly oracle: Oracle;
  readonly agent: Agent;
  readonly specs: StoreSpec[];
  readonly memoryRoot: string;
  /** The mounters' crash-recovery records (`stateDir`), beside memoryRoot and the canary folder. */
  readonly stateDir: string;
  /** The last report of a reconcile that ran. */
  lastReport: SyncReport | undefined;
  readonly logger = new CapturingLogger();
  #mounter: MemoryMounter | undefined;
  /** The SIGKILL of the current worker: what its mounter was given goes through it. */
  #killSwitch: KillSwitch | undefined;
  /** The switches of workers killed since the last look: their calls under way land before the next step looks. */
  #killed: KillSwitch[] = [];
  #crashAt: (CrashPoint & { seen: number; fired: () => void }) | undefined;
  /** The request the kill came at, when it must not reach the store. */
  #stallThis: OutgoingRequest | undefined;
  #sabotage: Sabotage = {};
  #outsideTree: Tree;
  #interleaving: (Interleaving & { seen: number }) | undefined;
  /** The other writer's act to run once the store has answered the feed read it is timed with. */
  #afterAnswer: { request: OutgoingRequest; act: () => void } | undefined;
  /** Stores whose feed refused the current session (its info line logged): never read again in it. */
  #feedRefused = new Set<string>();
  /** store id -> the ops of the current reconcile's requests to it. */
  #passOps = new Map<string, Set<StoreOp>>();
  #usedFeed = false;
  /** store id -> reconcile passes of this session that read the feed alone since its last listing, and when it last listed (model clock). */
  #cadence = new Map<string, { feedPasses: number; listedAt: number }>();
  #tokens = 0;

  private constructor(
    readonly scenario: Scenario,
    readonly disk: HostDisk,
  ) {
    this.memoryRoot = `${disk.base}/mnt-memory`;
    this.stateDir = `${disk.base}/state`;
    const outside = `${disk.base}/outside`;
    disk.mkdir(this.memoryRoot);
    disk.mkdir(this.stateDir);
    disk.mkdir(`${outside}/dir/e`);
    disk.writeFile(`${outside}/canary.txt`, `${CANARY_TEXT}\n`);
    for (const name of ['c.md', 'h.md', 'e/f.md']) disk.writeFile(`${outside}/dir/${name}`, `${CANARY_TEXT} ${name}\n`);
    this.#outsideTree = disk.tree(outside);

    this.specs = [
      { key: 'rw', id: 'memstore_rw', access: 'read_write', mountPath: '/mnt/memory/rw', root: `${this.memoryRoot}/rw` },
      { key: 'ro', id: 'memstore_ro', access: 'read_only', mountPath: '/mnt/memory/ro', root: `${this.memoryRoot}/ro` },
    ];
    this.serverClock = new ServerClock(() => this.clock.now, scenario.feed?.clock ?? 'exact');
    this.fake = new InMemoryStoreClient({ now: () => this.serverClock.now() });
    this.logger.onFeedRefused = (storeId) => {
      if (this.#feedRefused.has(storeId)) this.oracle.violate(`F1: the feed's refusal of ${storeId} was logged twice in one session`);
      this.#feedRefused.add(storeId);
      coverage.feedRefusals++;
    };
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
        conflictCopies: scenario.conflictCopies ?? false,
      },
    );
  }

  /** Builds the host, seeds both stores and materializes them. */
  static async open(scenario: Scenario, sabotage: Sabotage = {}): Promise<Case> {
    if (scenario.disk === 'node') coverage.casesOnRealDisk++;
    const disk = scenario.disk === 'node' ? await nodeHostDisk() : memfsHostDisk();
    const c = new Case(scenario, disk);
    coverage.cases++;
    const seedRw = [...scenario.seedRw, ...(scenario.bulk ? BULK_PATHS : [])];
    for (const path of seedRw) c.fake.writeMemory('memstore_rw', path, `seed ${path}\n`);
    for (const path of scenario.seedRo) c.fake.writeMemory('memstore_ro', path, `seed ro ${path}\n`);
    c.#sabotage = sabotage;
    await c.step('materialize', () => c.startWorker());
    return c;
  }

  /** The store client a worker (or `recover`) is given: the fake, every request observed. */
  private observedClient(): StoreClient {
    const feed = this.scenario.feed;
    const client = new ObservedStoreClient(this.fake, this, { feed: feed?.versions ?? false, folders: feed?.folders ?? false });
    return this.#sabotage.client?.(client) ?? client;
  }

  /** The FileSystem a worker (or `recover`) is given: the host's, confined to memoryRoot and stateDir. */
  private confinedFileSystem(): FileSystem {
    const disk = this.disk;
    const confined = new ConfinedFileSystem(disk.fs, this.memoryRoot, (p) => disk.kindOf(p), (v) => this.oracle.violate(`I3: ${v}`), this.stateDir);
    const fs = this.diskFaults.wrap(confined);
    return this.#sabotage.fileSystem?.(fs) ?? fs;
  }

  /**
   * A worker starts: a fresh mounter (with its own kill switch) materializes both stores. A
   * download its time bound cut off (a loaded host: the bounds are small) is a legal outcome:
   * all or nothing, so it must leave no folder and no record behind; then the next worker tries
   * again, and after two such attempts it is given a bound a loaded host can meet.
   */
  private async startWorker(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const syncTimeout = attempt <= 2 ? this.scenario.syncTimeoutSeconds : Math.max(this.scenario.syncTimeoutSeconds ?? 0, LOADED_HOST_SYNC_TIMEOUT_S);
      try {
        await this.materializeWorker(syncTimeout);
        break;
      } catch (err) {
        if (!cutOffByItsBound(err) || this.faults.pending > 0 || attempt >= 4) throw err;
        coverage.materializeBoundsHit++;
        this.#mounter = undefined;
        const left = this.disk.names(this.memoryRoot);
        if (left.length > 0) this.oracle.violate(`materialize: a download cut off by its time bound left ${left.join(', ')} behind (all or nothing)`);
        if (this.stateRecords().size > 0) this.oracle.violate(`materialize: a download cut off by its time bound left state records behind`);
      }
    }
  }

  private async materializeWorker(syncTimeoutSeconds: number | undefined): Promise<void> {
    const scenario = this.scenario;
    const kill = new KillSwitch();
    this.#killSwitch = kill;
    this.#feedRefused.clear();
    // The download lists every store in full.
    this.#cadence = new Map(this.specs.map((s) => [s.id, { feedPasses: 0, listedAt: this.clock.now }]));
    this.#mounter = new MemoryMounter({
      storeClient: kill.storeClient(this.observedClient()),
      fileSystem: kill.fileSystem(this.confinedFileSystem()),
      memoryRoot: this.memoryRoot,
      stateDir: this.stateDir,
      now: () => this.clock.now,
      logger: this.logger,
      memory_sync_interval: scenario.syncIntervalSeconds,
      memory_sync_deletions: scenario.deletionMode,
      deleteGracePeriod: scenario.graceSeconds,
      finalSyncTimeout: scenario.finalSyncTimeoutSeconds,
      requestTimeout: scenario.requestTimeoutSeconds,
      syncTimeout: syncTimeoutSeconds,
      conflictCopies: scenario.conflictCopies ?? false,
      // The model's agent writes between steps, not during them: nothing is ever mid-write.
      newFileSettle: 0,
      ...(scenario.feed && { fullListingEvery: scenario.feed.fullListingEvery, fullListingInterval: scenario.feed.fullListingInterval }),
    });
    const boundMs = (syncTimeoutSeconds ?? DEFAULT_SYNC_TIMEOUT_S) * 1000 + RECONCILE_SLACK_MS;
    this.#downloading = true;
    try {
      await this.timed('materialize', boundMs, () =>
        this.mounter.materialize(
          this.specs.map((s) => ({ type: 'memory_store', memory_store_id: s.id, name: s.key, mount_path: s.mountPath, access: s.access })),
        ),
      );
    } finally {
      this.#downloading = false;
    }
    const trees = this.trees();
    for (const spec of this.specs) {
      const local = memoryFiles(trees.get(spec.key)!);
      // A restart may find what the other writer put at a path no mount may hold: skipped.
      const remote = storeShas(this.fake, spec.id);
      for (const path of HOSTILE_REMOTE_PATHS) remote.delete(path);
      if (local.size !== remote.size || [...remote].some(([p, sha]) => local.get(p) !== sha)) {
        this.oracle.violate(`materialize: ${spec.root} does not hold the store ${spec.id}`);
      }
    }
    this.oracle.afterMaterialize(trees);
  }

  get mounter(): MemoryMounter {
    if (!this.#mounter) throw new Error('no worker is running (it crashed and was not recovered)');
    return this.#mounter;
  }

  /** How long one reconcile may take on the wall clock (see RECONCILE_SLACK_MS). */
  get syncBoundMs(): number {
    return (this.scenario.syncTimeoutSeconds ?? DEFAULT_SYNC_TIMEOUT_S) * 1000 + RECONCILE_SLACK_MS;
  }

  /** How long one finalize may take on the wall clock: finalSyncTimeout + 2 s (SPEC 6.2). */
  get finalizeBoundMs(): number {
    return this.scenario.finalSyncTimeoutSeconds * 1000 + FINALIZE_SLACK_MS;
  }

  /** Runs one engine call, and holds it to its time bound on the wall clock (T1). */
  async timed<T>(what: 'materialize' | 'reconcile' | 'finalize' | 'recover', boundMs: number, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await call();
    } finally {
      const ms = performance.now() - started;
      const key = what === 'finalize' || what === 'recover' ? 'slowestFinalizeMs' : 'slowestReconcileMs';
      if (what !== 'materialize') coverage[key] = Math.max(coverage[key], Math.round(ms));
      coverage.engineWallMs += Math.round(ms);
      if (ms > boundMs) this.oracle.violate(`T1: ${what} took ${Math.round(ms)} ms; its bound is ${boundMs} ms`);
    }
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

  /** The other writer's action on one store, with what it changed handed to the oracle. */
  remoteStep(label: string, key: StoreKey, action: (storeId: string) => void): Promise<void> {
    return this.step(label, () => this.remoteAct(key, action));
  }

  reconcile(force: boolean, interleaving?: Interleaving): Promise<void> {
    const label = `reconcile(${force ? 'force' : ''})${interleaving ? ` with the agent acting ${describeInterleaving(interleaving)}` : ''}`;
    return this.step(label, async () => {
      this.oracle.beginPass('reconcile', this.trees());
      this.#interleaving = interleaving && { ...interleaving, seen: 0 };
      this.#passOps.clear();
      let report: SyncReport | null;
      try {
        report = await this.timed('reconcile', this.syncBoundMs, () => this.mounter.reconcile({ force }));
      } finally {
        this.#interleaving = undefined;
        this.#afterAnswer = undefined;
      }
      for (const ops of this.#passOps.values()) {
        if (ops.has('listVersions')) coverage[ops.has('list') ? 'passesFeedThenListing' : 'passesByFeedAlone']++;
      }
      if (report) this.checkCadence(report);
      this.lastReport = report ?? this.lastReport;
      if (report) countPass(report);
      this.oracle.endReconcile(report, force, this.trees());
    });
  }

  finalize(outcome: 'completed' | 'aborted'): Promise<void> {
    return this.step(`finalize(${outcome})`, async () => {
      const before = this.trees();
      this.oracle.beginPass(outcome === 'completed' ? 'finalize_completed' : 'finalize_aborted', before);
      const warningsBefore = this.logger.unpushedWarnings.length;
      this.#passOps.clear();
      const report: FinalizeReport = await this.timed('finalize', this.finalizeBoundMs, () => this.mounter.finalize({ outcome }));
      // F3: the final sync always lists the store in full, whatever the feed could say.
      for (const s of report.sync?.stores ?? []) {
        if (s.status === 'synced' && !this.#passOps.get(s.memoryStoreId)?.has('list')) {
          this.oracle.violate(`F3: finalize's final sync over ${s.memoryStoreId} did not list the store in full`);
        }
      }
      if (report.sync) countPass(report.sync);
      countPass(report.flush);
      coverage.finalizes++;
      if (report.timedOut.sync || report.timedOut.flush) coverage.finalizeBoundsHit++;
      if (report.unpushed.length > 0) coverage.finalizesWithUnpushed++;
      this.oracle.endFinalize(report, this.trees(), this.logger.unpushedWarnings.slice(warningsBefore));
      // Nothing of ours may be left under memoryRoot but the folders reported left in place.
      const left = new Set(report.leftInPlace.map((l) => posix.basename(l.path)));
      for (const name of this.disk.names(this.memoryRoot)) {
        if (!left.has(name)) this.oracle.violate(`finalize left ${this.memoryRoot}/${name} behind unreported`);
      }
      // A state record goes with its folder, and stays with a folder left in place (for recover).
      const records = this.stateRecords();
      for (const l of report.leftInPlace) {
        if (!records.has(l.path)) this.oracle.violate(`R1: finalize left ${l.path} in place without its state record`);
      }
      for (const path of records.keys()) {
        if (!report.leftInPlace.some((l) => l.path === path)) this.oracle.violate(`R1: finalize removed ${path} but left its state record ${records.get(path)}`);
      }
    });
  }

  /**
   * Faults off, latency 0, two forced passes: then store and folder must agree (I7). The time
   * bounds are small in the random cases, so a pass on a loaded host may still be cut off with no
   * fault at all: up to three more passes are run while the last one was.
   */
  async quiesce(): Promise<void> {
    if (this.oracle.crashed) await this.recover();
    await this.step('quiesce: faults drained, latency 0', async () => {
      this.fake.latencyMs = 0;
      await this.drainFaults();
    });
    await this.reconcile(true);
    await this.reconcile(true);
    for (let extra = 0; extra < 3 && this.lastReport && cutOffByTimeBound(this.lastReport); extra++) {
      coverage.quiescentPassesCutOff++;
      await this.reconcile(true);
    }
    await this.step('quiescence check', () => {
      // A pass its time bound still cut short (a loaded host) is a legal outcome: its other
      // invariants were checked as it ended; convergence cannot be asked of it.
      if (this.lastReport && cutOffByTimeBound(this.lastReport)) coverage.convergenceChecksCutOff++;
      else if (this.lastReport) this.oracle.checkConverged(this.lastReport, this.trees());
    });
    await this.finalize('completed');
  }

  // --- Crash and recovery ------------------------------------------------------------------------

  /** SIGKILL of the worker between two steps: its mounter is abandoned, without finalize. */
  crash(label: string): Promise<void> {
    return this.step(label, async () => {
      this.kill();
      await this.deadCallsLanded();
    });
  }

  /** What the killed workers' calls under way (past the switch at the kill) did is done: a real kill leaves nothing landing later. */
  private async deadCallsLanded(): Promise<void> {
    const killed = this.#killed;
    this.#killed = [];
    await Promise.all(killed.map((k) => k.landed()));
  }

  /**
   * SIGKILL during a forced pass, at the `nth` request of `op`. If the pass never sends that
   * request, the kill comes right after it.
   */
  crashDuringPass(label: string, at: CrashPoint): Promise<void> {
    return this.step(label, async () => {
      this.oracle.beginPass('reconcile', this.trees());
      let fired!: () => void;
      const killed = new Promise<null>((resolve) => {
        fired = () => resolve(null);
      });
      this.#crashAt = { ...at, seen: 0, fired };
      const pass = this.mounter.reconcile({ force: true });
      pass.catch(() => undefined);
      let report: SyncReport | null;
      try {
        report = await this.timed('reconcile', this.syncBoundMs, () => Promise.race([pass, killed]));
      } finally {
        this.#crashAt = undefined;
        this.#interleaving = undefined;
      }
      if (this.oracle.crashed) {
        await this.deadCallsLanded();
        coverage.conflictsCutByKill += this.oracle.crashedDuringPass(this.trees());
        return;
      }
      this.lastReport = report ?? this.lastReport;
      this.oracle.endReconcile(report, true, this.trees());
      this.kill();
      await this.deadCallsLanded();
    });
  }

  private kill(): void {
    this.#killSwitch?.kill();
    if (this.#killSwitch) this.#killed.push(this.#killSwitch);
    this.#mounter = undefined;
    this.oracle.crashed = true;
    coverage.crashes++;
  }

  /**
   * The next worker starts: `MemoryMounter.recover` with the dead one's stateDir, under the
   * faults still queued. A folder left because its changes could not be pushed gets a second
   * run once the faults are over (an operator's retry, or the next start-up). What is still left
   * then, the operator removes by hand, having read the report (the oracle checks every agent
   * write in it was named), and a last run clears its record. Then a fresh mounter materializes
   * both stores at the same paths: it must not be refused.
   */
  async recover(): Promise<void> {
    await this.step('recover', async () => {
      let report = await this.runRecover();
      if (report.stores.some((s) => s.outcome === 'left' && s.left?.code === 'unpushed')) {
        // The operator's retry: the faults are over, and the bound is at least 2 s (a scenario's
        // 20 ms cannot finish anything).
        coverage.recoverRetries++;
        this.fake.latencyMs = 0;
        await this.drainFaults();
        // A retry its bound cut off (a loaded host) is legal (its invariants are checked as it
        // ends): the operator tries again with twice the time.
        let boundS = Math.max(this.scenario.finalSyncTimeoutSeconds, RECOVER_RETRY_BOUND_S);
        report = await this.runRecover(boundS);
        for (let again = 0; again < 2 && report.timedOut; again++) {
          coverage.recoverRetriesCutOff++;
          boundS *= 2;
          report = await this.runRecover(boundS);
        }
      }
      const left = report.stores.filter((s) => s.outcome === 'left');
      for (const s of left) {
        coverage.foldersLeftByRecover++;
        if (s.left?.code === 'unpushed') coverage.foldersLeftUnpushedAfterRetry++;
        this.oracle.operatorRemoves(s, report.timedOut);
        this.disk.remove(s.path);
      }
      if (left.length > 0) {
        report = await this.runRecover();
        for (const s of report.stores) if (s.outcome !== 'gone') this.oracle.violate(`R2: recover after the operator removed ${s.path}: ${s.outcome}`);
      }
      if (this.stateRecords().size > 0) this.oracle.violate(`R2: state records left after recovery: ${[...this.stateRecords().values()].join(', ')}`);
    });
    await this.step('restart: a fresh worker materializes at the same paths', async () => {
      this.oracle.beforeRestart();
      try {
        await this.startWorker();
      } catch (err) {
        // A download the faults still queued made fail (all or nothing: it leaves no folder) is
        // not a refusal: the worker starts again once they are over. A path in the way is one.
        if ((err as { code?: unknown }).code !== 'download_failed') throw err;
        coverage.restartsRetried++;
        this.fake.latencyMs = 0;
        await this.drainFaults();
        await this.startWorker().catch((again: unknown) => {
          // startWorker already retried a download its time bound cut off.
          this.oracle.violate(`R2: the restart after recovery was refused: ${again instanceof Error ? again.message : String(again)}`);
        });
      }
    });
  }

  /**
   * F2: a full listing at least every `fullListingEvery` passes and every `fullListingInterval`
   * seconds (model clock). Counted leniently: a pass counts as reading the feed alone only when
   * it ran to the end (status synced) without sending any listing; any listing sent resets.
   */
  private checkCadence(report: SyncReport): void {
    const feed = this.scenario.feed;
    if (!feed) return;
    for (const s of report.stores) {
      const cadence = this.#cadence.get(s.memoryStoreId);
      const ops = this.#passOps.get(s.memoryStoreId);
      if (!cadence || !ops) continue;
      if (ops.has('list')) {
        cadence.feedPasses = 0;
        cadence.listedAt = this.clock.now;
        continue;
      }
      if (!ops.has('listVersions') || s.status !== 'synced') continue;
      cadence.feedPasses++;
      if (cadence.feedPasses >= feed.fullListingEvery) {
        this.oracle.violate(`F2: ${cadence.feedPasses} passes over ${s.memoryStoreId} read the feed alone; fullListingEvery is ${feed.fullListingEvery}`);
      }
      const sinceMs = this.clock.now - cadence.listedAt;
      if (sinceMs >= feed.fullListingInterval * 1000) {
        this.oracle.violate(`F2: a pass over ${s.memoryStoreId} read the feed alone ${sinceMs / 1000} s after its last full listing; fullListingInterval is ${feed.fullListingInterval} s`);
      }
    }
  }

  /** Every fault still queued is spent or called off: the store's, the feed's, the folder listings'. */
  private async drainFaults(): Promise<void> {
    this.feedFaults.drain();
    this.diskFaults.drain();
    this.#listingSkips = [];
    await this.faults.drain();
  }

  private async runRecover(finalSyncTimeout = this.scenario.finalSyncTimeoutSeconds): Promise<RecoveryReport> {
    coverage.recoveries++;
    // recover is a session of its own: the feed may be asked again.
    this.#feedRefused.clear();
    await this.deadCallsLanded();
    this.oracle.beginRecover(this.trees());
    const report = await this.timed('recover', finalSyncTimeout * 1000 + FINALIZE_SLACK_MS, () =>
      MemoryMounter.recover({
        storeClient: this.observedClient(),
        fileSystem: this.confinedFileSystem(),
        stateDir: this.stateDir,
        memoryRoot: this.memoryRoot,
        logger: this.logger,
        now: () => this.clock.now,
        finalSyncTimeout,
        ...(this.scenario.requestTimeoutSeconds !== undefined && { requestTimeout: this.scenario.requestTimeoutSeconds }),
      }),
    );
    for (const s of report.stores) {
      if (s.outcome === 'recovered') coverage.foldersRecovered++;
      coverage.recoverPushed += s.pushed.length;
      coverage.recoverConflicts += s.conflicts.length;
    }
    this.oracle.endRecover(report, this.trees());
    return report;
  }

  /** host path of the store folder -> record file name, for every state record in stateDir. */
  stateRecords(): Map<string, string> {
    const out = new Map<string, string>();
    for (const name of this.disk.names(this.stateDir)) {
      if (!/^mm-state-[0-9a-f]{32}\.json$/.test(name)) continue;
      const bytes = this.disk.readFile(`${this.stateDir}/${name}`);
      try {
        const hostPath = (JSON.parse(new TextDecoder().decode(bytes ?? new Uint8Array())) as { host_path?: unknown }).host_path;
        out.set(typeof hostPath === 'string' ? hostPath : `(no host_path in ${name})`, name);
      } catch {
        out.set(`(unreadable ${name})`, name);
      }
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.#usedFeed) coverage.casesUsingFeed++;
    if (this.scenario.conflictCopies) coverage.casesWithConflictCopies++;
    coverage.opensRefused += this.diskFaults.opensFailed;
    coverage.conflictCopiesRefused += this.diskFaults.copiesFailed;
    await this.disk.dispose();
  }

  // --- RequestObserver -------------------------------------------------------------------------

  beforeRequest(request: OutgoingRequest): void {
    this.oracle.checkRequest(request);
    if (request.op === 'listVersions') {
      coverage.feedReads++;
      this.#usedFeed = true;
      // 401/403/404 (and 400): full listings for the rest of the session (issue 9).
      if (this.#feedRefused.has(request.storeId)) this.oracle.violate(`F1: a feed read of ${request.storeId} after the feed refused this session`);
    }
    let ops = this.#passOps.get(request.storeId);
    if (!ops) this.#passOps.set(request.storeId, (ops = new Set()));
    ops.add(request.op);
    const crash = this.#crashAt;
    if (crash && request.op === crash.op && ++crash.seen === crash.nth) {
      this.#crashAt = undefined;
      if (!crash.applied) this.#stallThis = request;
      this.kill();
      crash.fired();
      return;
    }
    if (request.op === 'delete' && this.specs.some((s) => s.id === request.storeId)) coverage.remoteDeletesSent++;
    const plan = this.#interleaving;
    if (!plan || request.op !== plan.op || request.storeId !== this.spec(plan.store).id) return;
    if (++plan.seen !== plan.nth) return;
    const reading = request.op === 'list' || request.op === 'listVersions';
    const path = reading ? plan.listPath : request.path;
    if (path === undefined) return;
    if (plan.who === 'remote') {
      const act = () => {
        coverage.remoteActionsDuringReads++;
        this.remoteAct(plan.store, (id) => void this.fake.writeMemory(id, path, `${this.token('remote')}\n`));
      };
      // A feed read: once the store has answered, so the version is not in it. Anything else: now.
      if (request.op === 'listVersions') this.#afterAnswer = { request, act };
      else act();
      return;
    }
    const root = this.spec(plan.store).root;
    const before = entryTree(this.disk, root, path);
    const done = plan.act === 'write' ? this.agent.write(root, path, 'text', this.token('agent')) : this.agent.delete(root, path);
    if (!done) return;
    coverage.agentActionsDuringPasses++;
    this.oracle.noteAgentChange(plan.store, before, entryTree(this.disk, root, path), path);
  }

  afterFailure(request: OutgoingRequest, error: unknown): void {
    if (this.faults.noteFailure(error)) coverage.faultsFired++;
    if (error instanceof Error && error.message === LOST_ANSWER_MESSAGE) coverage.answersLostAfterApply++;
    // A spurious `not_found` for a memory that exists: the engine is told it is gone, so when it
    // meets it again it is the store's word, as if the other writer had put it back.
    const key = this.specs.find((s) => s.id === request.storeId)?.key;
    const spurious = error instanceof Error && /^injected not_found on /.test(error.message);
    if (key && spurious && request.path !== undefined && request.previousContent !== undefined) {
      this.oracle.noteRemoteChange(key, new Map(), new Map([[request.path, sha256(request.previousContent)]]));
      this.oracle.noteRemoteAbsence(key, request.path);
    }
  }

  listingSkip(request: OutgoingRequest): { index: number; act: () => void } | undefined {
    // A download is all the engine knows of the store: an entry it skips is a new memory to the
    // next pass. The fault is for the passes, where an absence reads as a deletion.
    if (this.#downloading) return undefined;
    const at = this.#listingSkips.findIndex((x) => this.spec(x.store).id === request.storeId);
    if (at < 0) return undefined;
    const [skip] = this.#listingSkips.splice(at, 1);
    coverage.listingsSkippingAnEntry++;
    return {
      index: skip!.index,
      act: () => this.remoteAct(skip!.store, (id) => void this.fake.writeMemory(id, skip!.path, `${this.token('remote')}\n`)),
    };
  }

  /** The next full listing of `store` skips one entry (`index`, modulo its size) while the other writer writes `path`. */
  skipInNextListing(store: StoreKey, index: number, path: string): void {
    this.#listingSkips.push({ store, index, path });
  }

  retriedAfterLostAnswer(_request: OutgoingRequest, refused: boolean): void {
    coverage.retriesAfterLostAnswer++;
    if (refused) coverage.strictRetriesRefused++;
  }

  answered(request: OutgoingRequest): void {
    const pending = this.#afterAnswer;
    if (pending?.request !== request) return;
    this.#afterAnswer = undefined;
    pending.act();
  }

  feedFault(_request: OutgoingRequest): FeedFault | undefined {
    const fault = this.feedFaults.nextFeed();
    if (fault) coverage.feedFaultsPlayed++;
    return fault;
  }

  folderFault(_request: OutgoingRequest): FolderFault | undefined {
    const fault = this.feedFaults.nextFolder();
    if (fault) coverage.folderFaultsPlayed++;
    return fault;
  }

  serverNow(): number {
    return this.serverClock.now();
  }

  /** memory id -> paths of its versions redacted since (the RedactVersion step records them). */
  readonly #redactedPaths = new Map<string, Set<string>>();

  redactedPaths(memoryId: string): readonly string[] {
    return [...(this.#redactedPaths.get(memoryId) ?? [])];
  }

  /** The other writer redacts a version; the model keeps the path the service forgets. */
  redactVersion(storeId: string, version: { id: string; memory_id: string; path: string | null }): void {
    if (version.path !== null) {
      const paths = this.#redactedPaths.get(version.memory_id) ?? new Set<string>();
      paths.add(version.path);
      this.#redactedPaths.set(version.memory_id, paths);
    }
    this.fake.redactVersion(storeId, version.id);
  }

  /** The other writer's act on one store, outside a step of its own (during a read): the oracle is told. */
  private remoteAct(key: StoreKey, action: (storeId: string) => void): void {
    const id = this.spec(key).id;
    const before = storeShas(this.fake, id);
    action(id);
    this.oracle.noteRemoteChange(key, before, storeShas(this.fake, id));
  }

  intercept(request: OutgoingRequest): Interception | undefined {
    if (this.#stallThis === request) {
      this.#stallThis = undefined;
      return { kind: 'stall', at: 'before' };
    }
    const fault = this.faults.intercept(request.op, this.clock.now);
    if (fault?.kind === 'stall') coverage.stalledCalls++;
    if (fault?.kind === 'outage') coverage.outageFailures++;
    return fault;
  }

  // --- I3: nothing outside the mounts ----------------------------------------------------------

  private checkOutside(): void {
    const outside = `${this.disk.base}/outside`;
    const now = this.disk.tree(outside);
    if (!sameTree(this.#outsideTree, now)) this.oracle.violate(`I3: the canary folder changed: ${describeTreeDiff(this.#outsideTree, now)}`);
    for (const name of this.disk.names(this.disk.base)) {
      if (name !== 'mnt-memory' && name !== 'outside' && name !== 'state') this.oracle.violate(`I3: ${this.disk.base}/${name} appeared outside memoryRoot`);
    }
  }
}

/** A download_failed of materialize that its time bound (or a request's, on a loaded host) caused. */
function cutOffByItsBound(err: unknown): boolean {
  if ((err as { code?: unknown }).code !== 'download_failed') return false;
  return /ran out|time bound|timed out/.test(err instanceof Error ? err.message : String(err));
}

/** Whether a time bound cut any store of this pass short. */
function cutOffByTimeBound(report: SyncReport): boolean {
  return report.stores.some(
    // A store call that timed out is an `unavailable` error: its message is all that tells it
    // from an outage, and this only counts coverage.
    (s) => s.cutOff.length > 0 || s.code === 'time_bound' || s.errors.some((e) => /timed out/.test(e.message)),
  );
}

function countPass(report: SyncReport): void {
  if (cutOffByTimeBound(report)) coverage.passesCutOff++;
  coverage.passes++;
  for (const store of report.stores) {
    coverage.mostDeletesInOnePass = Math.max(coverage.mostDeletesInOnePass, store.deletedRemote.length);
    coverage.conflictsReported += store.conflicts.length;
    for (const r of store.renamed) coverage[r.side === 'local' ? 'renamesFollowedOnDisk' : 'renamesSentToStore']++;
    if (store.status === 'redownloaded') coverage.redownloads++;
    if (store.status === 'skipped' && store.code === 'distrusted') coverage.distrustedFolders++;
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
  if (i.who === 'remote') return `(the other writer writes ${i.listPath}) at ${i.op} #${i.nth} to ${i.store}`;
  return `(${i.act} ${i.op === 'list' || i.op === 'listVersions' ? i.listPath : 'its path'}) at ${i.op} #${i.nth} to ${i.store}`;
}
