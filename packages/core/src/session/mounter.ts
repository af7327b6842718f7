import { setMaxListeners } from 'node:events';
import { posix } from 'node:path';
import { BoundedStoreClient } from '../remote/bounded-store-client.js';
import { ContentBudget } from '../remote/content-budget.js';
import { FairSlots } from '../remote/fair-slots.js';
import { breakerAfter, breakerDecision, breakerStarted, CLOSED, type BreakerDecision, type BreakerState, type PassVerdict } from '../decide/breaker.js';
import { MemoryLifecycleError, MemoryMountError, MemoryWriteRefusedError } from '../model/errors.js';
import { errorCode, type FileSystem } from '../local/file-system.js';
import { storeLogger } from './logger.js';
import { checkMemoryRoot, createStoreFolder, removeCreatedFolder, type CreatedFolder } from '../local/mount-folders.js';
import { isWithin, mountSegments } from '../model/mount-path.js';
import { resolveKernelPath, type ReadLink } from '../local/kernel-path.js';
import { NodeFileSystem } from '../local/node-file-system.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { isoTime, type FinalizeReport, type StoreRequests, type StoreSyncReport, type SyncReport } from '../model/reports.js';
import { RequestCounter, requestsBetween } from '../remote/request-count.js';
import { resolveMounts } from './resources.js';
import { emptyReport, StoreSync, type PassOptions } from '../pass/store-sync.js';
import { cutOffReport, finalPassOptions, passesWithin, timeBound } from './deadline.js';
import type { StoreClient } from '../remote/store-client.js';
import type { MemoryMounterOptions, MountedStore } from '../model/types.js';
import { MARKER_FILE } from '../model/limits.js';
import { breakerPolicy, passRetryUntil } from '../decide/retry-policy.js';
import { keptUnread, unpushedChanges } from '../decide/unpushed.js';
import { beginRecord, checkStateDir, type MountRecord } from '../recovery/mount-record.js';
import { recoverStores, type RecoverOptions } from '../recovery/recover.js';
import type { RecoveryReport } from '../model/reports.js';
import { MounterEventEmitter } from './event-emitter.js';
import type { StoreEvents } from '../model/events.js';
import { pendingLocalChanges, type StoreStatus } from './status.js';
import type { StoreReasonCode } from '../model/reasons.js';
import type { Logger } from '../model/types.js';

/** How far the wall clock may drift from the monotonic one between two passes before it is said to have jumped. */
const WALL_JUMP_MS = 60_000;

/**
 * Mounts a session's memory stores into a FileSystem and keeps them in sync with the store:
 * `materialize` before the agent's first tool call, `reconcile` after tool calls, `finalize`
 * when the session ends.
 *
 * At most one pass runs at a time: a `reconcile` call that arrives during a pass gets that
 * pass's report instead of queueing another; `finalize` stops a running pass (and a
 * materialize still downloading) and waits for it to wind down before its own passes.
 *
 * Time bounds: each store call is abandoned past `requestTimeout` (and retried within the pass
 * where that is safe); each reconcile pass, and materialize's download, is cut off at
 * `syncTimeout`; finalize runs under one `finalSyncTimeout` deadline from its call.
 */
export class MemoryMounter extends MounterEventEmitter {
  readonly #options: ResolvedOptions;
  readonly #fs: FileSystem;
  /** The host's StoreClient, bounded by `requestTimeout` and retrying where that is safe. */
  readonly #client: StoreClient;
  /** The session's transfers in flight, all stores together (`transferConcurrency`). */
  readonly #transfers: FairSlots;
  /** The session's content listed and not yet written while materialize downloads, all stores together. */
  readonly #downloadContent = new ContentBudget();
  #stores: StoreSync[] = [];
  #created: CreatedFolder[] = [];
  #phase: 'new' | 'materializing' | 'mounted' | 'finalizing' | 'finalized' = 'new';
  /** When the last pass started (or materialize ended), on the monotonic clock: the throttle's origin. */
  #lastSyncAt = 0;
  /** Each store's circuit breaker, by host path (SPEC 6.7); absent: closed. */
  readonly #breakers = new Map<string, BreakerState>();
  /**
   * The instant (`performance.now`) past which no retry of a store call starts, by store id: the current
   * ordinary pass's retry budget, or -Infinity while the store is probed. Absent: retries go on
   * to the deadline (materialize, finalize, recover). Passes never overlap, so one map serves.
   */
  readonly #retryUntil = new Map<string, number>();
  /** The wall and monotonic clocks at the last pass, to tell a wall-clock jump. */
  #clocks: { wall: number; monotonic: number } | null = null;
  #wallJumpLogged = false;
  #running: Promise<SyncReport> | null = null;
  /**
   * The store passes of a pass that was cut off and reported before they all wound down (a disk
   * that hangs under a scan, say), or null. The next pass (and finalize, within its deadline) waits
   * for them first: two passes never work on one store's state at once.
   */
  #straggling: Promise<unknown> | null = null;
  /** In flight while materialize runs, so a finalize that arrives meanwhile waits for it. */
  #materializing: Promise<unknown> | null = null;
  /** Aborts the pass in `#running`, or materialize's download: finalize stops them with it. */
  #inFlight: AbortController | null = null;
  /** Crash-recovery records by store folder host path; empty without `stateDir`. */
  readonly #records = new Map<string, MountRecord>();
  /** Which lifecycle call `progress` events belong to; null during reconcile (none are sent). */
  #progressPhase: 'materialize' | 'finalize' | null = null;
  /** The last pass of each store (by host path), for status(). */
  readonly #last = new Map<
    string,
    {
      at: number;
      outcome: StoreStatus['lastOutcome'];
      code?: StoreReasonCode;
      reason?: string;
      pendingDeletions: string[];
      pulled: string[];
      requests: StoreRequests;
    }
  >();
  /** Every store request this mounter's client sent, per store: what each pass cost (`StoreSyncReport.requests`). */
  readonly #requests = new RequestCounter();

  constructor(options: MemoryMounterOptions) {
    super();
    this.#options = resolveOptions(options);
    // Built here, not on first use, so a platform without O_NOFOLLOW fails at construction.
    this.#fs = this.#options.fileSystem ?? new NodeFileSystem();
    this.#client = new BoundedStoreClient(this.#options.storeClient, {
      requestTimeoutMs: this.#options.requestTimeoutMs,
      logger: this.#options.logger,
      retryUntil: (storeId) => this.#retryUntil.get(storeId),
      requests: this.#requests,
    });
    this.#transfers = new FairSlots(this.#options.transferConcurrency);
  }

  /**
   * Crash recovery, run by a worker at start-up, before it mounts anything: finds the
   * store folders a dead mounter left (its state record in `stateDir` and the folder's marker
   * agree), pushes each folder's local changes against the baseline the record holds (the store
   * still wins real conflicts; read-only stores are never pushed; nothing is ever deleted in the
   * store), then removes the folders it fully synced, with their records. Folders it cannot
   * vouch for are left untouched and reported. The whole of it is bounded by `finalSyncTimeout`
   * (default 30 s), like `finalize()`. Throws only MemoryConfigError (bad options, or a
   * `stateDir` that exists but is not a readable directory); never for store or sync problems.
   */
  protected override eventLogger(): Logger {
    return this.#options.logger;
  }

  /**
   * `await using mounter = new MemoryMounter(...)`: when the scope ends, a mounter not yet
   * finalized is finalized with `outcome: 'aborted'` (a push-only flush, then its folders are
   * removed). One already finalized, or finalizing, is left as it is. Finalize `completed`
   * explicitly at a clean end: disposal cannot tell a clean end from an error.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#phase === 'finalizing' || this.#phase === 'finalized') return;
    await this.finalize({ outcome: 'aborted' });
  }

  /**
   * Each mounted store now: its last pass (time, outcome), when the next unforced `reconcile()`
   * runs, how many local changes are waiting to be pushed (as the last scan saw them), the
   * deletions not sent yet, and whether the folder is distrusted. No I/O. Empty before
   * materialize and after finalize.
   */
  status(): StoreStatus[] {
    // Due times are kept on the monotonic clock and told on the wall clock, as timestamps are.
    const wallOf = (monotonic: number) => this.#options.now() + (monotonic - this.#options.monotonicNow());
    const next = this.#phase === 'mounted' ? wallOf(this.#lastSyncAt + this.#options.syncIntervalMs) : null;
    return this.#stores.map((store) => {
      const last = this.#last.get(store.mount.path);
      const breaker = this.#breakers.get(store.mount.path) ?? CLOSED;
      const { memoryStoreId, name, path, access } = store.mount;
      return {
        memoryStoreId,
        name,
        path,
        access,
        lastPassAt: last ? isoTime(last.at) : null,
        lastOutcome: last?.outcome ?? null,
        ...(last?.code !== undefined && { lastCode: last.code }),
        ...(last?.reason !== undefined && { lastReason: last.reason }),
        nextPassDueAt: next === null ? null : isoTime(next),
        pendingLocalChanges: pendingLocalChanges(store.state, store.lastScan, last?.pulled ?? []),
        lastRequests: last ? { ...last.requests } : null,
        pendingDeletions: [...(last?.pendingDeletions ?? [])],
        distrusted: store.state.distrusted,
        backoff:
          breaker.kind === 'closed'
            ? null
            : { failures: breaker.step, nextProbeAt: isoTime(breaker.kind === 'open' ? wallOf(breaker.until) : this.#options.now()), probing: breaker.kind === 'probing' },
        unknownWrites: [...store.state.unknownWrites]
          .map(([path, sha]) => ({ path, sha }))
          .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
      };
    });
  }

  /** The events channel of one store: fills in the store and host path, forwards to the listeners. */
  private storeEvents(mount: MountedStore): StoreEvents {
    const memoryStoreId = mount.memoryStoreId;
    const hostPath = (path: string) => `${mount.path}${path}`;
    const at = (path: string) => ({ memoryStoreId, path, hostPath: hostPath(path) });
    return {
      conflictCopies: this.#options.conflictCopies,
      hostPath,
      conflict: (e) => this.emit('conflict', { ...at(e.path), ...e }),
      pulled: (e) => this.emit('pulled', { ...at(e.path), ...e }),
      pushed: (e) => this.emit('pushed', { ...at(e.path), ...e }),
      deleted: (e) => this.emit('deleted', { ...at(e.path), ...e }),
      renamed: (e) => this.emit('renamed', { ...at(e.path), ...e }),
      refused: (e) => this.emit('refused', { ...at(e.path), ...e }),
      progress: (done, total) => {
        if (this.#progressPhase) this.emit('progress', { phase: this.#progressPhase, memoryStoreId, done, total });
      },
    };
  }

  static recover(options: RecoverOptions): Promise<RecoveryReport> {
    return recoverStores(options);
  }

  /** The stores mounted by `materialize`, in resource order; empty before it and after `finalize`. */
  get mounts(): readonly MountedStore[] {
    return this.#stores.map((s) => s.mount);
  }

  /** Host paths of every mount: what a file tool may reach (the agent toolset's `allowedRoots`). */
  get roots(): readonly string[] {
    return this.mounts.map((m) => m.path);
  }

  /** Host paths of the read-only mounts: what write tools must refuse (`readOnlyRoots`). */
  get readOnlyRoots(): readonly string[] {
    return this.mounts.filter((m) => m.access === 'read_only').map((m) => m.path);
  }

  /**
   * Creates each store's folder and downloads the store into it. All or nothing: on any failure
   * every folder this call created is removed before the error is thrown.
   */
  // Generic so that inline literals with each resource type's own fields type-check.
  async materialize<R extends { type: string }>(resources: readonly R[], opts: { signal?: AbortSignal } = {}): Promise<MountedStore[]> {
    if (this.#phase !== 'new') {
      throw new MemoryLifecycleError(
        this.#phase === 'finalized' || this.#phase === 'finalizing' ? 'finalized' : 'already_materialized',
        'materialize() runs once per MemoryMounter',
      );
    }
    // Set before the first await, so a finalize arriving at any moment of materialize stops it.
    const stop = new AbortController();
    // The download's transfers all listen to it (see timeBound).
    setMaxListeners(0, stop.signal);
    this.#inFlight = stop;
    // The caller's signal stops the download like finalize does: all or nothing, download_failed.
    const unlink = linkSignal(opts.signal, stop);
    this.#progressPhase = 'materialize';
    const run = this.mountAll(resources, stop);
    this.#materializing = run;
    try {
      return await run;
    } finally {
      unlink();
      if (this.#progressPhase === 'materialize') this.#progressPhase = null;
      this.#materializing = null;
      this.#inFlight = null;
    }
  }

  private async mountAll<R extends { type: string }>(resources: readonly R[], stop: AbortController): Promise<MountedStore[]> {
    const { memoryRoot, logger } = this.#options;
    const mounts = resolveMounts(resources, memoryRoot);
    const fs = this.#fs;
    this.#phase = 'materializing';
    const created: CreatedFolder[] = [];
    const stores: StoreSync[] = [];
    try {
      if (mounts.length > 0) await checkMemoryRoot(fs, memoryRoot);
      const { stateDir } = this.#options;
      if (mounts.length > 0 && stateDir !== undefined) await checkStateDir(fs, stateDir);
      for (const mount of mounts) {
        // Before the folder exists, so no moment of it goes unrecorded (see mount-record.ts).
        const record = stateDir === undefined ? null : await beginRecord(fs, stateDir, memoryRoot, mount, logger, this.#options.deletionMode);
        if (record) this.#records.set(mount.path, record);
        const folder = await createStoreFolder(fs, memoryRoot, mount, created).catch(asMountError(mount));
        // While a pass makes the folder again, the record names no folder: the identities it
        // held are of folders that are gone, and the new ones are not known until they exist.
        // A worker killed in between leaves a record that recover follows by path (and marker),
        // as a record without identities, instead of one naming a folder that no longer exists
        // (which recover would leave, `folder_replaced`, for the operator to clear by hand).
        let remaking = false;
        stores.push(
          new StoreSync(mount, folder, {
            client: this.#client,
            logger: storeLogger(logger, mount.memoryStoreId),
            deletionMode: this.#options.deletionMode,
            concurrency: this.#options.transferConcurrency,
            pool: this.#transfers.lane(mount.memoryStoreId),
            contentBudget: this.#downloadContent.lane(mount.memoryStoreId),
            listing: { everyPasses: this.#options.fullListingEvery, everyMs: this.#options.fullListingIntervalMs },
            // A feed read that fails for as long as one request may take gives way to a full listing.
            feedBudgetMs: this.#options.requestTimeoutMs,
            now: this.#options.monotonicNow,
            // Folders it makes again were recorded at materialize, so finalize still removes them.
            recreateFolder: async () => {
              if (record) {
                remaking = true;
                await record.tryWrite();
              }
              return createStoreFolder(fs, memoryRoot, mount, []);
            },
            ...(record && {
              folderRecreated: () => {
                remaking = false;
                return record.tryWrite();
              },
              // Before each push, so a write the store may receive is in the record first.
              beforeSend: (path: string, sha: string) => record.beforeSend(path, sha),
            }),
            events: this.storeEvents(mount),
            requests: () => this.#requests.of(mount.memoryStoreId),
            ...(fs.watchDir && { watchDir: fs.watchDir.bind(fs) }),
          }),
        );
        if (record) {
          const store = stores.at(-1)!;
          record.state = () => store.recordedState();
          // The folder's identity (and its way's) from now on, so recover never takes another
          // folder at the path for it; the current folder's, should a pass make it again.
          record.identities = () => (remaking ? null : store.folder.mountPathIdentities());
          await record.tryWrite();
        }
      }
      // The download is bounded like a pass; finalize() may stop it sooner through `stop`.
      const bound = timeBound('syncTimeout', this.#options.syncTimeoutMs, stop);
      let results: PromiseSettledResult<unknown>[];
      let firstFailed = -1;
      try {
        results = await Promise.allSettled(
          stores.map((store, i) =>
            store.download(bound.signal, { materializing: true }).catch((err: unknown) => {
              // All or nothing: one store that cannot be downloaded (a 403, say) fails the whole
              // materialize, so the others stop now instead of downloading for nothing.
              if (firstFailed < 0 && !stop.signal.aborted) {
                firstFailed = i;
                stop.abort(new Error(`stopped: store ${store.mount.memoryStoreId} could not be downloaded`));
              }
              throw err;
            }),
          ),
        );
      } finally {
        bound.clear();
      }
      // Stopped after the last call answered: all or nothing still holds, nothing is kept.
      if (bound.signal.aborted && stores.length > 0 && results.every((r) => r.status === 'fulfilled')) {
        results = [{ status: 'rejected', reason: bound.signal.reason }];
      }
      const failed = firstFailed >= 0 ? firstFailed : results.findIndex((r) => r.status === 'rejected');
      if (failed >= 0) {
        const store = stores[failed]!.mount;
        const cause = (results[failed] as PromiseRejectedResult).reason;
        throw new MemoryMountError(
          'download_failed',
          `store ${store.memoryStoreId} could not be downloaded into ${store.mountPath}: ${describe(cause)}`,
          { memoryStoreId: store.memoryStoreId, path: store.path, cause },
        );
      }
      // The baseline is recorded before the agent gets the folders: from here on a crash leaves
      // folders that recover() final-syncs instead of removing unsynced.
      await this.recordMounted();
    } catch (err) {
      if (this.#phase === 'materializing') this.#phase = 'new';
      const cleanup = { removed: [] as string[], leftInPlace: [] as FinalizeReport['leftInPlace'] };
      // The folders' cached handles go back before anything is removed: a materialize that ran
      // out of descriptors (EMFILE) gets them for its own cleanup.
      await Promise.all(stores.map((store) => store.folder.release()));
      await this.removeFolders(created, cleanup, false, stores);
      await this.dropRecords(created, cleanup.leftInPlace);
      await closeFolders(stores, created);
      throw namingLeftovers(err, cleanup.leftInPlace);
    }
    this.#stores = stores;
    this.#created = created;
    // A finalize that arrived meanwhile keeps its phase: reconcile stays refused.
    if (this.#phase === 'materializing') this.#phase = 'mounted';
    this.#lastSyncAt = this.#options.monotonicNow();
    const downloadedAt = this.#options.now();
    // Nothing was sent to these stores before their download: its requests are all there are.
    for (const store of stores) {
      this.#last.set(store.mount.path, { at: downloadedAt, outcome: 'downloaded', pendingDeletions: [], pulled: [], requests: this.#requests.of(store.mount.memoryStoreId) });
    }
    for (const store of stores) {
      logger.info('mounted', { memory_store_id: store.mount.memoryStoreId, path: store.mount.path, memories: store.state.baseline.size });
    }
    for (const store of stores) this.announceDownload(store);
    return [...this.mounts];
  }

  /**
   * One `pulled` event (`reason: 'download'`) per memory materialize wrote, in path order. Told
   * only once every store has downloaded: a materialize that fails removes what it wrote, and
   * a listener must not have been told of files the agent never gets. The baseline is what was
   * written; its ids (memory and version) come from the listing the download used.
   */
  private announceDownload(store: StoreSync): void {
    // Nobody listening: no event is built (eight stores of 2,000 would sort and build 16,000).
    if (this.listenerCount('pulled') === 0) return;
    const { memoryStoreId, path: root } = store.mount;
    const { baseline, baselineIds } = store.state;
    for (const path of [...baseline.keys()].sort()) {
      const memoryId = baselineIds.get(path);
      const sha = baseline.get(path)!;
      const versionId = store.knownVersion(path, sha);
      this.emit('pulled', {
        memoryStoreId,
        path,
        hostPath: `${root}${path}`,
        sha,
        reason: 'download',
        ...(memoryId !== undefined && { memoryId }),
        ...(versionId !== undefined && { versionId }),
      });
    }
  }

  /**
   * One sync of every store, if `memory_sync_interval` has passed since the last one (or `force`).
   * Returns `null` when skipped, or when an unforced call's pass is still running after
   * `syncWait` (it goes on in the background; the next call joins it). Never throws for store,
   * network or file problems: they are in the report and the log.
   */
  reconcile(opts: { force?: boolean; signal?: AbortSignal } = {}): Promise<SyncReport | null> {
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
    if (this.#phase === 'finalizing' || this.#phase === 'finalized') {
      return Promise.reject(new MemoryLifecycleError('finalized', 'reconcile() after finalize()'));
    }
    if (this.#phase !== 'mounted') {
      return Promise.reject(new MemoryLifecycleError('not_materialized', 'reconcile() before materialize() finished'));
    }
    // A pass already running is shared: the signal ends this call's wait, not the others' pass.
    if (this.#running) return this.held(this.#running, opts);
    const started = this.#options.monotonicNow();
    if (!opts.force && started - this.#lastSyncAt < this.#options.syncIntervalMs) return Promise.resolve(null);
    this.#lastSyncAt = started;
    const bound = timeBound('syncTimeout', this.#options.syncTimeoutMs);
    // A pass this call started is cut off by its signal as by the time bound: the call resolves
    // promptly with the report of what was done.
    const unlink = linkSignal(opts.signal, bound.controller);
    this.#inFlight = bound.controller;
    const run = this.syncAll(
      { now: started, graceMs: this.#options.deleteGraceMs, settleMs: this.#options.newFileSettleMs, pushOnly: false, signal: bound.signal },
      opts.force === true,
      true,
    );
    this.#running = run.finally(() => {
      unlink();
      bound.clear();
      this.#inFlight = null;
      this.#running = null;
    });
    // This call's signal cuts the pass itself (linked above): the call then resolves with the report.
    return this.held(this.#running, { force: opts.force === true });
  }

  /**
   * What a reconcile call waits for: a forced one, the pass (bounded by `syncTimeout`); an
   * unforced one (a tool call's), the pass or `syncWait`, whichever ends first, then `null` while
   * the pass goes on. Its own signal ends the wait, never the pass.
   */
  private held(pass: Promise<SyncReport>, opts: { force?: boolean; signal?: AbortSignal }): Promise<SyncReport | null> {
    const waited = opts.force ? pass : raceTimeout(pass, this.#options.syncWaitMs);
    return opts.signal ? raceSignal(waited, opts.signal) : waited;
  }

  /**
   * Ends the session's mounts: `completed` runs a final sync (deletion grace waived) then a
   * push-only flush; `aborted` only the flush. A pass or materialize still running is stopped
   * first. All of it shares one `finalSyncTimeout` deadline from this call. Then the folders this
   * mounter created are removed, unless their marker check fails. Resolves within
   * `finalSyncTimeout` + about 1 s of wind-down, plus the folder removal.
   */
  async finalize(opts: { outcome?: 'completed' | 'aborted'; signal?: AbortSignal } = {}): Promise<FinalizeReport> {
    const outcome = opts.outcome ?? 'completed';
    if (outcome !== 'completed' && outcome !== 'aborted') {
      throw new TypeError(`finalize outcome must be 'completed' or 'aborted'; got ${JSON.stringify(outcome)}`);
    }
    if (this.#phase === 'finalizing' || this.#phase === 'finalized') {
      throw new MemoryLifecycleError('finalized', 'finalize() was already called');
    }
    this.#phase = 'finalizing';
    // One deadline for everything below, from this call.
    const deadline = timeBound('finalSyncTimeout', this.#options.finalSyncTimeoutMs);
    // The caller's signal cuts finalize short as the deadline does: the pass running stops, the
    // ones not started are skipped, and finalize goes on to remove the folders (what was not
    // pushed is named in `unpushed`, and kept with keepUnpushed).
    const unlink = linkSignal(opts.signal, deadline.controller, 'finalize() signal aborted');
    this.#progressPhase = 'finalize';
    const report: FinalizeReport = {
      outcome,
      sync: null,
      flush: { startedAt: isoTime(this.#options.now()), finishedAt: isoTime(this.#options.now()), forced: true, stores: [] },
      timedOut: { sync: false, flush: false },
      unpushed: [],
      removed: [],
      leftInPlace: [],
    };
    try {
      // A materialize or a pass still running is stopped, not waited for: the final sync does its
      // work anyway. Its wind-down is bounded (ABORT_SETTLE_MS), and by the deadline too.
      this.#inFlight?.abort(new Error('stopped by finalize()'));
      const stopping = Promise.allSettled([this.#materializing, this.#running, this.#straggling]);
      await untilAborted(stopping, deadline.signal);
      if (this.#stores.length > 0) await this.finalStages(outcome, report, deadline.signal);
    } finally {
      unlink();
      deadline.clear();
      this.#progressPhase = null;
      this.#phase = 'finalized';
    }
    for (const { mount } of this.#stores) {
      const left = report.leftInPlace.find((l) => l.path === mount.path);
      this.#options.logger[left || report.timedOut.sync || report.timedOut.flush ? 'warn' : 'info']('finalized', {
        memory_store_id: mount.memoryStoreId,
        path: mount.path,
        outcome,
        removed: report.removed.includes(mount.path),
        ...(left && { left_in_place: left.reason }),
        timed_out: report.timedOut,
      });
    }
    // The folders are gone (or no longer ours to write): nothing is mounted any more.
    await closeFolders(this.#stores, this.#created);
    this.#stores = [];
    return report;
  }

  /** Every record moves to `mounted`, with the downloaded baseline; throws when one cannot be written. */
  private async recordMounted(): Promise<void> {
    for (const record of this.#records.values()) {
      record.phase = 'mounted';
      try {
        await record.write();
      } catch (err) {
        const { memoryStoreId } = record.mount;
        throw new MemoryMountError(
          'state_dir_unusable',
          `store ${memoryStoreId}: its crash-recovery record could not be written in ${record.stateDir} (${errorCode(err) ?? describe(err)})`,
          { memoryStoreId, path: record.stateDir, cause: err },
        );
      }
    }
  }

  /**
   * After a failed materialize: each record goes unless its folder is still there (a removal
   * that failed), which keeps its `materializing` record so recover() can remove it. A folder
   * this mounter did not make (it lost a race for the path) is not its record's.
   */
  private async dropRecords(created: readonly CreatedFolder[], leftInPlace: FinalizeReport['leftInPlace']): Promise<void> {
    for (const [path, record] of this.#records) {
      const ours = created.some((c) => c.path === path);
      const left = ours && leftInPlace.some((l) => l.path === path) && (await this.#fs.lstat(path).catch(() => null)) !== null;
      await record.retire({ remove: !left });
    }
    this.#records.clear();
  }

  /** After a pass: each store's record takes its state now. Failures are logged, never thrown. */
  private async recordAll(): Promise<void> {
    await Promise.all([...this.#records.values()].map((record) => record.tryWrite()));
  }

  private async finalStages(outcome: 'completed' | 'aborted', report: FinalizeReport, deadline: AbortSignal): Promise<void> {
    // Both final passes waive the grace period and share the deadline: once it has passed, a pass
    // starts nothing and is reported cut off at once, so the two never add up past it. The final
    // sync always lists each store in full; the flush after it reuses what that listing (and the
    // sync's own writes) taught, so a finalize reads each store once.
    const finalPass = (pushOnly: boolean, remote: PassOptions['remote']) =>
      this.syncAll(finalPassOptions(this.#options.monotonicNow(), deadline, pushOnly, remote), true, false);
    // Each scan replaces `lastScan`: the same object afterwards means no final scan finished.
    const scanBefore = new Map(this.#stores.map((store) => [store, store.lastScan]));
    if (outcome === 'completed') {
      report.sync = await finalPass(false, 'full');
      report.timedOut.sync = deadline.aborted;
    }
    report.flush = await finalPass(true, outcome === 'completed' ? 'reuse' : 'auto');
    report.timedOut.flush = deadline.aborted;
    for (const s of report.flush.stores) {
      const store = this.#stores.find((candidate) => candidate.mount.memoryStoreId === s.memoryStoreId);
      if (!store) continue;
      for (const u of unpushedChanges(s, store.state.baseline, store.lastScan, store.state.baselineIds)) report.unpushed.push({ memoryStoreId: s.memoryStoreId, ...u });
    }
    // Cut short (the deadline, or the caller's signal) before any final scan of a folder ended:
    // what changed there since the last pass was never seen, so nothing can be named and the
    // folder is not known to hold nothing new. It is kept unread, like one the scan could not
    // read (SPEC 6.6), instead of going with edits no report mentions.
    if (deadline.aborted) {
      for (const store of this.#stores) {
        const { memoryStoreId, access } = store.mount;
        if (access !== 'read_write' || store.state.distrusted || store.lastScan !== scanBefore.get(store)) continue;
        if (report.unpushed.some((u) => u.memoryStoreId === memoryStoreId && u.path === '/')) continue;
        report.unpushed.push({
          memoryStoreId,
          path: '/',
          code: 'folder_unreadable',
          reason: 'finalize was cut short before its scan of the store folder ended: what changed there since the last pass is unknown',
        });
      }
    }
    // keepUnpushed: a store folder with unpushed changes stays (with the folders that hold it).
    // One holding something the final scans could not read stays whatever the option says: its
    // content is unknown, and removing it unread could remove the agent's only copy (SPEC 6.6).
    const unpushedOf = (s: StoreSync) => report.unpushed.filter((u) => u.memoryStoreId === s.mount.memoryStoreId);
    const unread = new Set(this.#stores.filter((s) => s.mount.access === 'read_write' && keptUnread(unpushedOf(s))));
    const kept = this.#stores.filter((s) => unread.has(s) || (this.#options.keepUnpushed && s.mount.access === 'read_write' && unpushedOf(s).length > 0));
    warnUnpushed(this.#options.logger, report, new Set(kept.map((s) => s.mount.memoryStoreId)));
    const keptPaths = kept.map((s) => s.mount.path);
    const removable = this.#created.filter((c) => !keptPaths.some((path) => isWithin(c.path, path)));
    await this.removeFolders(removable, report, true, this.#stores);
    for (const store of kept) {
      const unpushed = unpushedOf(store);
      const withRecord = this.#records.has(store.mount.path) ? ' with its state record' : '';
      report.leftInPlace.push(
        unread.has(store)
          ? {
              path: store.mount.path,
              code: 'unreadable_kept',
              reason: `${unpushed.filter((u) => keptUnread([u])).length} path(s) could not be read, so their content is unknown; kept${withRecord} for MemoryMounter.recover()`,
            }
          : {
              path: store.mount.path,
              code: 'unpushed_kept',
              reason: `keepUnpushed: ${unpushed.length} local change(s) not pushed; kept${withRecord} for MemoryMounter.recover()`,
            },
      );
    }
    // A record goes with its folder and stays with a folder left in place, for recover().
    for (const [path, record] of this.#records) {
      await record.retire({ remove: !report.leftInPlace.some((l) => l.path === path) });
    }
    this.#records.clear();
  }

  /**
   * Throws MemoryWriteRefusedError when a write/edit tool must not write `hostPath` (a read-only store, or
   * 6.1). The path is judged where the kernel would take it: resolved component by component,
   * symlinks followed, through the FileSystem's `readLinkSync`. A FileSystem without it gets a
   * lexical check that refuses any `..` under `memoryRoot` instead. The error carries the path
   * as given.
   */
  checkWrite(hostPath: string): void {
    const root = this.#options.memoryRoot;
    // Relative paths are the process's, as for open(2); joined, not normalised: `..` is resolved below.
    const given = hostPath.startsWith('/') ? hostPath : `${process.cwd()}/${hostPath}`;
    const fs = this.#fs;
    let path: string;
    let realRoot: string;
    if (fs.readLinkSync) {
      const readLink: ReadLink = (p) => fs.readLinkSync!(p);
      try {
        path = resolveKernelPath(given, readLink);
        // The root too: a link above it (macOS's /tmp, say) must not make its stores unrecognisable.
        realRoot = resolveKernelPath(root, readLink);
      } catch (err) {
        // A loop (ELOOP) or an unreadable folder on the way: the kernel would not write there
        // either, and nothing says where it would land, so the guard fails closed.
        throw new MemoryWriteRefusedError(
          hostPath,
          'outside_store',
          `${hostPath} cannot be resolved (${errorCode(err) ?? (err instanceof Error ? err.message : String(err))}), so where it lands is unknown`,
        );
      }
    } else {
      if (dotDotUnder(root, given)) {
        throw new MemoryWriteRefusedError(
          hostPath,
          'outside_store',
          `${hostPath} has a '..' segment under the memory root ${root}; this FileSystem has no readLinkSync to resolve it, so it is refused`,
        );
      }
      path = posix.resolve(given);
      realRoot = root;
    }
    // Each store's folder, as it lies under the resolved root.
    const folderOf = (m: MountedStore) => posix.join(realRoot, ...mountSegments(m.mountPath));
    const mount = this.mounts.find((m) => isWithin(folderOf(m), path));
    if (mount && path === posix.join(folderOf(mount), MARKER_FILE)) {
      // Not a memory: it binds the folder to its store, and a rewritten one makes the folder
      // untrusted for the rest of the session.
      throw new MemoryWriteRefusedError(hostPath, 'outside_store', `${hostPath} is the store marker of ${mount.mountPath}, not a memory`);
    }
    if (mount?.access === 'read_only') {
      throw new MemoryWriteRefusedError(hostPath, 'read_only', `${hostPath} is in the read-only memory store mounted at ${mount.mountPath}`);
    }
    if (!mount && isWithin(realRoot, path)) {
      throw new MemoryWriteRefusedError(
        hostPath,
        'outside_store',
        `${hostPath} is under the memory root ${root} but in no memory store; only store folders may be written there`,
      );
    }
  }

  /** Whether the store runs this pass (`run`), as a probe, or is skipped, by its breaker; sets its retry budget. */
  private breakerStart(store: StoreSync, now: number): BreakerDecision {
    const { path, memoryStoreId } = store.mount;
    const state = this.#breakers.get(path) ?? CLOSED;
    const decision = breakerDecision(state, now);
    this.#breakers.set(path, breakerStarted(state, decision));
    // The budget is a time bound like syncTimeout: real time, whatever clock the host gave.
    // A probe's one request tells whether the store is back: no retry of it.
    if (decision !== 'skip') this.#retryUntil.set(memoryStoreId, passRetryUntil(decision, performance.now(), this.#options.retryBudgetMs));
    return decision;
  }

  /** The report of a store its breaker skipped: nothing was sent, and when it is tried next. */
  private backingOff(store: StoreSync): StoreSyncReport {
    const state = this.#breakers.get(store.mount.path);
    const report = emptyReport(store.mount);
    report.status = 'skipped';
    report.code = 'backing_off';
    const failures = state?.kind === 'open' ? state.step : 0;
    const inMs = state?.kind === 'open' ? Math.max(0, state.until - this.#options.monotonicNow()) : 0;
    report.reason = `the store was unavailable (${failures} pass${failures === 1 ? '' : 'es'} in a row); next try in ${Math.ceil(inMs / 1000)} s`;
    return report;
  }

  /** The breaker after a store's pass, logged once per change of state. */
  private breakerJudge(store: StoreSync, report: StoreSyncReport): void {
    const { path } = store.mount;
    const before = this.#breakers.get(path) ?? CLOSED;
    const failure = store.lastStoreFailure;
    const verdict: PassVerdict =
      report.status === 'failed' && failure?.kind === 'unavailable'
        ? { kind: 'unavailable', ...(failure.retryAfterMs !== undefined && { retryAfterMs: failure.retryAfterMs }) }
        : report.status === 'synced' || report.status === 'redownloaded' || (report.status === 'failed' && failure !== null)
          ? { kind: 'answered' }
          : { kind: 'inconclusive' };
    const now = this.#options.monotonicNow();
    const after = breakerAfter(before, verdict, now, breakerPolicy(this.#options.syncIntervalMs), Math.random());
    this.#breakers.set(path, after);
    const logger = storeLogger(this.#options.logger, store.mount.memoryStoreId);
    if (after.kind === 'open') {
      const fields = { path, failures: after.step, retry_in_ms: after.delayMs, error: failure?.message };
      if (before.kind === 'closed') logger.warn('store unavailable: its passes are skipped, then it is probed with one request', fields);
      else logger.info('store still unavailable: the next probe is later', fields);
    } else if (after.kind === 'closed' && before.kind !== 'closed') {
      logger.info('store reachable again: syncing as usual', { path, failures: before.step });
    }
  }

  /** A wall clock set back or forward is said once: durations never depended on it. */
  private noticeWallJump(): void {
    if (this.#options.clockInjected || this.#wallJumpLogged) return;
    const now = { wall: this.#options.now(), monotonic: this.#options.monotonicNow() };
    const before = this.#clocks;
    this.#clocks = now;
    if (!before) return;
    const driftMs = now.wall - before.wall - (now.monotonic - before.monotonic);
    if (Math.abs(driftMs) < WALL_JUMP_MS) return;
    this.#wallJumpLogged = true;
    this.#options.logger.warn('the wall clock jumped; sync timing follows the monotonic clock and is unaffected', {
      jump_ms: Math.round(driftMs),
    });
  }

  /**
   * One pass over every store in parallel; a failing store never stops the others. `ordinary`
   * (a reconcile's pass): each store's circuit breaker decides whether it runs, as a probe, or
   * not at all, and its retries stop at the retry budget; finalize's passes use their whole window.
   */
  private async syncAll(pass: PassOptions, forced: boolean, ordinary: boolean): Promise<SyncReport> {
    // A cut-off pass still winding down is waited for (in the background of the agent's call:
    // it waits at most syncWait); finalize bounds this wait by its deadline.
    if (this.#straggling) await untilAborted(this.#straggling, pass.signal);
    const startedAt = this.#options.now();
    this.noticeWallJump();
    const decisions = this.#stores.map((store) => (ordinary ? this.breakerStart(store, pass.now) : 'run'));
    const requestsBefore = this.#stores.map((store) => this.#requests.of(store.mount.memoryStoreId));
    const requestsSoFar = (i: number) => requestsBetween(requestsBefore[i]!, this.#requests.of(this.#stores[i]!.mount.memoryStoreId));
    const stillWinding = this.#straggling !== null;
    const pending = this.#stores.map((store, i) =>
      stillWinding
        ? Promise.resolve(cutOffReport(store.mount, 'cut off by the time bound while the pass before it was still winding down'))
        : decisions[i] === 'skip'
          ? Promise.resolve(this.backingOff(store))
          : store.pass(decisions[i] === 'probe' ? { ...pass, probe: true } : pass),
    );
    // If a time bound fires (or already has), the passes get a moment to wind down, then are left,
    // each with the requests it had sent by then.
    const within = await passesWithin(pending, pass.signal);
    const stores = this.#stores.map((store, i) => within.reports[i] ?? { ...cutOffReport(store.mount), requests: requestsSoFar(i) });
    if (within.interrupted) {
      const straggling = Promise.allSettled(pending).then(() => {
        if (this.#straggling === straggling) this.#straggling = null;
      });
      this.#straggling = straggling;
    }
    this.#retryUntil.clear();
    if (ordinary) this.#stores.forEach((store, i) => decisions[i] !== 'skip' && this.breakerJudge(store, stores[i]!));
    await this.recordAll();
    const finishedAt = this.#options.now();
    const report: SyncReport = { startedAt: isoTime(startedAt), finishedAt: isoTime(finishedAt), forced, stores };
    for (const s of stores) {
      this.#last.set(s.path, {
        at: finishedAt,
        outcome: s.status,
        ...(s.code !== undefined && { code: s.code }),
        ...(s.reason !== undefined && { reason: s.reason }),
        pendingDeletions: [...s.pendingDeletions],
        pulled: [...s.pulled],
        requests: { ...s.requests },
      });
    }
    logSummary(this.#options.logger, report);
    if (pass.signal.aborted) warnCutOff(this.#options.logger, report, pass.signal.reason);
    return report;
  }

  private async removeFolders(
    folders: readonly CreatedFolder[],
    report: Pick<FinalizeReport, 'removed' | 'leftInPlace'>,
    checkTrust: boolean,
    stores: readonly StoreSync[],
  ): Promise<void> {
    const fs = this.#fs;
    // Deepest first: store folders before the folders that hold them.
    for (const folder of [...folders].reverse()) {
      // Matched by mount path, not store id: each StoreSync judges its own folder only.
      const store = folder.store && stores.find((s) => s.mount.path === folder.store!.path);
      const fields = { memory_store_id: folder.store?.memoryStoreId, path: folder.path };
      try {
        const refusal = checkTrust && store ? await store.removalRefusal() : null;
        if (refusal) {
          report.leftInPlace.push({ path: folder.path, reason: refusal.reason });
          this.#options.logger.warn(`store folder left in place: ${refusal.reason}`, fields);
          continue;
        }
        const outcome = await removeCreatedFolder(fs, this.#options.memoryRoot, folder, store?.folder ?? folder.folder);
        if (outcome.removed) report.removed.push(folder.path);
        else if (!outcome.gone) report.leftInPlace.push({ path: folder.path, reason: outcome.reason });
      } catch (err) {
        // A disk that fails even its checks: leave the folder, say so, and go on with the others.
        const reason = `could not be checked (${errorCode(err) ?? describe(err)})`;
        report.leftInPlace.push({ path: folder.path, reason });
        this.#options.logger.warn(`folder left in place: ${reason}`, fields);
      }
    }
  }
}

/** Lets go of every folder handle a mounter holds (closing is idempotent; a removed folder's is closed already). */
async function closeFolders(stores: readonly StoreSync[], created: readonly CreatedFolder[]): Promise<void> {
  for (const store of stores) {
    store.stopWatching();
    await store.folder.close().catch(() => {});
  }
  for (const entry of created) await entry.folder?.close().catch(() => {});
}

/**
 * Finalize removes the folders even when the flush could not push everything; say loudly which
 * local changes go with them, each with its reason, so an operator can tell a lost edit from a
 * quiet session.
 */
/**
 * `path` (absolute, not normalised) has a `..` segment and passes through `memoryRoot` or below
 * it on the way, lexically: without link information such a `..` cannot be trusted.
 */
function dotDotUnder(memoryRoot: string, path: string): boolean {
  const segments = path.split('/');
  if (!segments.includes('..')) return false;
  const at: string[] = [];
  for (const segment of segments) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') at.pop();
    else at.push(segment);
    if (isWithin(memoryRoot, `/${at.join('/')}`)) return true;
  }
  return false;
}

function warnUnpushed(logger: ResolvedOptions['logger'], report: FinalizeReport, kept: ReadonlySet<string>): void {
  for (const s of report.flush.stores) {
    if (s.access !== 'read_write') continue;
    const lost = report.unpushed.filter((u) => u.memoryStoreId === s.memoryStoreId);
    const notRun = s.status === 'failed' || (s.status === 'skipped' && s.code === 'time_bound');
    if (lost.length > 0 || notRun) {
      const msg = kept.has(s.memoryStoreId)
        ? keptUnread(lost)
          ? 'finalize: local changes not pushed, some of them unreadable; the folder is kept for MemoryMounter.recover()'
          : 'finalize: local changes not pushed; the folder is kept (keepUnpushed) for MemoryMounter.recover()'
        : 'finalize: local changes not pushed before the folder is removed';
      logger.warn(msg, {
        memory_store_id: s.memoryStoreId,
        path: s.path,
        paths: lost.map((u) => u.path),
        unpushed: lost.map(({ path, reason }) => ({ path, reason })),
        ...(notRun && { reason: s.reason }),
      });
    }
  }
}

/** A time bound cut a pass off: say which, per store, with what it kept from starting. */
function warnCutOff(logger: ResolvedOptions['logger'], report: SyncReport, reason: unknown): void {
  const bound = reason instanceof Error ? reason.message : String(reason);
  for (const s of report.stores) {
    const cut = s.cutOff.length > 0 || (s.status === 'skipped' && s.code === 'time_bound');
    if (!cut) continue;
    logger.warn('sync pass cut off by a time bound', { memory_store_id: s.memoryStoreId, path: s.path, bound, cut_off: s.cutOff });
  }
}

/**
 * Aborts `controller` when `signal` does (at once if it already has). Returns the unlink, to
 * call when the work is over so a long-lived signal does not hold the controller.
 */
function linkSignal(signal: AbortSignal | undefined, controller: AbortController, message?: string): () => void {
  if (!signal) return () => undefined;
  const abort = () => controller.abort(message ? new Error(message, { cause: signal.reason }) : signal.reason);
  if (signal.aborted) {
    abort();
    return () => undefined;
  }
  signal.addEventListener('abort', abort, { once: true });
  return () => signal.removeEventListener('abort', abort);
}

/** `work`'s result, or null once `ms` have passed without one (`work` goes on). */
function raceTimeout<T>(work: Promise<T>, ms: number): Promise<T | null> {
  return new Promise<T | null>((resolve, reject) => {
    const timer = setTimeout(() => resolve(null), ms);
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

/** `work`, or a rejection with the signal's reason as soon as it aborts. */
function raceSignal<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Waits for `work`, or until `signal` aborts, whichever comes first. */
async function untilAborted(work: Promise<unknown>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  let onAbort!: () => void;
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function logSummary(logger: ResolvedOptions['logger'], report: SyncReport): void {
  for (const s of report.stores) {
    const counts = {
      memory_store_id: s.memoryStoreId,
      status: s.status,
      pulled: s.pulled.length,
      pushed: s.pushed.length,
      deleted_local: s.deletedLocal.length,
      deleted_remote: s.deletedRemote.length,
      conflicts: s.conflicts.length,
      errors: s.errors.length,
      requests: s.requests.total,
      retries: s.requests.retries,
    };
    logger.debug('store synced', counts);
  }
}

/**
 * A failed materialize removes what it made; what it could not remove is named in the error it
 * throws (message and `leftInPlace`), so the operator knows what blocks the next session's mount.
 */
function namingLeftovers(err: unknown, leftInPlace: FinalizeReport['leftInPlace']): unknown {
  if (leftInPlace.length === 0) return err;
  const left = leftInPlace.map((l) => `${l.path} (${l.reason})`).join('; ');
  if (err instanceof MemoryMountError) {
    err.message += `; left on disk, remove before mounting there again: ${left}`;
    err.leftInPlace = leftInPlace.map(({ path, reason }) => ({ path, reason }));
  }
  return err;
}

/** Folder creation fails only with MemoryMountError: a bare disk error (ENOSPC, EIO) is wrapped. */
function asMountError(store: MountedStore): (err: unknown) => never {
  return (err) => {
    if (err instanceof MemoryMountError) throw err;
    throw new MemoryMountError(
      'mount_path_unwritable',
      `store ${store.memoryStoreId}: could not create ${store.path} (${errorCode(err) ?? describe(err)})`,
      { memoryStoreId: store.memoryStoreId, path: store.path, cause: err },
    );
  };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
