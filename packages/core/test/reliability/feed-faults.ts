import { StoreError, type StoreFolderEntry, type StoreMemoryVersion } from '@memory-mounter/core';
import { seededRandom } from './self-checking-content.js';

/**
 * The change feed (`listVersions`) and the folder listing (`listFolder`) as the model's store
 * serves them, and the faults the fuzz plays on them. The versions are the fake's real ones
 * (every write of the engine and of the other writer records one); a fault reshapes one read of
 * them the way a service may (SPEC 6.4, issue 9: order, duplicates, overlapping pages, redacted
 * or path-less versions, gaps, ties, errors), or fails it.
 *
 * What the model's service keeps, because the engine's feed rests on it (feed-fold.ts) and a
 * real service gives it: a version committed before a read started is in that read unless the
 * read lags (a version younger than `LAG_MS` may be missing, and then it shows in later reads);
 * versions of one memory are stamped in the order they were written (several may share a
 * stamp); no version is ever stamped more than `FEED_OVERLAP_MS` behind the server's clock.
 * Faults beyond these (a committed version missing from every later read, a later write
 * stamped before an earlier one of the same memory) would make any feed unsound; the engine's
 * defence against them is the full listing at least every `fullListingEvery` passes.
 */

/** A version younger than this (server clock) may be missing from a read that lags. */
export const LAG_MS = 500;

/** One read of the feed reshaped, the store's answer unchanged otherwise. */
export type FeedShape =
  /** Results in another order (a seeded shuffle). */
  | 'reorder'
  /** Every version listed twice, one copy right after the other. */
  | 'duplicate'
  /** Pages that overlap: after every third version, the two before it again. */
  | 'overlap'
  /** One version listed twice, the second copy with another sha (the engine must doubt). */
  | 'conflicting_duplicate'
  /** One version that is not a deletion comes without its path (not redacted). */
  | 'pathless'
  /** One version missing that is not the newest of its memory in the read. */
  | 'gap'
  /** Versions stamped in the last LAG_MS of server time are missing (replication lag). */
  | 'lag';

/** One read of the feed failed. */
export type FeedFailure =
  /** 503 before anything. */
  | 'unavailable'
  /** 503 after some versions (a later page failed). */
  | 'unavailable_midway'
  /** The call never answers (the engine's request timeout ends it). */
  | 'stall'
  /** 400, 401, 403, 404: the feed is not for this session. */
  | 'rejected_400'
  | 'unauthorized_401'
  | 'forbidden_403'
  | 'not_found_404';

export type FeedFault = { kind: 'shape'; shape: FeedShape; seed: number } | { kind: 'fail'; failure: FeedFailure };

/** One walk of a folder listing reshaped, or failed. */
export type FolderFault =
  /** Entries in another order. */
  | 'reorder'
  /** A roll-up that is not a sub-folder of the folder listed (the engine falls back to `list`). */
  | 'bad_rollup'
  /** A roll-up listed twice. */
  | 'duplicate_rollup'
  /** 503 after the first entry. */
  | 'unavailable_midway';

/** The store's clock: ms (`exact`) or truncated to whole seconds (`coarse`: versions tie in bulk). */
export type ServerClockMode = 'exact' | 'coarse';

/**
 * The service's clock: the model clock (which jumps on `clock +=` steps) plus the real time the
 * case has run, so that it never runs slower than the host's monotonic clock, which the engine
 * credits to it between two reads (a frozen clock would be a service whose time stands still
 * for seconds, which none is).
 */
export class ServerClock {
  readonly #startedMs = performance.now();
  constructor(
    private readonly modelNow: () => number,
    private readonly mode: ServerClockMode,
  ) {}

  now(): number {
    const ms = this.modelNow() + Math.floor(performance.now() - this.#startedMs);
    return this.mode === 'coarse' ? ms - (ms % 1_000) : ms;
  }
}

/** Queued faults of the feed and of folder listings, each spent by the next read of either store. */
export class FeedFaultQueue {
  readonly #feed: FeedFault[] = [];
  readonly #folder: FolderFault[] = [];

  pushFeed(fault: FeedFault): void {
    this.#feed.push(fault);
  }

  pushFolder(fault: FolderFault): void {
    this.#folder.push(fault);
  }

  nextFeed(): FeedFault | undefined {
    return this.#feed.shift();
  }

  nextFolder(): FolderFault | undefined {
    return this.#folder.shift();
  }

  get pending(): number {
    return this.#feed.length + this.#folder.length;
  }

  /** Quiescence: the faults still queued are called off. */
  drain(): void {
    this.#feed.length = 0;
    this.#folder.length = 0;
  }
}

/** The error a failed feed read answers with, as the service's status maps to a StoreError. */
export function feedError(failure: Exclude<FeedFailure, 'stall'>): StoreError {
  switch (failure) {
    case 'unavailable':
    case 'unavailable_midway':
      return new StoreError('unavailable', 'feed fault (test): service unavailable', { status: 503 });
    case 'rejected_400':
      return new StoreError('rejected', 'feed fault (test): bad request', { status: 400 });
    case 'unauthorized_401':
      return new StoreError('unauthorized', 'feed fault (test): unauthorized', { status: 401 });
    case 'forbidden_403':
      return new StoreError('unauthorized', 'feed fault (test): forbidden', { status: 403 });
    case 'not_found_404':
      return new StoreError('not_found', 'feed fault (test): not found', { status: 404 });
  }
}


function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const next = seededRandom(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * One read of the feed, reshaped. `versions` is what the store answered (newest first);
 * `serverNowMs` the service's clock at the read. Returns what the engine is given, and whether
 * the shape changed anything (a shape with nothing to act on is a no-op).
 */
export function reshapeFeed(versions: readonly StoreMemoryVersion[], shape: FeedShape, seed: number, serverNowMs: number): { versions: StoreMemoryVersion[]; changed: boolean } {
  const pick = seededRandom(seed);
  const at = (v: StoreMemoryVersion) => Date.parse(v.created_at);
  switch (shape) {
    case 'reorder':
      return { versions: shuffled(versions, seed), changed: versions.length > 1 };
    case 'duplicate':
      return { versions: versions.flatMap((v) => [v, { ...v }]), changed: versions.length > 0 };
    case 'overlap': {
      const out: StoreMemoryVersion[] = [];
      versions.forEach((v, i) => {
        out.push(v);
        if (i % 3 === 2) out.push(...versions.slice(i - 1, i + 1).map((x) => ({ ...x })));
      });
      return { versions: out, changed: versions.length > 2 };
    }
    case 'conflicting_duplicate': {
      const candidates = versions.filter((v) => v.content_sha256 !== null);
      if (candidates.length === 0) return { versions: [...versions], changed: false };
      const victim = candidates[Math.floor(pick() * candidates.length)]!;
      const twin = { ...victim, content_sha256: '0'.repeat(64) };
      return { versions: [...versions, twin], changed: true };
    }
    case 'pathless': {
      const candidates = versions.filter((v) => v.operation !== 'deleted' && v.path !== null);
      if (candidates.length === 0) return { versions: [...versions], changed: false };
      const victim = candidates[Math.floor(pick() * candidates.length)]!;
      return { versions: versions.map((v) => (v === victim ? { ...v, path: null } : v)), changed: true };
    }
    case 'gap': {
      // Only a version some later version of its memory (in this read) supersedes: a committed
      // version missing for good would be outside what any feed can be trusted with.
      const newest = new Map<string, StoreMemoryVersion>();
      for (const v of versions) {
        const held = newest.get(v.memory_id);
        if (!held || at(v) > at(held)) newest.set(v.memory_id, v);
      }
      const candidates = versions.filter((v) => {
        const top = newest.get(v.memory_id)!;
        return v !== top && at(v) < at(top);
      });
      if (candidates.length === 0) return { versions: [...versions], changed: false };
      const victim = candidates[Math.floor(pick() * candidates.length)]!;
      return { versions: versions.filter((v) => v !== victim), changed: true };
    }
    case 'lag': {
      const kept = versions.filter((v) => at(v) < serverNowMs - LAG_MS);
      return { versions: kept, changed: kept.length < versions.length };
    }
  }
}

/** One walk of a folder listing, reshaped; `folder` is the `pathPrefix` listed (wire form, `/` for the root). */
export function reshapeFolder(entries: readonly StoreFolderEntry[], fault: Exclude<FolderFault, 'unavailable_midway'>, folder: string): StoreFolderEntry[] {
  switch (fault) {
    case 'reorder':
      return shuffled(entries, entries.length * 7919 + folder.length);
    case 'bad_rollup':
      // Two levels down: not "one segment below the folder listed".
      return [...entries, { type: 'prefix', path: `${folder}x/y/` }];
    case 'duplicate_rollup': {
      const rollup = entries.find((e) => e.type === 'prefix');
      return rollup ? [...entries, { ...rollup }] : [...entries];
    }
  }
}
