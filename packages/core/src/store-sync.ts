import { Semaphore } from 'async-mutex';
import { applyPlan } from './apply.js';
import { storeCall, StoreError } from './errors.js';
import { errorCode } from './file-system.js';
import { MARKER_FILE, MAX_MEMORY_BYTES } from './limits.js';
import { assessFolder } from './folder-trust.js';
import { readMarker, writeMarker } from './marker.js';
import { planStore, settleUnknownWrites } from './plan.js';
import { baselineIdsAfter } from './renames.js';
import type { ListingPolicy } from './remote-feed.js';
import { alignLocalCase, indexRemote } from './remote-index.js';
import { RemoteView, type RemoteReadMode } from './remote-view.js';
import type { StoreSyncReport } from './reports.js';
import { scanStore, type LocalSnapshot } from './scan.js';
import { sha256Hex } from './sha256.js';
import type { StoreClient } from './store-client.js';
import { FolderRefusal, type StoreFolder } from './store-folder.js';
import { listStore } from './store-listing.js';
import { emptySyncState, type SyncState } from './sync-state.js';
import type { LastScan } from './unpushed.js';
import type { DeletionMode, Logger, MountedStore } from './types.js';
import { encodeUtf8 } from './utf8.js';
import type { StoreEvents } from './events.js';

/** Full listings when the mounter gives no policy: every 100 passes or 10 minutes. */
const DEFAULT_LISTING_POLICY: ListingPolicy = { everyPasses: 100, everyMs: 600_000 };
const DEFAULT_FEED_BUDGET_MS = 30_000;

/** Disk errors that say this one name cannot exist here, not that the disk is failing. */
const UNPLACEABLE_CODES = new Set(['ENAMETOOLONG', 'EINVAL', 'EILSEQ', 'ENOTDIR', 'EISDIR']);

export interface StoreSyncDeps {
  client: StoreClient;
  /** Already bound to this store. */
  logger: Logger;
  deletionMode: DeletionMode;
  /** Size of the pool when none is given. */
  concurrency: number;
  /** The session's pool of transfers, shared by all its stores. */
  pool?: Semaphore;
  /** When passes list the store in full rather than read the change feed. */
  listing?: ListingPolicy;
  /** How long (ms) a feed read may take before the pass lists in full instead. */
  feedBudgetMs?: number;
  /** The mounter's clock (ms), for the full-listing interval. Default `Date.now`. */
  now?: () => number;
  /** Makes the store folder again (and any folder above it, up to memoryRoot) with its marker. */
  recreateFolder: () => Promise<StoreFolder>;
  /** Events of this store (`mounter.on`); absent: none. */
  events?: StoreEvents;
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
}

/**
 * One store's side of the mounter: its state between passes, the full download, and one
 * scan -> plan -> apply pass. I/O happens here and in the executor; decisions in the planner
 * and the folder-trust check, which are pure.
 */
export class StoreSync {
  readonly state: SyncState = emptySyncState();
  /** The last trusted scan, so finalize can name local changes a failed flush never pushed. */
  lastScan: LastScan | null = null;
  /** Whether the disk under this store folds case (/A.md and /a.md one file); probed at download. */
  #caseInsensitive = false;
  /** The confined store folder: all disk access of this store goes through it. */
  #folder: StoreFolder;
  /** The store's side as known between passes, kept current by the change feed. */
  readonly #remote: RemoteView;
  readonly #pool: Semaphore;

  constructor(
    readonly mount: MountedStore,
    folder: StoreFolder,
    private readonly deps: StoreSyncDeps,
  ) {
    this.#folder = folder;
    this.#pool = deps.pool ?? new Semaphore(deps.concurrency);
    this.#remote = new RemoteView({
      client: deps.client,
      storeId: mount.memoryStoreId,
      logger: deps.logger,
      policy: deps.listing ?? DEFAULT_LISTING_POLICY,
      feedBudgetMs: deps.feedBudgetMs ?? DEFAULT_FEED_BUDGET_MS,
    });
  }

  get folder(): StoreFolder {
    return this.#folder;
  }

  /**
   * Downloads the whole store into its (existing) folder and makes that the baseline. Throws
   * on the first failure; what was written before it stays in the baseline.
   */
  async download(signal: AbortSignal): Promise<{ written: string[]; skipped: { path: string; reason: string }[] }> {
    const { client, logger } = this.deps;
    const folder = this.#folder;
    const storeId = this.mount.memoryStoreId;
    // Whatever happens below, no earlier baseline may outlive this download: files gone from a
    // wiped folder must never read as the agent's deletions if the listing fails part-way.
    this.state.baseline.clear();
    this.state.baselineIds.clear();
    this.state.missingSince.clear();
    this.state.scanCache.clear();
    this.#remote.forget();
    // The marker exists now: if its name in upper case finds it too, the disk ignores case.
    this.#caseInsensitive = (await folder.stat(`/${MARKER_FILE.toUpperCase()}`)) !== null;
    const startedMs = performance.now();
    const listed = await listStore(client, storeId, { withContent: true, signal, pool: this.#pool });
    this.#remote.adoptListing(listed, { startedMs, endedMs: performance.now() }, (this.deps.now ?? Date.now)());
    const { remote, skipped } = indexRemote(listed, { caseInsensitiveDisk: this.#caseInsensitive });
    for (const { path, reason } of skipped) this.warnOnce(`remote:${path}:${reason}`, `remote memory skipped: ${reason}`, { path });
    const byPath = new Map(listed.map((m) => [m.path, m]));

    const written: string[] = [];
    const unmountable: { path: string; reason: string }[] = [];
    const skipMemory = (path: string, reason: string, fields: Record<string, unknown> = {}) => {
      unmountable.push({ path, reason });
      this.warnOnce(`unmountable:${path}:${reason}`, `remote memory not written: ${reason}`, { path, ...fields });
    };
    const slots = this.#pool;
    const progress = countProgress(this.deps.events, remote.size);
    await Promise.all(
      [...remote.keys()].map((path) =>
        slots.runExclusive(async () => {
          signal.throwIfAborted();
          let memory = byPath.get(path)!;
          if ((memory.content_size_bytes ?? 0) > MAX_MEMORY_BYTES) {
            return skipMemory(path, `it is ${memory.content_size_bytes} bytes, over the ${MAX_MEMORY_BYTES}-byte limit`);
          }
          if (typeof memory.content !== 'string') memory = await storeCall(client.get(storeId, memory.id, { signal }));
          const bytes = encodeUtf8(memory.content ?? '');
          if (bytes.byteLength > MAX_MEMORY_BYTES) {
            return skipMemory(path, `it is ${bytes.byteLength} bytes, over the ${MAX_MEMORY_BYTES}-byte limit`);
          }
          if (typeof memory.content !== 'string' || sha256Hex(bytes) !== memory.content_sha256) {
            throw new StoreError('rejected', `the store returned content for ${path} that does not match its sha256`);
          }
          try {
            // A fresh folder holds nothing, so anything here is a name clash (a case-insensitive
            // disk, or a file/folder overlap): never write over it.
            await folder.write(path, bytes, { onlyIfAbsent: true });
          } catch (err) {
            // One memory that cannot be placed (a folder on its way replaced, a name the disk
            // refuses) never fails the whole download: it is skipped and reported.
            if (err instanceof FolderRefusal) return skipMemory(path, `its place on disk is taken: ${err.message}`);
            const code = errorCode(err);
            if (code && UNPLACEABLE_CODES.has(code)) return skipMemory(path, `the disk refused it (${code})`);
            throw err;
          }
          this.state.baseline.set(path, memory.content_sha256);
          this.state.baselineIds.set(path, memory.id);
          written.push(path);
        }).finally(progress),
      ),
    );
    folder.release();
    logger.debug('downloaded', { path: this.mount.path, memories: written.length });
    return { written: written.sort(), skipped: [...skipped, ...unmountable] };
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
    this.state.scanCache.clear();
    this.#caseInsensitive = (await this.#folder.stat(`/${MARKER_FILE.toUpperCase()}`)) !== null;
    this.#folder.release();
  }

  async pass(opts: PassOptions): Promise<StoreSyncReport> {
    const report = emptyReport(this.mount);
    try {
      await this.runPass(opts, report);
    } catch (err) {
      // Everything below is caught per action; reaching here means the pass could not run.
      report.status = opts.signal.aborted ? 'skipped' : 'failed';
      report.reason = opts.signal.aborted ? 'cut off by the time bound' : describe(err);
      if (!opts.signal.aborted) this.deps.logger.warn('sync failed for this store', { path: this.mount.path, error: report.reason });
    } finally {
      this.#folder.release();
    }
    return report;
  }

  private async runPass(opts: PassOptions, report: StoreSyncReport): Promise<void> {
    const { client, logger } = this.deps;
    const { state, mount } = this;
    this.#remote.beginPass();
    if (state.distrusted) {
      report.status = 'skipped';
      report.reason = `folder not trusted: ${state.distrusted}`;
      return;
    }
    opts.signal.throwIfAborted();

    const scanned = await scanStore(this.#folder, mount.memoryStoreId, state.scanCache);
    let snapshot = this.inStoreSpelling(scanned, state.baseline.keys());
    // Files already known missing (deletion candidates) are not expected on disk: a folder
    // emptied one deletion at a time is not a wipe.
    const expectedOnDisk = [...state.baseline.keys()].filter((path) => !state.missingSince.has(path));
    const verdict = assessFolder(snapshot, new Set(expectedOnDisk), new Set(expectedOnDisk.map((path) => state.baseline.get(path)!)));
    switch (verdict.kind) {
      case 'distrusted':
        state.distrusted = verdict.reason;
        logger.warn(`folder left exactly as found and never synced again: ${verdict.reason}`, { path: mount.path });
        report.status = 'skipped';
        report.reason = `folder not trusted: ${verdict.reason}`;
        return;
      case 'unreadable':
        report.status = 'failed';
        report.reason = verdict.reason;
        logger.warn(`sync skipped: ${verdict.reason}`, { path: mount.path });
        return;
      case 'redownload':
        if (opts.pushOnly) {
          this.keepScan(snapshot); // files made since the wipe are not pushed: finalize names them
          report.status = 'skipped';
          report.reason = `${verdict.reason}; a push-only flush does not re-download`;
          return;
        }
        logger.warn(`re-downloading the store: ${verdict.reason}`, { path: mount.path });
        // What is on disk now was made since the wipe (no baseline file is left): all of it is
        // new. Kept so that a re-download cut off before it ends still lets finalize name it.
        this.keepScan(snapshot, new Map());
        if (snapshot.root === 'missing') {
          await this.#folder.close();
          this.#folder = await this.deps.recreateFolder();
        } else if (snapshot.marker !== 'ok') await writeMarker(this.#folder, mount.memoryStoreId);
        {
          const { written, skipped } = await this.download(opts.signal);
          report.pulled = written;
          report.skippedPaths.push(...skipped);
        }
        report.status = 'redownloaded';
        report.reason = verdict.reason;
        return;
      case 'trusted':
        break;
    }
    this.keepScan(snapshot);

    for (const [path, reason] of snapshot.blocked) {
      report.skippedPaths.push({ path, reason });
      this.warnOnce(`blocked:${path}:${reason}`, `left alone: ${reason}`, { path });
    }
    // A write of unknown outcome is settled by what the store now holds: never by a reused view.
    const mode = opts.remote === 'reuse' && state.unknownWrites.size > 0 ? 'auto' : (opts.remote ?? 'auto');
    const read = await this.#remote.read({ mode, now: opts.now, signal: opts.signal, caseInsensitive: this.#caseInsensitive });
    logger.debug('remote side read', { path: mount.path, source: read.source });
    const { remote, skipped } = read.index;
    snapshot = this.inStoreSpelling(scanned, [...remote.keys(), ...state.baseline.keys()]);
    for (const { path, reason } of skipped) {
      report.skippedPaths.push({ path, reason });
      this.warnOnce(`remote:${path}:${reason}`, `remote memory skipped: ${reason}`, { path });
    }

    state.baseline = settleUnknownWrites(state.baseline, state.unknownWrites, remote);
    state.unknownWrites.clear();
    const plan = planStore({
      access: mount.access,
      deletionMode: this.deps.deletionMode,
      now: opts.now,
      graceMs: opts.graceMs,
      pushOnly: opts.pushOnly,
      // The host clock, as file mtimes are: `now` may be a test's clock.
      settleAfter: opts.settleMs > 0 ? Date.now() - opts.settleMs : null,
      baseline: state.baseline,
      baselineIds: state.baselineIds,
      localFiles: snapshot.files,
      localBlocked: snapshot.blocked,
      remote,
      missingSince: state.missingSince,
      refused: state.refused,
    });
    state.missingSince = plan.missingSince;
    report.pendingDeletions.push(...plan.pendingDeletions);
    for (const entry of plan.skipped) if (!snapshot.blocked.has(entry.path)) report.skippedPaths.push(entry);

    await applyPlan(
      {
        folder: this.#folder,
        client,
        memoryStoreId: mount.memoryStoreId,
        logger,
        state,
        report,
        signal: opts.signal,
        concurrency: this.deps.concurrency,
        ...(this.deps.events && { events: this.deps.events }),
        slots: this.#pool,
        onRemote: (change) => this.#remote.learn(change),
      },
      plan.actions,
    );
    // What the store holds now (the listing, plus this pass's own writes and fetches) names the
    // memory behind each baseline path, for the next pass's rename detection.
    state.baselineIds = baselineIdsAfter(state.baseline, state.baselineIds, this.#remote.known(this.#caseInsensitive).remote);
  }

  private keepScan(snapshot: LocalSnapshot, baseline: ReadonlyMap<string, string> = this.state.baseline): void {
    this.lastScan = { files: snapshot.files, blocked: snapshot.blocked, baseline: new Map(baseline) };
  }

  /** On a case-insensitive disk, local paths renamed to the spelling of the memories they hold. */
  private inStoreSpelling(snapshot: LocalSnapshot, known: Iterable<string>): LocalSnapshot {
    if (!this.#caseInsensitive) return snapshot;
    const paths = [...known];
    return { ...snapshot, files: alignLocalCase(snapshot.files, paths), blocked: alignLocalCase(snapshot.blocked, paths) };
  }

  /** Why finalize must leave this store's folder in place, or null when it may go. */
  async removalRefusal(): Promise<string | null> {
    const distrust = this.state.distrusted && `folder not trusted: ${this.state.distrusted}`;
    if ((await this.#folder.locate()) !== 'directory') return distrust || null;
    // An empty folder holds nothing of anyone's: it is provably the one made here, whatever
    // happened to its marker, and leaving it would refuse the next session (SPEC 4.4).
    if ((await this.#folder.topLevelNames()).length === 0) return null;
    if (distrust) return distrust;
    const marker = await readMarker(this.#folder, this.mount.memoryStoreId);
    return marker === 'ok' ? null : `marker check failed (${marker})`;
  }

  private warnOnce(key: string, msg: string, fields: Record<string, unknown>): void {
    if (this.state.warned.has(key)) return;
    this.state.warned.add(key);
    this.deps.logger.warn(msg, fields);
  }
}

/** A callback that counts one more memory done of `total`, for the progress event. */
function countProgress(events: StoreEvents | undefined, total: number): () => void {
  let done = 0;
  events?.progress(0, total);
  return () => events?.progress(++done, total);
}

export function emptyReport(mount: MountedStore): StoreSyncReport {
  return {
    memoryStoreId: mount.memoryStoreId,
    name: mount.name,
    path: mount.path,
    access: mount.access,
    status: 'synced',
    pulled: [],
    pushed: [],
    deletedLocal: [],
    deletedRemote: [],
    renamed: [],
    conflicts: [],
    refused: [],
    pendingDeletions: [],
    skippedPaths: [],
    errors: [],
    cutOff: [],
  };
}

function describe(err: unknown): string {
  // Every store call reaches here as a StoreError (storeCall, listAll); anything else is the disk's.
  if (err instanceof StoreError) return `store ${err.kind}: ${err.message}`;
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  return code ? `filesystem ${code}: ${message}` : message;
}
