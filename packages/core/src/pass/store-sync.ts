import { setMaxListeners } from 'node:events';
import { applyPlan, handOverNotedConflicts, TransferStream, type ApplyIO } from './apply.js';
import { downloadByFolder } from './folder-download.js';
import { ToldAtCommit } from './told-at-commit.js';
import type { Outcome } from '../decide/outcome.js';
import { FairSlots, type StoreSlots } from '../remote/fair-slots.js';
import { StoreError } from '../model/errors.js';
import { errorCode } from '../local/file-system.js';
import { CARRY_BUDGET_BYTES, MARKER_FILE, MAX_MEMORY_BYTES } from '../model/limits.js';
import { assessFolder } from '../decide/folder-trust.js';
import { readMarker, writeMarker } from '../local/marker.js';
import { mergePlans, planStore, type Plan, type RemoteEntry } from '../decide/plan.js';
import { decidePass, type PassDecision } from '../decide/pass-decision.js';
import { baselineIdsAfter } from '../decide/renames.js';
import type { PathReasonCode, Reason, StoreReasonCode } from '../model/reasons.js';
import type { ListingPolicy } from '../decide/feed-fold.js';
import { alignLocalCase, indexRemote, type RemoteIndex } from '../decide/remote-index.js';
import { RemoteView, type CarriedRemoteContent, type RemoteReadMode } from '../remote/remote-view.js';
import type { PathReport, StoreRequests, StoreSyncReport } from '../model/reports.js';
import { scanStore, type FolderRecord, type LocalFile, type LocalSnapshot, type ScanReuse } from '../local/scan.js';
import { emptyPassReport, settle, type PassReport, type Settled } from '../decide/settle.js';
import type { StoreClient } from '../remote/store-client.js';
import type { StoreFolder } from '../local/store-folder.js';
import { listStore, listWhole } from '../remote/store-listing.js';
import type { ContentLane } from '../remote/content-budget.js';
import { emptySyncState, type RecordedState, type SyncState } from '../model/sync-state.js';
import { scanAfterMoves, type LastScan } from '../decide/unpushed.js';
import type { DeletionMode, Logger, MountedStore } from '../model/types.js';
import type { StoreEvents } from '../model/events.js';
import { noRequests, requestsBetween } from '../remote/request-count.js';
import { WarningDigest, type PathWarning } from '../decide/warning-digest.js';
import { CONTRADICTIONS, finalRepeatDelayMs, REREAD_DELAYS_MS } from '../decide/retry-policy.js';
import { clearedByRedownload, takeUpAgreed } from '../decide/redownload-rule.js';
import type { FileSystem } from '../local/file-system.js';
import { FolderWatch, FULL_SCAN_EVERY_MS, FULL_SCAN_EVERY_PASSES } from '../local/folder-watch.js';

/** Full listings when the mounter gives no policy: every 100 passes or 10 minutes. */
const DEFAULT_LISTING_POLICY: ListingPolicy = { everyPasses: 100, everyMs: 600_000 };
const DEFAULT_FEED_BUDGET_MS = 30_000;
/** At most this many unreadable files a pass are read once more to find both sides alike (`#agreeIfAlike`); the rest wait for the next scan. */
const MAX_ALIKE_REREADS = 8;

/** Why a download's pull left a path to the file standing there: the agent wrote it meanwhile. */
const LEFT_FOR_THE_AGENT: ReadonlySet<string> = new Set(['taken', 'changed_during_sync']);

export interface StoreSyncDeps {
  client: StoreClient;
  /** Already bound to this store. */
  logger: Logger;
  deletionMode: DeletionMode;
  /** Size of the pool when none is given. */
  concurrency: number;
  /** This store's lane of the session's transfer slots, shared fairly by all its stores. */
  pool?: StoreSlots;
  /**
   * This store's lane of the session's bound on content listed and not yet written
   * (content-budget.ts). Given, a materialize downloads folder by folder (folder-download.ts);
   * absent, it lists the whole store before it writes.
   */
  contentBudget?: ContentLane;
  /** When passes list the store in full rather than read the change feed. */
  listing?: ListingPolicy;
  /** How long (ms) a feed read may take before the pass lists in full instead. */
  feedBudgetMs?: number;
  /** The mounter's clock (ms), for the full-listing interval. Default `Date.now`. */
  now?: () => number;
  /** Makes the store folder again (and any folder above it, up to memoryRoot) with its marker. */
  recreateFolder: () => Promise<StoreFolder>;
  /**
   * Called once a pass has made the store folder again (`folder` is the new one): the crash-
   * recovery record, which names the folder by its identity, is written anew (mount-record.ts).
   */
  folderRecreated?: () => Promise<void>;
  /** Awaited right before each push goes out, with its path and sha (`ApplyIO.beforeSend`): the crash-recovery record notes it. */
  beforeSend?: (path: string, sha: string) => Promise<void>;
  /** Events of this store (`mounter.on`); absent: none. */
  events?: StoreEvents;
  /**
   * The requests `client` has sent to this store so far (the engine's count, request-count.ts):
   * a pass's report says what it cost by reading it before and after.
   */
  requests: () => StoreRequests;
  /**
   * The filesystem's folder watch (`FileSystem.watchDir`), when it has one: ordinary passes then
   * list only the folders it says changed, with a full scan every `FULL_SCAN_EVERY_PASSES`
   * passes or `FULL_SCAN_EVERY_MS`. Absent: every scan lists every folder.
   */
  watchDir?: FileSystem['watchDir'];
}

export interface PassOptions {
  now: number;
  /** 0 waives the grace period (final sync). */
  graceMs: number;
  /**
   * How long (ms) a new local file must have gone unmodified before it is pushed; 0 for the
   * final passes, which take every file as it is.
   */
  settleMs: number;
  pushOnly: boolean;
  signal: AbortSignal;
  /**
   * How the pass learns the store's side: `auto` (default) reads the change feed when it can,
   * `full` lists the store (the final sync), `reuse` takes what the previous pass learned if it
   * read the store and left no write of unknown outcome (the flush after the final sync).
   */
  remote?: RemoteReadMode;
  /**
   * The circuit breaker's probe of a store that was unavailable: its first store request decides.
   * A feed read that fails `unavailable` then ends the pass instead of falling back to a full
   * listing (one request per breaker step, not two).
   */
  probe?: boolean;
  /**
   * Finalize and recover: a scan that could not read a path (or the folder, or its marker) is
   * taken again after a short wait, a few times, within the pass's signal, before the pass goes
   * on with what it has. EMFILE and EIO are often gone a moment later; what stays unreadable is
   * named unpushed and keeps the folder (SPEC 6.6). Ordinary passes just try again next pass.
   */
  rereadUnreadable?: boolean;
}

/**
 * One store's side of the mounter: its state between passes, the full download, and one pass
 * in five steps (observe, decide, act, fold, commit: `runPass`). I/O happens here and in the
 * executor; every decision is in decide/, which is pure.
 */
export class StoreSync {
  readonly state: SyncState = emptySyncState();
  /** While a pass acts: the state its plan was made from (see `recordedState`). */
  #acting: Pick<PassDecision, 'baseline' | 'unknownWrites'> | null = null;
  /** The last trusted scan, so finalize can name local changes a failed flush never pushed. */
  lastScan: LastScan | null = null;
  /**
   * The store failure that stopped the last pass (a listing that failed), or null when the pass
   * got past reading the store (or stopped for another reason): what the circuit breaker judges.
   */
  lastStoreFailure: StoreError | null = null;
  /** Whether the disk under this store folds case (/A.md and /a.md one file); probed at download. */
  #caseInsensitive = false;
  /** The confined store folder: all disk access of this store goes through it. */
  #folder: StoreFolder;
  /** The store's side as known between passes, kept current by the change feed. */
  readonly #remote: RemoteView;
  readonly #pool: StoreSlots;
  /**
   * The baseline a re-download cleared (redownload-rule.ts), until that download ends whole or,
   * when it failed (an outage during its listing; a pull the disk refused), for the entries it
   * did not settle, until each is taken up (`takeUpAgreed`: a file stands there again) or moot
   * (the path was pulled, or the store no longer holds what was agreed). Without it, a file the
   * agent made at a memory's place after the wipe would meet the store's copy, the engine's own
   * earlier push, with no baseline: a conflict the store wins, and the agent's write gone
   * (reliability B18).
   */
  #clearedBaseline: ReadonlyMap<string, string> | null = null;
  /** Entries the scan leaves alone, said once per kind per pass and per path only when new (warning-digest.ts). */
  readonly #blockedWarnings: WarningDigest;
  /** Transfer failures and refusals, said the same way: a failure every pass is not a line every pass. */
  readonly #transferWarnings: WarningDigest;
  /** Which folders changed since the last scan, when the filesystem can watch; `null`: every scan is full. */
  readonly #watch: FolderWatch | null;
  /** What each folder's last listing found, for scans that take a folder as it was. */
  readonly #folderRecords = new Map<string, FolderRecord>();
  /** Scans since the last full one, and when (the mounter's clock) that was; `null`: none yet. */
  #scansSinceFull = 0;
  #lastFullScanAt: number | null = null;
  /**
   * Set by a pass that found every path unchanged on both sides and nothing else to say (see
   * `#isQuiet`): the remote index it planned from and the state it left. A later pass whose scan
   * listed no folder, whose read of the store returned that very index, and that finds the state
   * still those very maps, would plan, apply and settle nothing again: it skips all three.
   */
  #quiet: QuietPass | null = null;
  /** The state's baseline map the last scan kept a copy of, and that copy (see `keepScan`). */
  #keptBaseline: { of: ReadonlyMap<string, string>; copy: ReadonlyMap<string, string> } | null = null;

  constructor(
    readonly mount: MountedStore,
    folder: StoreFolder,
    private readonly deps: StoreSyncDeps,
  ) {
    this.#folder = folder;
    this.#blockedWarnings = new WarningDigest(deps.logger);
    this.#transferWarnings = new WarningDigest(deps.logger);
    this.#pool = deps.pool ?? new FairSlots(deps.concurrency).lane(mount.memoryStoreId);
    this.#remote = new RemoteView({
      client: deps.client,
      storeId: mount.memoryStoreId,
      logger: deps.logger,
      policy: deps.listing ?? DEFAULT_LISTING_POLICY,
      feedBudgetMs: deps.feedBudgetMs ?? DEFAULT_FEED_BUDGET_MS,
      pool: this.#pool,
    });
    this.#watch = deps.watchDir ? new FolderWatch(deps.watchDir) : null;
  }

  /**
   * What a crash record written now must name: the state, or while a pass acts, the state its
   * plan was made from (the writes of unknown outcome the store showed are the engine's own; the
   * entries a re-download cleared are taken up), which only its commit makes the state.
   */
  recordedState(): RecordedState {
    const acting = this.#acting;
    const recorded = acting ? { baseline: acting.baseline, baselineIds: this.state.baselineIds, unknownWrites: acting.unknownWrites } : this.state;
    const cleared = this.#clearedBaseline;
    if (!cleared) return recorded;
    // A re-download's cleared entries still waiting are agreements recover must know: without
    // them, a file the agent made at such a memory's place met the store's copy with no baseline
    // at recovery, a conflict the store won (reliability B41). Recover pushes and never deletes,
    // so an entry whose file the wipe took away is no deletion there.
    const baseline = new Map(cleared);
    for (const [path, sha] of recorded.baseline) baseline.set(path, sha);
    return { baseline, baselineIds: recorded.baselineIds, unknownWrites: recorded.unknownWrites };
  }

  get folder(): StoreFolder {
    return this.#folder;
  }

  /**
   * The version the store's side as last read says holds `sha` at `path` (the listing's or feed's
   * version id), or undefined when it holds something else there or did not say.
   */
  knownVersion(path: string, sha: string): string | undefined {
    const entry = this.#remote.known(this.#caseInsensitive).remote.get(path);
    return entry?.sha === sha ? entry.versionId : undefined;
  }

  /** Every folder watch stops (the folder is closed or removed): later scans, if any, are full. */
  stopWatching(): void {
    this.#watch?.close();
    this.#folderRecords.clear();
  }

  /**
   * What this pass's scan may take from the last one. A full scan (no watch to trust) at the
   * final passes (finalize, recovery: `rereadUnreadable`, push-only, a full listing asked for),
   * on the cadence, and when no scan has been full yet; else the watch says which folders to
   * list. Either way the watches go on, started before each folder's listing.
   */
  #scanReuse(opts: PassOptions): ScanReuse | undefined {
    if (!this.#watch) return undefined;
    const final = opts.pushOnly || opts.rereadUnreadable === true || opts.remote === 'full';
    const due =
      this.#lastFullScanAt === null ||
      this.#scansSinceFull + 1 >= FULL_SCAN_EVERY_PASSES ||
      opts.now - this.#lastFullScanAt >= FULL_SCAN_EVERY_MS;
    const trust = !final && !due;
    if (trust) this.#scansSinceFull++;
    else {
      this.#scansSinceFull = 0;
      this.#lastFullScanAt = opts.now;
    }
    return { watch: this.#watch, trust, records: this.#folderRecords };
  }

  /**
   * Downloads the whole store into its (existing) folder and makes that the baseline: the plan
   * of a store against an empty baseline and an empty folder (every memory `new_remote`), its
   * pulls carrying the content the listing returned, applied and settled like any pass. One
   * memory that cannot be placed is skipped and reported; any other failure is thrown, after
   * what was written is settled into the baseline. `materializing`: the first download into a
   * folder made for it (see `ApplyIO.materializing`), never a re-download into the agent's.
   */
  async download(signal: AbortSignal, opts: { materializing?: boolean } = {}): Promise<{ written: string[]; skipped: PathReport[] }> {
    // Inside it, this store's share of the session's slots is kept for it (fair-slots.ts).
    this.#pool.begin();
    try {
      return await this.#download(signal, opts);
    } finally {
      this.#pool.end();
    }
  }

  async #download(signal: AbortSignal, opts: { materializing?: boolean }): Promise<{ written: string[]; skipped: PathReport[] }> {
    const { client } = this.deps;
    const storeId = this.mount.memoryStoreId;
    // Whatever happens below, no earlier baseline may outlive this download: files gone from a
    // wiped folder must never read as the agent's deletions if the listing fails part-way. What
    // it agreed on is kept aside for the files made since (see #clearedBaseline).
    const before = clearedByRedownload(this.#clearedBaseline, this.state.baseline);
    this.#clearedBaseline = before;
    this.state.baseline.clear();
    this.#keptBaseline = null;
    this.state.baselineIds.clear();
    this.state.missingSince.clear();
    this.state.absentFrom.clear();
    this.state.scanCache.clear();
    this.#quiet = null;
    this.#remote.forget();
    // The marker exists now: if its name in upper case finds it too, the disk ignores case.
    this.#caseInsensitive = (await this.#folder.stat(`/${MARKER_FILE.toUpperCase()}`)) !== null;
    let probed = false;
    if (opts.materializing && this.deps.contentBudget && !this.#caseInsensitive) {
      const byFolder = await this.#downloadByFolder(signal, this.deps.contentBudget, before);
      if (byFolder) return byFolder;
      probed = true;
    }
    const startedMs = performance.now();
    // The folder listing already said there is no fan-out to make: one plain list.
    const listed = probed
      ? await listWhole(client, storeId, { withContent: true, signal })
      : await listStore(client, storeId, { withContent: true, signal, pool: this.#pool });
    this.#remote.adoptListing(listed, { startedMs, endedMs: performance.now() }, (this.deps.now ?? Date.now)());
    const index = indexRemote(listed, { caseInsensitiveDisk: this.#caseInsensitive });
    for (const { path, code, reason } of index.skipped) this.warnOnce(`remote:${path}:${code}`, `remote memory skipped: ${reason}`, { path });

    // The listing's content rides on each pull (a memory it left without content is fetched by
    // the executor). One whose size says it is over the limit is never fetched nor planned.
    const byPath = new Map(listed.map((m) => [m.path, m]));
    const remote = new Map<string, RemoteEntry>();
    const oversize: PathReport[] = [];
    for (const [path, entry] of index.remote) {
      const memory = byPath.get(path);
      const size = memory?.content_size_bytes ?? 0;
      if (size > MAX_MEMORY_BYTES) {
        oversize.push({ path, code: 'remote_too_large', reason: `it is ${size} bytes, over the ${MAX_MEMORY_BYTES}-byte limit` });
        continue;
      }
      remote.set(path, typeof memory?.content === 'string' ? { ...entry, content: memory.content } : entry);
    }
    const plan = this.#downloadPlan(remote);
    plan.skipped.push(...oversize);
    // A download's pulls are not news to listeners: only its progress is told.
    const events = this.deps.events && progressOnly(this.deps.events);
    const acted = await this.#act(plan, signal, events, null, undefined, opts.materializing);
    return this.#downloaded(signal, before, plan, index.remote, acted, index.skipped);
  }

  /**
   * A materialize's download folder by folder (folder-download.ts), each folder's pulls through
   * one `TransferStream` as its listing answers; null when the store cannot be fanned out (and
   * nothing was written). A listing that fails fails the download once what was written is
   * settled.
   */
  async #downloadByFolder(
    signal: AbortSignal,
    budget: ContentLane,
    before: ReadonlyMap<string, string> | null,
  ): Promise<{ written: string[]; skipped: PathReport[] } | null> {
    const stop = new AbortController();
    const stopped = AbortSignal.any([signal, stop.signal]);
    // Every listing and transfer of the download listens to it, as to the mounter's own.
    setMaxListeners(0, stopped);
    const events = this.deps.events && progressOnly(this.deps.events);
    const told = events ? new ToldAtCommit(events) : null;
    const stream = new TransferStream(this.#applyIO(stopped, told, undefined, true));
    const download = await downloadByFolder({
      client: this.deps.client,
      storeId: this.mount.memoryStoreId,
      signal: stopped,
      abort: (reason) => stop.abort(reason),
      pool: this.#pool,
      budget,
      run: (transfers) => stream.run(transfers),
      plan: (remote) => this.#downloadPlan(remote),
    });
    if (!download) return null;
    const plan = mergePlans(download.plans);
    for (const outcome of download.outcomes) plan.transfers.push(outcome.action);
    for (const report of download.oversize) plan.skipped.push(report);
    const acted: Acted = { outcomes: download.outcomes, told };
    if (download.failure) {
      // A listing that failed is no view of the store: the view stays forgotten, as after a
      // whole listing that failed. What was written is settled (and the folder's handles let
      // go) before the failure is told.
      await this.#downloaded(stopped, before, plan, download.remote, acted, download.refused).catch(() => {});
      throw download.failure.error;
    }
    // Adopted before the commit learns the download's own answers: a listing replaces what the view knew.
    this.#remote.adoptListing(download.listed, { startedMs: download.listedFrom, endedMs: download.listedUntil }, (this.deps.now ?? Date.now)());
    for (const { path, code, reason } of download.refused) this.warnOnce(`remote:${path}:${code}`, `remote memory skipped: ${reason}`, { path });
    return this.#downloaded(signal, before, plan, download.remote, acted, download.refused);
  }

  /** The download's plan for `remote`: no baseline, no files, so every memory is `new_remote` and neither the clock nor the deletion mode can matter. */
  #downloadPlan(remote: Map<string, RemoteEntry>): Plan {
    return planStore({
      access: this.mount.access,
      deletionMode: this.deps.deletionMode,
      now: 0,
      graceMs: 0,
      settleAfter: null,
      baseline: new Map(),
      localFiles: new Map(),
      localBlocked: new Map(),
      remote,
      missingSince: new Map(),
      refused: new Map(),
    });
  }

  /** Folds and commits a download's outcomes, and fails it (all or nothing for materialize) as the first failure in path order says. */
  async #downloaded(
    signal: AbortSignal,
    before: ReadonlyMap<string, string> | null,
    plan: Plan,
    remote: ReadonlyMap<string, { sha: string }>,
    acted: Acted,
    indexSkipped: readonly PathReport[],
  ): Promise<{ written: string[]; skipped: PathReport[] }> {
    const { outcomes } = acted;
    const settled = settle(this.state, plan, outcomes);
    // The re-download rule (redownload-rule.ts): a file the agent made meanwhile at a memory's
    // place, which this download left (`taken`, `changed_during_sync`), is its edit of that memory
    // where the store still holds what was agreed. The entries left waiting stay aside if this
    // download fails; a download that ends whole forgets them, but for those its listing did not
    // show at all: those wait for the next pass, which lists the store in full to judge them.
    let unseen: ReadonlyMap<string, string> | null = null;
    if (before) {
      const left = new Set(outcomes.filter(({ action, result }) => action.type === 'pull' && result.kind === 'skipped' && LEFT_FOR_THE_AGENT.has(result.code)).map((o) => o.action.path));
      // Shown: listed and planned, or listed and refused (a bad path, over the size limit).
      const shown = new Set([...remote.keys(), ...indexSkipped.map((s) => s.path), ...plan.skipped.map((s) => s.path)]);
      const takeUp = takeUpAgreed(before, settled.state.baseline, (path) => remote.get(path)?.sha, (path) => left.has(path), (path) => !shown.has(path));
      if (takeUp.restored.size > 0) settled.state.baseline = new Map([...settled.state.baseline, ...takeUp.restored]);
      this.#clearedBaseline = takeUp.waiting;
      unseen = takeUp.unseen;
    }
    const report = this.#commit(settled, acted);
    this.#folder.release();
    for (const { path, code, reason } of report.skippedPaths) {
      this.warnOnce(`unmountable:${path}:${code}`, `remote memory not written: ${reason}`, { path });
    }
    // All or nothing for materialize: the first failure (in path order) is the download's.
    signal.throwIfAborted();
    const failed = outcomes
      .filter((o) => o.result.kind === 'failed')
      .sort((a, b) => (a.action.path < b.action.path ? -1 : a.action.path > b.action.path ? 1 : 0))[0];
    if (failed?.result.kind === 'failed') throw failed.result.cause ?? new StoreError('unavailable', failed.result.message);
    if (outcomes.some((o) => o.result.kind === 'cut_off')) throw new StoreError('unavailable', 'the download was cut off');
    this.#clearedBaseline = unseen;
    if (unseen) this.#remote.wantListing(`the re-download's listing did not show ${unseen.size} memories agreed on before`);
    this.deps.logger.debug('downloaded', { path: this.mount.path, memories: report.pulled.length });
    return { written: [...report.pulled].sort(), skipped: [...indexSkipped, ...report.skippedPaths] };
  }

  /**
   * Takes up a folder a dead mounter left, with the state it recorded (crash recovery): the
   * baseline it agreed on with the store, and the writes it may have sent without learning
   * their outcome. Instead of a download, which would make the baseline the store's.
   */
  async resume(recorded: {
    baseline: ReadonlyMap<string, string>;
    unknownWrites: ReadonlyMap<string, string>;
    /** path -> memory id the record kept (older records may lack some): renames are followed for those. */
    memoryIds?: ReadonlyMap<string, string>;
  }): Promise<void> {
    this.state.baseline = new Map(recorded.baseline);
    this.state.baselineIds = new Map([...(recorded.memoryIds ?? [])].filter(([path]) => recorded.baseline.has(path)));
    this.state.unknownWrites = new Map(recorded.unknownWrites);
    this.state.missingSince.clear();
    this.state.absentFrom.clear();
    this.state.scanCache.clear();
    this.#quiet = null;
    this.#caseInsensitive = (await this.#folder.stat(`/${MARKER_FILE.toUpperCase()}`)) !== null;
    this.#folder.release();
  }

  async pass(opts: PassOptions): Promise<StoreSyncReport> {
    this.#pool.begin();
    const before = this.deps.requests();
    try {
      const report = await this.#passAndRetries(opts);
      // Every request of the pass, the reads again of a final pass included (#passAndRetries).
      report.requests = requestsBetween(before, this.deps.requests());
      return report;
    } finally {
      this.#pool.end();
    }
  }

  async #passAndRetries(opts: PassOptions): Promise<StoreSyncReport> {
    let report = await this.onePass(opts);
    // A push-only final pass (finalize's flush, recovery) runs again, within its signal, while it
    // left a push that could not read its file (EMFILE, EIO), a write of unknown outcome, or a
    // push the store contradicted (changed by another writer since the read): the folder is
    // removed next, so a later pass would be too late (finalRepeatDelayMs). Each pass reads the
    // store first (in full after a contradiction), so what landed is settled, what was pushed is
    // in the baseline and not sent twice, and a contradicted push is decided again: sent, or a
    // conflict handed over. What is still left when the signal ends is named unpushed (unpushed.ts).
    if (!opts.rereadUnreadable || !opts.pushOnly || this.mount.access !== 'read_write') return report;
    const done = { rereads: 0, resends: 0 };
    while (!opts.signal.aborted) {
      const left = {
        unreadPushes: report.errors.some((e) => e.operation === 'push' && e.kind === 'filesystem'),
        unknownWrites: this.state.unknownWrites.size > 0 && report.errors.some((e) => e.kind === 'unavailable'),
        contradictedPushes: report.errors.some((e) => (e.operation === 'push' || e.operation === 'rename_remote') && CONTRADICTIONS.has(e.kind)),
      };
      const next = finalRepeatDelayMs(left, done, Math.random());
      if (!next) break;
      done[next.reason === 'reread' ? 'rereads' : 'resends']++;
      if (!(await pause(next.ms, opts.signal))) break;
      // 'reuse' reads the store again whenever a write of unknown outcome is left (runPass).
      const again = await this.onePass({ ...opts, remote: 'reuse' });
      again.pushed.unshift(...report.pushed);
      again.renamed.unshift(...report.renamed);
      report = again;
    }
    return report;
  }

  private async onePass(opts: PassOptions): Promise<StoreSyncReport> {
    const report = emptyReport(this.mount);
    this.lastStoreFailure = null;
    try {
      await this.runPass(opts, report);
    } catch (err) {
      if (err instanceof StoreError && !opts.signal.aborted) this.lastStoreFailure = err;
      // Everything below is caught per action; reaching here means the pass could not run.
      if (opts.signal.aborted) stop(report, 'skipped', 'time_bound', 'cut off by the time bound');
      else {
        const why = describe(err);
        stop(report, 'failed', why.code, why.reason);
        this.deps.logger.warn('sync failed for this store', { path: this.mount.path, error: why.reason });
      }
    } finally {
      this.#folder.release();
    }
    return report;
  }

  /**
   * One pass in five steps (docs/architecture.md): observe (scan, judge the folder, read the
   * store, spell local paths as the store does), decide (pure: `decidePass`), act (the executor:
   * outcomes only), fold (pure: `settle`), commit (`#commit`, the one place the state moves).
   * A folder that is not trusted, or that must be downloaded again, ends the pass at observe.
   */
  private async runPass(opts: PassOptions, report: StoreSyncReport): Promise<void> {
    const { logger } = this.deps;
    const { state, mount } = this;
    this.#remote.beginPass();
    if (state.distrusted) return stop(report, 'skipped', 'distrusted', `folder not trusted: ${state.distrusted}`);
    opts.signal.throwIfAborted();

    // 1. Observe. The content of files that differ from the baseline rides to their pushes: read once a pass.
    // Events already queued for the watch are taken first (two turns of the event loop, each
    // reading what the kernel queued); one that comes later marks its folder for the next pass,
    // as a change made after the scan would.
    const reuse = this.#scanReuse(opts);
    // The last quiet pass stands only for a pass that observes nothing new and ends quiet: taken
    // before the scan, so a pass that fails after it (the store unreachable, a time bound) leaves
    // none behind. Otherwise the next pass, listing no folder the watch saw change, would take
    // this scan's new files for the quiet pass's and plan nothing for them.
    const quiet = this.#quiet;
    this.#quiet = null;
    if (reuse?.trust) for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    let first = true;
    const scan = () => {
      // A scan taken again (rereadUnreadable) lists every folder: that is what it is for.
      const thisReuse = first ? reuse : reuse && { ...reuse, trust: false };
      first = false;
      return scanStore(
        this.#folder,
        mount.memoryStoreId,
        state.scanCache,
        { wanted: (path, sha) => state.baseline.get(path) !== sha, budgetBytes: CARRY_BUDGET_BYTES },
        opts.signal,
        // Final syncs only (finalize, recover): the folder is removed next, and what the agent
        // locked is read rather than kept unread for ever.
        { unlock: opts.rereadUnreadable === true },
        thisReuse,
      );
    };
    let scanned = await scan();
    // A read-only store's local content is never pushed: what it could not read costs nothing.
    if (opts.rereadUnreadable && mount.access === 'read_write') {
      for (const ms of REREAD_DELAYS_MS) {
        if (!sawUnreadable(scanned) || opts.signal.aborted) break;
        // Cut off while waiting: the pass goes on with this scan, so finalize names what it could not read.
        if (!(await pause(ms, opts.signal))) break;
        scanned = await scan();
      }
    }
    let snapshot = this.inStoreSpelling(scanned, state.baseline.keys());
    // Files already known missing (deletion candidates) are not expected on disk: a folder
    // emptied one deletion at a time is not a wipe.
    // Built only when some are known missing, and the shas only when no baseline file is left.
    const expectedOnDisk = state.missingSince.size === 0 ? state.baseline : new Set([...state.baseline.keys()].filter((path) => !state.missingSince.has(path)));
    const verdict = assessFolder(snapshot, expectedOnDisk, () => new Set([...expectedOnDisk.keys()].map((path) => state.baseline.get(path)!)));
    switch (verdict.kind) {
      case 'distrusted':
        state.distrusted = verdict.reason;
        logger.warn(`folder left exactly as found and never synced again: ${verdict.reason}`, { path: mount.path });
        return stop(report, 'skipped', 'distrusted', `folder not trusted: ${verdict.reason}`);
      case 'unreadable':
        logger.warn(`sync skipped: ${verdict.reason}`, { path: mount.path });
        return stop(report, 'failed', 'folder_unreadable', verdict.reason);
      case 'redownload':
        if (opts.pushOnly) {
          this.keepScan(snapshot); // files made since the wipe are not pushed: finalize names them
          // Skipped with the re-download's code: that is how a reader tells a wipe the flush left.
          return stop(report, 'skipped', verdict.code, `${verdict.reason}; a push-only flush does not re-download`);
        }
        logger.warn(`re-downloading the store: ${verdict.reason}`, { path: mount.path });
        // What is on disk now was made since the wipe (no baseline file is left): all of it is
        // new. Kept so that a re-download cut off before it ends still lets finalize name it.
        this.keepScan(snapshot, new Map());
        if (snapshot.root === 'missing') {
          await this.#folder.close();
          this.#folder = await this.deps.recreateFolder();
          // Recover reaches the folder by the (dev, ino) the record names and leaves any other
          // (`folder_replaced`): the record must name this one before the download can be cut
          // short, or a worker killed during it leaves a folder recover cannot vouch for.
          await this.deps.folderRecreated?.();
        } else if (snapshot.marker !== 'ok') await writeMarker(this.#folder, mount.memoryStoreId);
        {
          const { written, skipped } = await this.download(opts.signal);
          report.pulled = written;
          report.skippedPaths.push(...skipped);
        }
        report.status = 'redownloaded';
        report.code = verdict.code;
        report.reason = verdict.reason;
        return;
      case 'trusted':
        break;
    }
    this.keepScan(snapshot);

    const blocked: PathWarning[] = [];
    for (const [path, { code, detail }] of snapshot.blocked) {
      report.skippedPaths.push({ path, code, reason: detail });
      blocked.push({ level: 'warn', message: `left alone: ${detail}`, fields: { path } });
    }
    this.#blockedWarnings.say(blocked);
    // A write of unknown outcome is settled by what the store now holds: never by a reused view.
    const mode = opts.remote === 'reuse' && state.unknownWrites.size > 0 ? 'auto' : (opts.remote ?? 'auto');
    const read = await this.#remote.read({
      mode,
      now: opts.now,
      signal: opts.signal,
      caseInsensitive: this.#caseInsensitive,
      ...(opts.probe && { probe: true }),
      ...(state.unknownWrites.size > 0 && { deletionsFirst: true }),
    });
    logger.debug('remote side read', { path: mount.path, source: read.source });
    report.read = read.source;
    if (quiet && !opts.pushOnly && this.#clearedBaseline === null && scanned.listedFolders === 0 && snapshot.marker === 'ok' && snapshot.blocked.size === 0 && sameQuiet(quiet, read.index, state)) {
      // Nothing listed, nothing read: the same files, the same memories, the same state as the
      // pass that found all of them unchanged. Its plan was empty; this one's would be too.
      this.#quiet = quiet;
      return;
    }
    const { skipped } = read.index;
    const remote = withCarriedContent(read.index.remote, read.contents);
    snapshot = this.inStoreSpelling(scanned, [...remote.keys(), ...state.baseline.keys()]);
    snapshot = await this.#agreeIfAlike(snapshot, remote, opts.signal);
    for (const entry of skipped) {
      report.skippedPaths.push(entry);
      this.warnOnce(`remote:${entry.path}:${entry.code}`, `remote memory skipped: ${entry.reason}`, { path: entry.path });
    }

    // 2. Decide (pure).
    const decision = decidePass({
      access: mount.access,
      deletionMode: this.deps.deletionMode,
      now: opts.now,
      graceMs: opts.graceMs,
      // The host clock, as file mtimes are: `now` may be a test's clock.
      settleAfter: opts.settleMs > 0 ? Date.now() - opts.settleMs : null,
      hostNow: Date.now(),
      baseline: state.baseline,
      unknownWrites: state.unknownWrites,
      cleared: this.#clearedBaseline,
      pushOnly: opts.pushOnly,
      baselineIds: state.baselineIds,
      localFiles: snapshot.files,
      localBlocked: snapshot.blocked,
      remote,
      missingSince: state.missingSince,
      refused: state.refused,
      absence: { ...this.#remote.absenceEvidence(), absentFrom: state.absentFrom },
    });
    const { full, plan } = decision;
    // 3. Act: the record written before a push names the state this plan was made from.
    const acted = await this.#act(plan, opts.signal, this.deps.events, decision, scanned.carried);
    // 4. Fold (pure), from the state the plan was made from; 5. commit.
    const settled = settle({ ...state, baseline: decision.baseline, unknownWrites: decision.unknownWrites }, plan, acted.outcomes);
    this.#clearedBaseline = decision.cleared;
    mergeReport(report, this.#commit(settled, acted));
    // What finalize names as unpushed reads the scan: a file this pass moved is at its new path.
    const moved = settled.report.renamed.filter((r) => r.side === 'local');
    if (moved.length > 0 && this.lastScan) this.lastScan = scanAfterMoves(this.lastScan, moved);
    // The store answered something the view did not predict (a memory gone or changed that the
    // view held, a path taken that it held free): the view may be wrong in a way no version will
    // ever correct (a spurious not_found made it forget a memory that is still there), so the
    // next read lists in full rather than trust the feed.
    const contradiction = report.errors.find((e) => CONTRADICTIONS.has(e.kind));
    if (contradiction) this.#remote.distrust(`${contradiction.operation} of ${contradiction.path} failed: ${contradiction.kind}`);
    // Files kept whose memories one listing missed, and that no `get` settled (too many at once,
    // no id, the get failed): the next read lists in full, and a path missing from that listing
    // too is deleted then (absence.ts). A flush deletes nothing, so it does not ask for one.
    if (!opts.pushOnly && isQuiet(full, report, snapshot, read.index, state)) this.#quiet = quietOf(read.index, state);
    if (!opts.pushOnly && state.absentFrom.size > 0) {
      this.#remote.wantListing(`${state.absentFrom.size} memories missing from one listing`);
      logger.info('files kept: their memories were missing from one listing; the next pass lists the store again to confirm', {
        path: mount.path,
        paths: [...state.absentFrom.keys()].sort(),
      });
    }
  }

  /**
   * Files the scan could not open (EACCES, EIO, EMFILE) where the store holds content the
   * baseline does not (a memory new to this folder, a remote edit): each is read once more
   * through the store folder, and one that now holds exactly the store's content joins the
   * snapshot, so the rows find both sides alike and the baseline takes it. Left blocked, the
   * agent's next edit of it met the store's content as a "both changed" conflict (B45), though
   * the store held the agent's own content. Anything else stays blocked, as the scan left it:
   * only an exact agreement is taken, and nothing is written. A few at most: no folder is
   * listed again.
   */
  async #agreeIfAlike(snapshot: LocalSnapshot, remote: ReadonlyMap<string, RemoteEntry>, signal: AbortSignal): Promise<LocalSnapshot> {
    const candidates = [...snapshot.blocked]
      .filter(([path, why]) => why.code === 'unreadable' && remote.has(path) && remote.get(path)!.sha !== this.state.baseline.get(path))
      .slice(0, MAX_ALIKE_REREADS);
    if (candidates.length === 0) return snapshot;
    let files: Map<string, LocalFile> | undefined;
    let blocked: Map<string, Reason<PathReasonCode>> | undefined;
    for (const [path] of candidates) {
      if (signal.aborted) break;
      const now = await this.#folder.read(path).catch(() => null);
      if (now?.kind !== 'file' || now.unpushable || now.sha !== remote.get(path)!.sha) continue;
      files ??= new Map(snapshot.files);
      blocked ??= new Map(snapshot.blocked);
      files.set(path, { sha: now.sha, size: now.size, mtimeMs: now.stat.mtimeMs });
      blocked.delete(path);
      this.deps.logger.debug('a file the scan could not open holds the store\'s content: both sides agree', { path: this.mount.path, file: path });
    }
    return files && blocked ? { ...snapshot, files, blocked } : snapshot;
  }

  /**
   * The act step: the plan's transfers through the executor, which returns their outcomes and
   * moves no state. `decided`: the state the plan was made from, which a record written before a
   * push names (`recordedState`); null for a download, whose state is the one it cleared. What
   * the transfers have to tell is kept for the commit (`ToldAtCommit`).
   */
  async #act(
    plan: Plan,
    signal: AbortSignal,
    events: StoreEvents | undefined,
    decided: Pick<PassDecision, 'baseline' | 'unknownWrites'> | null,
    carried?: LocalSnapshot['carried'],
    materializing?: boolean,
  ): Promise<Acted> {
    const told = events ? new ToldAtCommit(events) : null;
    const io = this.#applyIO(signal, told, carried, materializing);
    this.#acting = decided;
    try {
      const outcomes = await applyPlan(io, plan.transfers);
      // A push-only flush's conflicts: their losers go to the listeners, as a pull's would.
      await handOverNotedConflicts(io, plan.reportOnly);
      return { outcomes, told };
    } catch (err) {
      // No commit follows: what did happen is still told.
      told?.tell();
      throw err;
    } finally {
      this.#acting = null;
    }
  }

  /** How this store's transfers reach the seams, for a pass's plan or a download's stream. */
  #applyIO(signal: AbortSignal, events: StoreEvents | null | undefined, carried?: LocalSnapshot['carried'], materializing?: boolean): ApplyIO {
    return {
      folder: this.#folder,
      client: this.deps.client,
      memoryStoreId: this.mount.memoryStoreId,
      logger: this.deps.logger,
      signal,
      concurrency: this.deps.concurrency,
      ...(events && { events }),
      slots: this.#pool,
      ...(carried && { carried }),
      ...(materializing && { materializing }),
      feedUsable: this.#remote.feedUsable(),
      ...(this.deps.beforeSend && { beforeSend: this.deps.beforeSend }),
    };
  }

  /**
   * The commit step, the one place a pass moves this store's state: the remote view learns what
   * the store answered, the folded state replaces the old (in place: the mounter and the crash
   * record read this object), the baseline's memory ids are read from what the store is now known to hold,
   * and what the fold has to say is logged and told.
   */
  #commit(settled: Settled, { outcomes, told }: Acted): PassReport {
    for (const outcome of outcomes) for (const o of [outcome, ...(outcome.then ? [outcome.then] : [])]) for (const change of o.learned) this.#remote.learn(change);
    Object.assign(this.state, settled.state);
    // What the store holds now (the listing, plus this pass's own writes and fetches) names the
    // memory behind each baseline path, for the next pass's rename detection.
    this.state.baselineIds = baselineIdsAfter(this.state.baseline, this.state.baselineIds, this.#remote.known(this.#caseInsensitive).remote);
    if (this.#remote.absenceEvidence().gone.size > 0) this.#remote.keepGone(new Set(this.state.baselineIds.values()));
    told?.tell();
    const { logger, events } = this.deps;
    // Failures and refusals are lasting conditions: digested (a path said again only when what
    // is said about it changes). Everything else is an event of this pass, said as it happened.
    const lasting: PathWarning[] = [];
    for (const notice of settled.notices) {
      if (notice.level !== 'debug' && (notice.fields.error !== undefined || notice.refused)) lasting.push({ ...notice, level: notice.level });
      else logger[notice.level](notice.message, notice.fields);
      if (notice.refused) events?.refused({ path: notice.fields.path, ...notice.refused });
    }
    this.#transferWarnings.say(lasting);
    return settled.report;
  }

  private keepScan(snapshot: LocalSnapshot, baseline: ReadonlyMap<string, string> = this.state.baseline): void {
    // The copy of a baseline map not changed since it was last copied is that copy: settle
    // replaces the map whenever it moves, and every change in place forgets it (`#keptBaseline`).
    const copy = baseline === this.#keptBaseline?.of ? this.#keptBaseline.copy : new Map(baseline);
    this.#keptBaseline = baseline === this.state.baseline ? { of: baseline, copy } : null;
    this.lastScan = { files: snapshot.files, blocked: snapshot.blocked, baseline: copy };
  }

  /** On a case-insensitive disk, local paths renamed to the spelling of the memories they hold. */
  private inStoreSpelling(snapshot: LocalSnapshot, known: Iterable<string>): LocalSnapshot {
    if (!this.#caseInsensitive) return snapshot;
    const paths = [...known];
    return { ...snapshot, files: alignLocalCase(snapshot.files, paths), blocked: alignLocalCase(snapshot.blocked, paths) };
  }

  /**
   * Why finalize must leave this store's folder in place, or null when it may go: distrusted,
   * or its marker could not be read (`marker_unreadable`) or is wrong or missing (`marker_mismatch`).
   */
  async removalRefusal(): Promise<{ code: 'distrusted' | 'marker_unreadable' | 'marker_mismatch'; reason: string } | null> {
    const distrust = this.state.distrusted ? { code: 'distrusted' as const, reason: `folder not trusted: ${this.state.distrusted}` } : null;
    if ((await this.#folder.locate()) !== 'directory') return distrust;
    // An empty folder holds nothing of anyone's: it is provably the one made here, whatever
    // happened to its marker, and leaving it would refuse the next session (SPEC 4.4).
    if ((await this.#folder.topLevelNames()).length === 0) return null;
    if (distrust) return distrust;
    const marker = await readMarker(this.#folder, this.mount.memoryStoreId);
    if (marker === 'ok') return null;
    return { code: marker === 'unreadable' ? 'marker_unreadable' : 'marker_mismatch', reason: `marker check failed (${marker})` };
  }

  private warnOnce(key: string, msg: string, fields: Record<string, unknown>): void {
    if (this.state.warned.has(key)) return;
    this.state.warned.add(key);
    this.deps.logger.warn(msg, fields);
  }
}

/** What the act step hands the commit: the transfers' outcomes, and what they have to tell. */
interface Acted {
  outcomes: Outcome[];
  told: ToldAtCommit | null;
}

/** What `#quiet` keeps: the index planned from, and the maps of the state as that pass left them. */
interface QuietPass {
  index: RemoteIndex;
  maps: readonly ReadonlyMap<string, unknown>[];
}

/** The state's maps a plan reads, in a fixed order. */
const planMaps = (state: SyncState): ReadonlyMap<string, unknown>[] => [
  state.baseline,
  state.baselineIds,
  state.missingSince,
  state.absentFrom,
  state.refused,
  state.unknownWrites,
];

function quietOf(index: RemoteIndex, state: SyncState): QuietPass {
  return { index, maps: planMaps(state) };
}

/** The same index object and the very same state maps (settle replaces them whenever it runs). */
function sameQuiet(quiet: QuietPass, index: RemoteIndex, state: SyncState): boolean {
  const maps = planMaps(state);
  return quiet.index === index && maps.every((map, i) => map === quiet.maps[i]);
}

/**
 * A pass with nothing to do and nothing to say: every baseline path held by a file and a
 * memory of the baseline's sha, no other path on either side, nothing blocked, skipped, missing,
 * refused or of unknown outcome, and a plan and report that are empty. Time cannot change what
 * such a pass plans (only new files wait to settle, only missing files wait out a grace).
 */
function isQuiet(plan: Plan, report: StoreSyncReport, snapshot: LocalSnapshot, index: RemoteIndex, state: SyncState): boolean {
  if (plan.transfers.length + plan.baselineOnly.length + plan.reportOnly.length + plan.skipped.length + plan.pendingDeletions.length > 0) return false;
  if (plan.missingSince.size + plan.absentFrom.size > 0 || index.skipped.length > 0 || snapshot.blocked.size > 0 || snapshot.marker !== 'ok') return false;
  if (state.missingSince.size + state.absentFrom.size + state.unknownWrites.size > 0) return false;
  if (report.errors.length + report.skippedPaths.length + report.pulled.length + report.pushed.length > 0) return false;
  const { baseline } = state;
  const local = snapshot.files;
  const remote = index.remote;
  if (local.size !== baseline.size || remote.size !== baseline.size) return false;
  for (const [path, sha] of baseline) if (local.get(path)?.sha !== sha || remote.get(path)?.sha !== sha) return false;
  return true;
}

/**
 * The remote side with the content the read carried riding on each memory that holds it, so its
 * pull writes that instead of fetching the memory. A copy: the view's index is kept across passes.
 */
function withCarriedContent(remote: ReadonlyMap<string, RemoteEntry>, contents: CarriedRemoteContent): ReadonlyMap<string, RemoteEntry> {
  if (contents.size === 0) return remote;
  let out: Map<string, RemoteEntry> | undefined;
  for (const [path, entry] of remote) {
    const content = contents.get(entry.sha);
    if (content === undefined) continue;
    out ??= new Map(remote);
    out.set(path, { ...entry, content });
  }
  return out ?? remote;
}

/** The scan could not read a file, a folder, or the marker (a read error, not a link or a bad name). */
function sawUnreadable(snapshot: LocalSnapshot): boolean {
  if (snapshot.marker === 'unreadable') return true;
  for (const why of snapshot.blocked.values()) if (why.code === 'unreadable') return true;
  return false;
}

/** Waits `ms`: true when the time passed, false as soon as the signal aborts. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (passed: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(passed);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The events of a download: its progress, and no transfer news. */
function progressOnly(events: StoreEvents): StoreEvents {
  const quiet = () => undefined;
  return { ...events, conflict: quiet, pulled: quiet, pushed: quiet, deleted: quiet, renamed: quiet, refused: quiet };
}

/** Ends a store's pass early: its status and why, as a code and in words. */
function stop(report: StoreSyncReport, status: 'skipped' | 'failed', code: StoreReasonCode, reason: string): void {
  report.status = status;
  report.code = code;
  report.reason = reason;
}

/** A settled pass into the store's report, after what the scan and the listing left alone. */
function mergeReport(report: StoreSyncReport, pass: PassReport): void {
  for (const key of Object.keys(pass) as (keyof PassReport)[]) (report[key] as unknown[]).push(...pass[key]);
}

export function emptyReport(mount: MountedStore): StoreSyncReport {
  return {
    memoryStoreId: mount.memoryStoreId,
    name: mount.name,
    path: mount.path,
    access: mount.access,
    status: 'synced',
    ...emptyPassReport(),
    requests: noRequests(),
  };
}

function describe(err: unknown): { code: StoreReasonCode; reason: string } {
  // Every store call reaches here as a StoreError (storeCall, listAll); anything else is the disk's.
  if (err instanceof StoreError) return { code: 'store_error', reason: `store ${err.kind}: ${err.message}` };
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'filesystem_error', reason: code ? `filesystem ${code}: ${message}` : message };
}
