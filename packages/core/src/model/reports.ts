import type { StoreErrorKind } from './errors.js';
import type { EntryType } from '../local/file-system.js';
import type { PathReasonCode, ReasonCode, StoreReasonCode } from './reasons.js';
import type { FullListingReason } from '../decide/feed-fold.js';
import type { Access } from './types.js';

/**
 * One path and why it was left alone or not pushed: `code` for programs (docs/reports.md lists
 * every one), `reason` for people.
 */
export interface PathReport {
  path: string;
  code: PathReasonCode;
  reason: string;
}

/**
 * A local change not in the store, and why: a path's own code (`time_bound`, `push_failed`,
 * `conflict`, a refusal's or a skip's code), or, when the store's pass could not plan at all,
 * the store's code (`time_bound`, `store_error`, `folder_wiped`...).
 */
export interface UnpushedReport {
  path: string;
  code: ReasonCode;
  reason: string;
  /** The memory the change would have gone to, when the path has one the engine knows (`mem_…`); absent for a new file. */
  memoryId?: string;
}

/**
 * How a pass read the store's side:
 * - `feed`: only the change feed, the versions created since the last read (`versions` read,
 *   `changed` memories they changed): one request when nothing changed;
 * - `listing`: a full listing of `memories`, and `reason`, why not the feed: `requested` (the
 *   final sync, a pass told to), `pass_count` (`fullListingEvery`), `interval`
 *   (`fullListingInterval`), `no_feed` (the client has no `listVersions`), `feed_refused`,
 *   `feed_error`, `contradicted` (the store answered a write otherwise than the view
 *   predicted), or a doubt about what the feed said (`no_start`, `tie`, `redacted`, …);
 *   after `listed_while_written` the pass may list up to `LISTING_CHAIN_MAX` times in a row
 *   (feed-fold.ts), and `memories` is the last listing's;
 * - `reused`: what the pass just before learned, with no request (finalize's flush after its
 *   final sync).
 */
export type StoreRead =
  | { kind: 'feed'; versions: number; changed: number }
  | { kind: 'listing'; reason: FullListingReason; memories: number }
  | { kind: 'reused' };

/**
 * The store requests a pass cost, counted where the engine calls the host's `StoreClient`: each
 * attempt of a call is one request, and a listing (the memories, the change feed, a folder) one
 * per page it read. A client that does not say when it requests a page (`onPage` in a listing's
 * options) has its pages counted as the service pages them: 100 items a page, 20 with content.
 */
export interface StoreRequests {
  /** Every request: `reads` + `writes`. */
  total: number;
  /** Listing pages, change-feed pages and fetches (`get`). */
  reads: number;
  /** Creates, updates (renames included) and deletes. */
  writes: number;
  /**
   * How many of `total` repeated an attempt that failed `unavailable` (a listing tried again counts
   * each page it read again).
   */
  retries: number;
}

/**
 * What one pass did to one store. Paths are in wire form (`/notes/a.md`). Plain data: safe to
 * log as JSON, compare in tests, or send to a host's telemetry.
 */
export interface StoreSyncReport {
  memoryStoreId: string;
  name: string;
  /** Host path of the store directory. */
  path: string;
  access: Access;
  /**
   * `synced`: the table ran (some paths may still have failed: see `errors`).
   * `redownloaded`: the folder was gone, emptied or wiped and was downloaded again.
   * `skipped`: nothing was done on purpose (distrusted folder, or cut off by a time bound).
   * `failed`: the pass could not run for this store (listing failed, folder unreadable).
   */
  status: 'synced' | 'redownloaded' | 'skipped' | 'failed';
  /** Why a store was skipped, failed or re-downloaded: `code` for programs, `reason` for people. Both set or both absent. */
  code?: StoreReasonCode;
  reason?: string;
  /** Written to disk from the store. */
  pulled: string[];
  /** Sent to the store (created or updated). */
  pushed: string[];
  /** Local files removed because their memory was deleted in the store. */
  deletedLocal: string[];
  /** Memories deleted in the store because their file was deleted locally. */
  deletedRemote: string[];
  /**
   * One memory at a new path, id and history kept, nothing transferred: `local` when the file
   * was moved on disk after the store renamed the memory, `remote` when the memory was renamed
   * in the store after the agent moved the file.
   */
  renamed: { from: string; to: string; side: 'local' | 'remote' }[];
  /** Both sides changed differently; the store's version was written over the file. */
  conflicts: string[];
  /** Local content the store will not take, or that must never be pushed, with the reason. */
  refused: PathReport[];
  /** Local deletions not (yet) sent: grace period, per-pass cap, `log_only` or `disabled`. */
  pendingDeletions: string[];
  /** Entries left alone: symlinks, special files, unreadable or invalid paths. */
  skippedPaths: PathReport[];
  /** Operations that failed; each is retried by a later pass where that can help. */
  errors: { path?: string; operation: string; kind: StoreErrorKind | 'filesystem'; message: string }[];
  /** Planned actions not started because a time bound ran out (finalize only). */
  cutOff: string[];
  /**
   * How this pass read the store, and why that way. Absent when the pass read nothing
   * (skipped, failed before reading) or re-downloaded the store (a full listing with contents).
   */
  read?: StoreRead;
  /**
   * The store requests this pass sent (its reads, writes and retries, a re-download included), up
   * to the moment the report was made: zero for a pass that read nothing, such as a `reused` read
   * that wrote nothing.
   */
  requests: StoreRequests;
}

/** What `reconcile()` (or one of finalize's passes) did, store by store. */
export interface SyncReport {
  /** When the pass began and ended: ISO 8601 (UTC, to the millisecond), from the `now` option's clock. */
  startedAt: string;
  finishedAt: string;
  /** The pass ran on `force: true` (always true for finalize's passes), not because the interval elapsed. */
  forced: boolean;
  stores: StoreSyncReport[];
}

/** What `finalize()` did: its passes, what a time bound cut off, and the folders it removed or left. */
export interface FinalizeReport {
  outcome: 'completed' | 'aborted';
  /** The final full sync (grace period waived); `null` for `aborted`. */
  sync: SyncReport | null;
  /** The push-only flush that follows. */
  flush: SyncReport;
  /**
   * Which phases the `finalSyncTimeout` deadline (one for the whole finalize) cut off. Once it
   * has passed, a phase not yet started is skipped and counts as cut off.
   */
  timedOut: { sync: boolean; flush: boolean };
  /**
   * Every local change of a read-write store that is not in the store when finalize ends, with
   * the reason: a push cut off, failed or refused, a conflict the store wins, or, when the flush
   * could not plan at all (listing failed, deadline passed), each local difference from the
   * baseline that the last scan of the folder saw. Empty when everything was pushed.
   */
  unpushed: ({ memoryStoreId: string } & UnpushedReport)[];
  /** Host directories this mounter created and removed. */
  removed: string[];
  /**
   * Host directories left in place, with the reason (failed marker check, not empty, ...).
   * `code` is set where the reason is one a program acts on: `unpushed_kept`, a store folder left
   * by `keepUnpushed: true` because `unpushed` names changes of it (its state record is kept too,
   * for `MemoryMounter.recover`); `unreadable_kept`, a store folder left whatever `keepUnpushed`
   * says because `unpushed` names paths of it the final scans could not read (code `unreadable`,
   * or `folder_unreadable` for the folder itself): their content is unknown, so it is never
   * removed unread (SPEC 6.6). Its state record is kept too.
   */
  leftInPlace: { path: string; reason: string; code?: 'unpushed_kept' | 'unreadable_kept' }[];
}

/**
 * Why `MemoryMounter.recover` left a recorded store folder in place:
 * - `owner_alive`: the record was written by a process on this host that is still running.
 * - `outside_memory_root`: the record's folder is not under the `memoryRoot` given to recover.
 * - `not_a_folder`: something other than a folder (a symlink, a file) is at the record's path,
 *   or on the way to it.
 * - `folder_replaced`: a folder is there, but not the one the record names (its `(dev, ino)`
 *   differs), or a folder on the way is not: never adopted.
 * - `marker_mismatch`: the folder's marker is missing or names another store.
 * - `marker_unreadable`: the folder or its marker could not be read (I/O error).
 * - `unpushed`: local changes could not all be pushed (named in `unpushed`); the record is
 *   updated and kept, and a later `recover` tries again.
 * - `not_removed`: everything was pushed, but removing the folder failed.
 */
export type RecoveryLeftCode =
  | 'owner_alive'
  | 'outside_memory_root'
  | 'not_a_folder'
  | 'folder_replaced'
  | 'marker_mismatch'
  | 'marker_unreadable'
  | 'unpushed'
  | 'not_removed';

/** What `MemoryMounter.recover` did with one state record and the folder it names. */
export interface RecoveredStoreReport {
  /** The record's file name in `stateDir`. */
  record: string;
  memoryStoreId: string;
  name: string;
  access: Access;
  /** As the agent saw it, e.g. `/mnt/memory/notes`. */
  mountPath: string;
  /** Host path of the store folder. */
  path: string;
  /**
   * `recovered`: synced (or, for a mount that never finished materializing, nothing to sync)
   * and removed, with its record. `left`: left exactly as it was apart from what was pushed
   * (`left` says why); the record is kept. `gone`: nothing was at the record's path any more;
   * the record was removed.
   */
  outcome: 'recovered' | 'left' | 'gone';
  left?: { code: RecoveryLeftCode; reason: string };
  /**
   * The record was written before the mount finished materializing: the agent never had the
   * folder, so it was removed without a sync.
   */
  neverMounted: boolean;
  /** Sent to the store (created or updated) by the recovery sync. */
  pushed: string[];
  /**
   * Local edits of memories that also changed in the store since the recorded baseline: the
   * store keeps its version and the local edit is dropped with the folder.
   */
  conflicts: string[];
  /**
   * Baseline files missing from the folder. Recovery never deletes in the store: these
   * memories are kept there (a missing file after a crash is not proof the agent deleted it).
   */
  deletionsNotSent: string[];
  /**
   * Local changes of a read-write store that are not in the store, with the reason (failed,
   * cut off by the time bound, refused by the store...). Non-empty means `outcome: 'left'`.
   * Conflicts are not listed here: the store wins them.
   */
  unpushed: UnpushedReport[];
  /** The recovery pass itself (push-only, against the recorded baseline); null when none ran. */
  sync: StoreSyncReport | null;
  /** The record was removed from `stateDir`. */
  recordRemoved: boolean;
}

/** What `MemoryMounter.recover` found and did. Plain data. */
export interface RecoveryReport {
  /** When recovery began and ended: ISO 8601 (UTC, to the millisecond). */
  startedAt: string;
  finishedAt: string;
  /** The `finalSyncTimeout` deadline cut at least one store's sync off. */
  timedOut: boolean;
  /** One entry per readable record, in file-name order. */
  stores: RecoveredStoreReport[];
  /** Files in `stateDir` named like records that could not be read or trusted; left as they are. */
  unreadableRecords: { file: string; reason: string }[];
  /**
   * Entries under `memoryRoot` that no record names (a folder a mounter without `stateDir`
   * left, someone else's, or one whose record is unreadable): never touched. `markerStoreId`
   * is the store a folder's marker names, when it has a readable one.
   */
  unvouched: { path: string; type: EntryType; reason: string; markerStoreId?: string }[];
}

/**
 * A clock reading (ms since the epoch) as reports and `status()` give times: ISO 8601 in UTC, to
 * the millisecond (`2026-12-01T12:00:00.000Z`), so that every time a host logs or prints as JSON
 * has one form, and parses with `Date.parse`.
 */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
