import { asStoreError, listAll } from '../model/errors.js';
import {
  checkListingAtOnce,
  chooseRead,
  contentWindow,
  emptyFeedState,
  foldVersions,
  forgetMemories,
  formatTimestamp,
  fetchContradictsListing,
  keepGone,
  landedThenDeleted,
  learnChange,
  stateFromListing,
  type FeedDoubtCode,
  type GoneMemory,
  type FullListingReason,
  type KnownMemory,
  type ListedMemory,
  type ListingPolicy,
  type ReadTimes,
  type RemoteChange,
  type RemoteFeedState,
} from '../decide/feed-fold.js';
import { indexRemote, type RemoteIndex } from '../decide/remote-index.js';
import { fanOutPays, listStore } from './store-listing.js';
import type { StoreClient, StoreMemoryVersion } from './store-client.js';
import type { Logger } from '../model/types.js';
import type { TransferSlots } from './fair-slots.js';
import type { AbsenceEvidence } from '../decide/absence.js';
import { CARRY_BUDGET_BYTES, LIST_PAGE_SIZE_WITH_CONTENT, MAX_MEMORY_BYTES } from '../model/limits.js';
import { sha256Hex } from '../model/sha256.js';
import { encodeUtf8 } from '../model/utf8.js';

/**
 * The most versions a feed read takes with their content (the full view: 5 pages of 20, as many
 * versions as one basic page holds). A read holding more is walked again in basic pages, and
 * the pulls its content did not cover fetch their memory one by one.
 */
export const FEED_CONTENT_MAX_VERSIONS = 100;

/**
 * Content a read carried, by its sha256 (checked here): a pull of a memory that holds that sha
 * writes it instead of fetching the memory. Keyed by sha alone, since content is what its hash
 * names whichever memory or version it came with.
 */
export type CarriedRemoteContent = ReadonlyMap<string, string>;

/** How a pass learns the store's side: `auto` (the feed when it can), `full` (list it), `reuse` (what the last pass learned). */
export type RemoteReadMode = 'auto' | 'full' | 'reuse';

/** Where a pass's view of the store came from. */
export type RemoteSource =
  | { kind: 'feed'; versions: number; changed: number; withContent: boolean }
  | { kind: 'listing'; reason: FullListingReason; memories: number }
  | { kind: 'reused' };

export interface RemoteViewDeps {
  client: StoreClient;
  storeId: string;
  /** Bound to the store. */
  logger: Logger;
  policy: ListingPolicy;
  /**
   * How long (ms) one feed read may take, its retries included, before the pass gives up on it
   * for a full listing.
   */
  feedBudgetMs: number;
  /** The host's monotonic clock in ms (`performance.now` unless a test gives one). */
  monotonicMs?: () => number;
  /**
   * The session's pool of transfers: with it (and a client with `listFolder`), a full listing
   * of a store known to span many pages fans out by folder, each folder's walk holding a slot.
   */
  pool?: TransferSlots;
}

/** Kinds of failure that say the feed is not for this session (or not this way): it is not asked again. */
const REFUSALS = new Set(['unauthorized', 'not_found', 'rejected']);

/**
 * One store's remote side as the engine knows it between passes, and the I/O that keeps it
 * current: a feed read (one request when nothing changed) folded in by feed-fold.ts, or a full
 * listing when the cadence, a doubt or a failure of the feed calls for one. Every read ends in the
 * same `indexRemote` as a listing always did, so path rules, case-insensitive twins and
 * file/folder overlaps are judged alike whichever way the memories were learned.
 */
export class RemoteView {
  #state: RemoteFeedState = emptyFeedState();
  /** The planner's index of `#state.memories`, built on demand and kept until they change. */
  #index: { caseInsensitive: boolean; index: RemoteIndex } | null = null;
  /** Why the feed is never read again this session; `null` while it may be. */
  #refused: string | null = null;
  /** Why the next read must be a full listing (the store contradicted the view); `null`: no such reason. */
  #distrusted: string | null = null;
  /** Why the next read of the store must be a full listing, though what this pass read may be reused; `null`: no such reason. */
  #listingWanted: string | null = null;
  /** Full listings this view has rested on, this session: the serial of the one it rests on now. */
  #listings = 0;
  #passesSinceFull = 0;
  #lastFullAt: number | null = null;
  /** The current pass read the store (or learned it by download): the next one may reuse that. */
  #readThisPass = false;
  /** The pass before this one read the store: a `reuse` read may take what it learned. */
  #reusable = false;
  /**
   * Versions the next feed read is expected to hold that are known already, beyond `seen`: this
   * session's own writes since the last read, and after a listing the memories it showed
   * changed within the overlap. Many of them make a read with content a waste (see #readFeed).
   */
  #knownAhead = 0;
  readonly #deps: RemoteViewDeps;
  readonly #monotonicMs: () => number;

  constructor(deps: RemoteViewDeps) {
    this.#deps = deps;
    this.#monotonicMs = deps.monotonicMs ?? (() => performance.now());
  }

  /** Starts a pass: what the previous pass read may be reused by this one, and only this one. */
  beginPass(): void {
    this.#reusable = this.#readThisPass;
    this.#readThisPass = false;
  }

  /** The store's content is unknown (a wiped folder, a download about to start): the next read lists it. */
  forget(): void {
    this.#state = forgetMemories(this.#state);
    this.#index = null;
    this.#readThisPass = false;
    this.#reusable = false;
  }

  /**
   * The store contradicted the view (a write failed `not_found`, `precondition_failed` or
   * `path_conflict`): the next read lists in full, and nothing this pass read is reused.
   */
  distrust(reason: string): void {
    this.#distrusted = reason;
    this.#readThisPass = false;
    this.#reusable = false;
  }

  /**
   * Files were kept whose memories the last listing missed (absence.ts): the next read of the
   * store lists it in full, to confirm or refute those absences. Unlike `distrust`, what this
   * pass read may still be reused (the flush after the final sync deletes nothing).
   */
  wantListing(reason: string): void {
    this.#listingWanted = reason;
  }

  /** What the view knows that corroborates a memory's absence, for the planner (absence.ts). */
  absenceEvidence(): Omit<AbsenceEvidence, 'absentFrom'> {
    const { gone } = this.#state;
    return {
      gone,
      held: this.#state.memories,
      listing: this.#listings,
      landedThenDeleted: (path, sha) => landedThenDeleted(gone, path, sha),
      // Absent while nothing is known gone: the planner then skips the walk of the baseline it asks for.
      ...(gone.size > 0 && { deletedAs: (memoryId: string) => gone.get(memoryId)?.deletedAs }),
    };
  }

  /** Deletions the store reported stay known only for memories a baseline path still names (`keep`). */
  keepGone(keep: ReadonlySet<string>): void {
    this.#state = keepGone(this.#state, keep);
  }

  /** A full listing made elsewhere (the download, with content) becomes the view. */
  adoptListing(listed: readonly ListedMemory[], times: ReadTimes, now: number): void {
    this.#setFromListing(listed, times, now);
  }

  /** What one of this session's writes or fetches returned: known at once, before the feed repeats it. */
  learn(change: RemoteChange): void {
    // Before the fetch is learned over what the unchecked listing showed (feed-fold.ts, B50).
    if (change.kind === 'memory' && change.fetched && this.#state.listingContradicted === null) {
      const contradiction = fetchContradictsListing(this.#state, change.memory);
      if (contradiction !== null) this.#state = { ...this.#state, listingContradicted: contradiction };
    }
    // Changed in place: this map is the view's own (a fold that changes anything returns a copy,
    // a listing a new one), and a finalize of thousands of writes must not copy it each time.
    learnChange(this.#state.memories as Map<string, KnownMemory>, change, this.#state.gone as Map<string, GoneMemory>);
    this.#index = null;
    this.#knownAhead++;
    // A deletion only inferred from `not_found`: if the answer was spurious, no version will
    // ever bring the memory back into the view, so the next read lists in full.
    if (change.kind === 'deleted' && change.notFound) this.distrust(`memory ${change.memoryId} answered not_found`);
  }

  /**
   * The store's memories, indexed for the planner. Throws (a StoreError) only when a full
   * listing fails; a feed failure falls back to one.
   */
  async read(opts: {
    mode: RemoteReadMode;
    now: number;
    signal: AbortSignal;
    caseInsensitive: boolean;
    /** A probe of an unavailable store: a feed read failing `unavailable` is the answer, not a reason to list. */
    probe?: boolean;
    /**
     * A write of unknown outcome is left: before a full listing, which shows no deletion, the
     * feed is read and folded, so that a memory the write created and another writer then
     * deleted is known as such (`landedThenDeleted`) before the listing shows its path free (B48).
     */
    deletionsFirst?: boolean;
  }): Promise<{ index: RemoteIndex; source: RemoteSource; contents: CarriedRemoteContent }> {
    const { logger } = this.#deps;
    if (opts.mode === 'reuse' && this.#reusable) {
      this.#readThisPass = true;
      return { index: this.#indexed(opts.caseInsensitive), source: { kind: 'reused' }, contents: NO_CONTENT };
    }
    const wanted = this.#distrusted !== null ? ('contradicted' as const) : this.#listingWanted !== null ? ('unconfirmed_absence' as const) : null;
    const choice = wanted !== null ? ({ kind: 'full', reason: wanted } as const) : chooseRead({
      mode: opts.mode === 'full' ? 'full' : 'auto',
      feed: !this.#deps.client.listVersions ? 'absent' : this.#refused !== null ? 'refused' : 'available',
      since: this.#state.since,
      passesSinceFull: this.#passesSinceFull,
      msSinceFull: this.#lastFullAt === null ? null : opts.now - this.#lastFullAt,
      policy: this.#deps.policy,
    });
    let reason: FullListingReason = choice.kind === 'full' ? choice.reason : 'feed_error';
    let accounted: { versions: StoreMemoryVersion[]; times: ReadTimes; doubt: FeedDoubtCode } | undefined;
    // Content that came with a feed read stays good through the listing after it: it is matched
    // by sha, and a memory the listing shows at that sha holds exactly that content.
    let contents: CarriedRemoteContent = NO_CONTENT;
    if (choice.kind === 'feed') {
      const read = await this.#readFeed(opts.signal, opts.probe === true);
      if (read.kind === 'versions') {
        contents = read.contents;
        this.#knownAhead = 0;
        const folded = foldVersions(this.#state, read.versions, read.times);
        if (folded.kind === 'folded') {
          if (folded.changed > 0) this.#index = null;
          this.#state = folded.state;
          this.#passesSinceFull++;
          this.#readThisPass = true;
          return {
            index: this.#indexed(opts.caseInsensitive),
            source: { kind: 'feed', versions: read.versions.length, changed: folded.changed, withContent: read.withContent },
            contents,
          };
        }
        reason = folded.doubt.code;
        accounted = { versions: read.versions, times: read.times, doubt: folded.doubt.code };
        logger.debug('change feed in doubt; listing the store in full', { reason: folded.doubt.code, detail: folded.doubt.detail });
      } else reason = read.reason;
    } else if (opts.deletionsFirst && this.feedUsable() && this.#state.since !== null) {
      // Only what the fold learns is kept (the deletions, above all); a read that fails or is in
      // doubt changes nothing, and the listing goes ahead as it would have.
      const read = await this.#readFeed(opts.signal, false);
      if (read.kind === 'versions') {
        this.#knownAhead = 0;
        const folded = foldVersions(this.#state, read.versions, read.times);
        if (folded.kind === 'folded') {
          if (folded.changed > 0) this.#index = null;
          this.#state = folded.state;
          contents = read.contents;
        }
      }
    }
    let startedMs = this.#monotonicMs();
    let listed = await this.#listFull(opts.signal);
    this.#setFromListing(listed, { startedMs, endedMs: this.#monotonicMs() }, opts.now, accounted);
    // A listing made because another writer acted while the one before paged is checked at once
    // (feed-fold.ts, LISTING_CHAIN_MAX: at most that many listings in a row, so the loop ends
    // within the pass; each read and listing is bounded by the pass's signal and the feed budget).
    // A check read that fails leaves the check to the next pass's first read.
    while (checkListingAtOnce(this.#state) && this.feedUsable()) {
      const check = await this.#readFeed(opts.signal, false);
      if (check.kind === 'failed') break;
      contents = contents.size === 0 ? check.contents : new Map([...contents, ...check.contents]);
      this.#knownAhead = 0;
      const folded = foldVersions(this.#state, check.versions, check.times);
      if (folded.kind === 'folded') {
        if (folded.changed > 0) this.#index = null;
        this.#state = folded.state;
        break;
      }
      logger.debug('the check of the full listing is in doubt; listing the store in full again', {
        reason: folded.doubt.code,
        detail: folded.doubt.detail,
        chain: this.#state.listingChain,
      });
      startedMs = this.#monotonicMs();
      listed = await this.#listFull(opts.signal);
      this.#setFromListing(listed, { startedMs, endedMs: this.#monotonicMs() }, opts.now, {
        versions: check.versions,
        times: check.times,
        doubt: folded.doubt.code,
      });
    }
    return { index: this.#indexed(opts.caseInsensitive), source: { kind: 'listing', reason, memories: listed.length }, contents };
  }

  /**
   * The whole store, without content: by folder in parallel when the last view says that pays
   * (see `fanOutPays`; a finalize's final sync of 2,000 memories in 40 folders: 2 round trips
   * instead of 20), else one paged walk. Either is a full listing, judged alike afterwards.
   */
  #listFull(signal: AbortSignal): Promise<ListedMemory[]> {
    const { client, storeId, pool } = this.#deps;
    if (pool && client.listFolder && fanOutPays([...this.#state.memories.values()].map((m) => m.path))) {
      return listStore(client, storeId, { withContent: false, signal, pool });
    }
    return listAll(() => client.list(storeId, { signal }));
  }

  /** Whether the change feed may be read: the client has one, and this session was never refused it. */
  feedUsable(): boolean {
    return this.#deps.client.listVersions !== undefined && this.#refused === null;
  }

  /** The store's memories as last read and learned, indexed for the planner; no I/O. */
  known(caseInsensitive: boolean): RemoteIndex {
    return this.#indexed(caseInsensitive);
  }

  /**
   * One feed read from `since`, bounded by the budget; a failure is a reason to list instead.
   *
   * With content (the full view) when few versions are expected: k new versions then cost
   * ⌈k / 20⌉ requests and no fetch, where basic pages cost ⌈k / 100⌉ and a fetch per memory
   * pulled. Expected are the versions known already (`seen`, this session's own writes, a
   * listing's recent changes), which a full read would carry for nothing: with
   * `FEED_CONTENT_MAX_VERSIONS` of them or more the read is basic from the start. A full read
   * that finds more than that many stops there, and the feed is walked again in basic pages
   * (the content already read still rides on its pulls); that walk alone is what is folded.
   */
  async #readFeed(signal: AbortSignal, probe: boolean): Promise<
    | { kind: 'versions'; versions: StoreMemoryVersion[]; times: ReadTimes; contents: CarriedRemoteContent; withContent: boolean }
    | { kind: 'failed'; reason: FullListingReason }
  > {
    const { client, storeId, logger, feedBudgetMs } = this.#deps;
    const createdAtGte = formatTimestamp(this.#state.since!);
    // The pass's deadline, or the feed's own budget: a feed that keeps failing must leave the
    // pass time for its full listing.
    const budget = AbortSignal.any([signal, AbortSignal.timeout(feedBudgetMs)]);
    // The first walk's start: a lower bound on the start of any walk after it, so `since` stays safe.
    const startedMs = this.#monotonicMs();
    try {
      const contents = new Map<string, string>();
      if (this.#state.seen.size + this.#knownAhead < LIST_PAGE_SIZE_WITH_CONTENT) {
        const full = await listAll(() =>
          client.listVersions!(storeId, { createdAtGte, withContent: true, maxVersions: FEED_CONTENT_MAX_VERSIONS + 1, signal: budget }),
        );
        addCarried(contents, full);
        if (full.length <= FEED_CONTENT_MAX_VERSIONS) {
          return { kind: 'versions', versions: full, times: { startedMs, endedMs: this.#monotonicMs() }, contents, withContent: true };
        }
        logger.debug('change feed holds more versions than a read with content takes; reading it in basic pages', { over: FEED_CONTENT_MAX_VERSIONS });
      }
      const versions = await listAll(() => client.listVersions!(storeId, { createdAtGte, signal: budget }));
      const times = { startedMs, endedMs: this.#monotonicMs() };
      await this.#readContentWindow(versions, contents, budget, signal);
      return { kind: 'versions', versions, times, contents, withContent: false };
    } catch (err) {
      // The pass itself is over: nothing to fall back to.
      if (signal.aborted) throw err;
      const error = asStoreError(err);
      if (probe && error.kind === 'unavailable') throw error;
      if (REFUSALS.has(error.kind)) {
        const status = error.status === undefined ? error.kind : `HTTP ${error.status}, ${error.kind}`;
        this.#refused = status;
        logger.info('change feed not available to this session; every sync lists the store in full from now on', {
          status: error.status,
          kind: error.kind,
          error: error.message,
        });
        return { kind: 'failed', reason: 'feed_refused' };
      }
      logger.debug('change feed read failed; listing the store in full for this pass', { kind: error.kind, error: error.message });
      return { kind: 'failed', reason: 'feed_error' };
    }
  }

  /**
   * After a basic read: a stretch of it read again with content, when that is cheaper
   * than fetching what changed in it one memory at a time (`contentWindow`). Only an optimisation:
   * a failure leaves those memories to be fetched, and the basic read stands as the pass's read.
   */
  async #readContentWindow(versions: readonly StoreMemoryVersion[], contents: Map<string, string>, budget: AbortSignal, signal: AbortSignal): Promise<void> {
    const { client, storeId, logger } = this.#deps;
    const window = contentWindow(this.#state, versions, (sha) => contents.has(sha), LIST_PAGE_SIZE_WITH_CONTENT, CARRY_BUDGET_BYTES);
    if (window === null) return;
    try {
      // As many versions as the stretch held: never a page more than planned.
      const read = await listAll(() =>
        client.listVersions!(storeId, {
          createdAtGte: window.createdAtGte,
          createdAtLte: window.createdAtLte,
          withContent: true,
          maxVersions: window.count,
          signal: budget,
        }),
      );
      addCarried(contents, read);
    } catch (err) {
      if (signal.aborted) throw err;
      logger.debug('change feed read with content failed; the changed memories are fetched instead', { error: asStoreError(err).message });
    }
  }

  #setFromListing(
    listed: readonly ListedMemory[],
    times: ReadTimes,
    now: number,
    accounted?: { versions: StoreMemoryVersion[]; times: ReadTimes; doubt: FeedDoubtCode },
  ): void {
    this.#state = stateFromListing(this.#state, listed, times, accounted);
    // The memories the listing shows written since where the next read starts: their versions
    // come again in it, known already.
    const since = this.#state.since;
    this.#knownAhead = 0;
    if (since !== null) for (const memory of this.#state.memories.values()) if (memory.at !== null && memory.at >= since) this.#knownAhead++;
    this.#distrusted = null;
    this.#listingWanted = null;
    this.#listings++;
    this.#index = null;
    this.#passesSinceFull = 0;
    this.#lastFullAt = now;
    this.#readThisPass = true;
  }

  #indexed(caseInsensitive: boolean): RemoteIndex {
    if (this.#index?.caseInsensitive === caseInsensitive) return this.#index.index;
    const memories = [...this.#state.memories].map(([id, m]) => ({ id, path: m.path, content_sha256: m.sha, ...(m.versionId !== null && { memory_version_id: m.versionId }) }));
    const index = indexRemote(memories, { caseInsensitiveDisk: caseInsensitive });
    this.#index = { caseInsensitive, index };
    return index;
  }
}

const NO_CONTENT: CarriedRemoteContent = new Map();

/**
 * Adds to `carried` the content versions carry, by sha, where it is what its version says it is:
 * not redacted, hashing to its `content_sha256`, and within the size a memory file may have (a
 * larger one is fetched and refused as before, by the pull's own check).
 */
function addCarried(carried: Map<string, string>, versions: readonly StoreMemoryVersion[]): void {
  for (const version of versions) {
    const { content, content_sha256: sha } = version;
    if (typeof content !== 'string' || sha === null || version.redacted_at !== null || version.operation === 'deleted') continue;
    // A character is at least one byte: a longer string is over the limit whatever it holds.
    if (content.length > MAX_MEMORY_BYTES || carried.has(sha)) continue;
    const bytes = encodeUtf8(content);
    if (bytes.byteLength > MAX_MEMORY_BYTES || sha256Hex(bytes) !== sha) continue;
    carried.set(sha, content);
  }
}
