import type { StoreErrorKind } from './errors.js';
import type { Access } from './types.js';

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
   * `redownloaded`: the folder was gone, emptied or wiped and was downloaded again (SPEC 4.4).
   * `skipped`: nothing was done on purpose (distrusted folder, or cut off by a time bound).
   * `failed`: the pass could not run for this store (listing failed, folder unreadable).
   */
  status: 'synced' | 'redownloaded' | 'skipped' | 'failed';
  /** Why a store was skipped, failed or re-downloaded. */
  reason?: string;
  /** Written to disk from the store. */
  pulled: string[];
  /** Sent to the store (created or updated). */
  pushed: string[];
  /** Local files removed because their memory was deleted in the store. */
  deletedLocal: string[];
  /** Memories deleted in the store because their file was deleted locally. */
  deletedRemote: string[];
  /** Both sides changed differently; the store's version was written over the file. */
  conflicts: string[];
  /** Local content the store will not take, or that must never be pushed, with the reason. */
  refused: { path: string; reason: string }[];
  /** Local deletions not (yet) sent: grace period, per-pass cap, `log_only` or `disabled`. */
  pendingDeletions: string[];
  /** Entries left alone: symlinks, special files, unreadable or invalid paths. */
  skippedPaths: { path: string; reason: string }[];
  /** Operations that failed; each is retried by a later pass where that can help. */
  errors: { path?: string; operation: string; kind: StoreErrorKind | 'filesystem'; message: string }[];
  /** Planned actions not started because a time bound ran out (finalize only). */
  cutOff: string[];
}

/** What `reconcile()` (or one of finalize's passes) did, store by store. */
export interface SyncReport {
  /** Clock time (ms, from the `now` option) when the pass began and ended. */
  startedAt: number;
  finishedAt: number;
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
  unpushed: { memoryStoreId: string; path: string; reason: string }[];
  /** Host directories this mounter created and removed. */
  removed: string[];
  /** Host directories left in place, with the reason (failed marker check, not empty, ...). */
  leftInPlace: { path: string; reason: string }[];
}
