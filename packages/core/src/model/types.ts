import type { FileSystem } from '../local/file-system.js';
import type { StoreClient } from '../remote/store-client.js';

/**
 * What a local deletion may do to the store: `enabled` sends the delete once its
 * checks pass, `log_only` runs the checks and logs the delete it would send, `disabled` never
 * deletes remotely. Uploads and pulls are the same in every mode.
 */
export type DeletionMode = 'enabled' | 'log_only' | 'disabled';
/** A store attached `read_only` is pulled but never pushed to nor deleted from. */
export type Access = 'read_write' | 'read_only';

/** A session resource, as the API returns it. */
export interface MemoryStoreResource {
  type: 'memory_store';
  memory_store_id: string;
  /** Display name, snapshotted at attach time. */
  name?: string | null;
  /** e.g. `/mnt/memory/user-preferences` */
  mount_path?: string | null;
  /** Default `read_write`. */
  access?: Access | null;
  description?: string;
  /** At most 4,096 characters. */
  instructions?: string | null;
}

/** Fields always carry `memory_store_id`, and `path` where one applies. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Options of `new MemoryMounter(...)`; every invalid value is a MemoryConfigError naming it. */
export interface MemoryMounterOptions {
  /** The memory-store API: `AnthropicStoreClient`, `InMemoryStoreClient`, or a host's own. Required; no unit. */
  storeClient: StoreClient;
  /** Where the mounts live. No unit. Default: `new NodeFileSystem()` (the real disk). */
  fileSystem?: FileSystem;
  /** Where `/mnt/memory` lies on this host: an absolute POSIX path. Default `/mnt/memory`. */
  memoryRoot?: string;
  /**
   * **Seconds** (not milliseconds) between syncs: `reconcile()` without `force` returns `null`
   * until this many seconds have passed since the last sync. A finite number > 0 and at most
   * 3,600: a larger value is refused as milliseconds passed by mistake (the SDK's
   * `memorySyncIntervalMs` is in ms). Default 15.
   */
  memory_sync_interval?: number;
  /**
   * The SDK's name for the sync interval, in **milliseconds**: `memorySyncIntervalMs: 15000` is
   * `memory_sync_interval: 15`. A finite number > 0 and at most 3,600,000. Give one of the two;
   * both given and different is a MemoryConfigError.
   */
  memorySyncIntervalMs?: number;
  /** What a local deletion does to the store: `enabled`, `log_only` or `disabled` (no unit). Default `enabled`. */
  memory_sync_deletions?: DeletionMode;
  /**
   * The SDK's name for `memory_sync_deletions`, same values. Give one of the two; both given and
   * different is a MemoryConfigError.
   */
  memorySyncDeletions?: DeletionMode;
  /** **Seconds** a file must stay missing before its remote delete is sent. A finite number >= 0. Default 30. */
  deleteGracePeriod?: number;
  /**
   * **Seconds** that bound the whole of `finalize()`, measured from the call: stopping a pass still
   * running, the final sync and the push-only flush share this one deadline, and finalize returns
   * within it plus at most 2 s of wind-down and folder removal. A finite number > 0, at most
   * 2,147,483 (the longest Node timer). Default 30.
   */
  finalSyncTimeout?: number;
  /**
   * **Seconds** one store call (one request; one page of a listing) may take. Past it the call is
   * abandoned, its signal aborted, and it fails as `unavailable` ("timed out after N s"): retried
   * within the pass where the store's preconditions make a repeat safe. A finite number > 0, at
   * most 2,147,483. Default 30.
   */
  requestTimeout?: number;
  /**
   * **Seconds** one reconcile pass may take (plus about 1 s of wind-down): how long
   * `reconcile({ force: true })` may wait for it. (An unforced call waits at most `syncWait`.)
   * Also bounds `materialize()`'s download. A finite number > 0, at most 2,147,483. Default 60.
   */
  syncTimeout?: number;
  /**
   * **Seconds** a new local file must have gone unmodified before a reconcile pass pushes it: one
   * modified more recently may still be mid-write (an append in progress, a tool's temp file
   * just renamed in) and is left for the next pass. Finalize's passes push every file as it is.
   * Compared with the host's clock (file times are the disk's). A finite number >= 0; 0 pushes
   * at once. Default 1.
   */
  newFileSettle?: number;
  /**
   * Host directory, outside the sandbox, where the mounter keeps one crash-recovery record per
   * mounted store folder: the store, where it is mounted, and the engine's baseline
   * (path -> sha256, memory ids), written atomically at materialize and after every pass, and
   * removed with the folder. After a crash, `MemoryMounter.recover({ stateDir, ... })` uses them
   * to push what the dead mounter had not and remove its folders. An absolute path, not inside
   * `memoryRoot`; the operator creates it (`materialize()` fails `state_dir_unusable` when it is
   * missing). Default: unset, no records (a crash then leaves folders `recover` cannot vouch for).
   * See docs/operations.md#after-a-crash.
   */
  stateDir?: string;
  /**
   * When true, `finalize()` leaves in place (with its state record) a read-write store folder
   * whose local changes could not all be pushed (`FinalizeReport.unpushed` names some for it),
   * instead of removing it: `leftInPlace` lists it with `code: 'unpushed_kept'`, and a later
   * `MemoryMounter.recover` pushes what it can. Meaningful with `stateDir` (without a record,
   * `recover` cannot vouch for the folder). Default false: the folder is removed and the
   * unpushed changes with it.
   */
  keepUnpushed?: boolean;
  /**
   * When true, the local loser of a conflict (the store wins) is written beside the
   * file as `<name>.conflict-<timestamp>.<ext>` (UTC, to the millisecond) before the store's
   * version replaces it, like Syncthing. Such files are never synced in either direction and go
   * with the folder at finalize. A boolean, no unit. Default false (the `conflict` event still
   * carries the losing bytes).
   */
  conflictCopies?: boolean;
  /**
   * Store requests that move memories (downloads, pushes, fetches, remote deletes, and the
   * per-folder listings of a parallel download) in flight at once, for the whole session: one
   * pool shared by all its stores. An integer >= 1. Default 32.
   */
  transferConcurrency?: number;
  /**
   * Passes, counting: a reconcile pass lists each store in full at least once in every this many
   * passes; the others read only what changed since the last one (the store's change feed, one
   * request when nothing did). An integer >= 1; 1 lists in full every pass and never reads the
   * feed. Finalize's final sync always lists in full. Default 100.
   */
  fullListingEvery?: number;
  /**
   * Seconds (on the `now` clock): a pass lists each store in full when this long has gone by
   * since its last full listing, whatever `fullListingEvery` says; this bounds how long a change
   * the feed could not show (a version past the service's retention) may go unseen. A finite
   * number > 0. Default 600 (10 minutes).
   */
  fullListingInterval?: number;
  /**
   * **Seconds** an unforced `reconcile()` (and so a tool call wrapped by `withMemorySync`) waits
   * for its pass. A pass still running then goes on in the background: the call resolves `null`,
   * the next call joins that pass instead of starting another, and its result reaches the events,
   * `status()` and the log as usual. `reconcile({ force: true })` waits for the whole pass
   * (bounded by `syncTimeout`). A finite number >= 0. Default 1.9 (a late timer still holds a call under 2 s).
   */
  syncWait?: number;
  /**
   * **Seconds** an ordinary reconcile pass spends retrying failed store calls (`unavailable`,
   * timeouts; never past `syncTimeout`). A store still failing then is reported unavailable and
   * left to the circuit breaker, which skips it for a growing delay and probes it with one request.
   * Finalize and `recover` retry within their whole window instead. A finite number >= 0.
   * Default 5.
   */
  retryBudget?: number;
  /**
   * Clock: a function returning **milliseconds**. Default: timestamps (`startedAt`, `lastPassAt`)
   * from `Date.now`, durations (the sync interval, the deletion grace, the listing cadence, the
   * circuit breaker) from the monotonic `performance.now`, so a wall clock set back or forward
   * never stops syncs nor skips a grace. A clock given here (a test's) drives both.
   */
  now?: () => number;
  /** Where log lines go (no unit). Default: the `debug` package, namespaces `memory-mounter:*`. */
  logger?: Logger;
}

/** One store as mounted: where it is on the host and as the agent sees it. */
export interface MountedStore {
  memoryStoreId: string;
  /** The resource's display name (its id when it has none). */
  name: string;
  /** Host path of the store directory. */
  path: string;
  /** The path as the agent sees it, e.g. `/mnt/memory/notes`. */
  mountPath: string;
  access: Access;
}
