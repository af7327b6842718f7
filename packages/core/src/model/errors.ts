/**
 * The library's typed errors. Each carries what a worker author needs to act on it without
 * parsing the message: a `code` or `kind`, and the store and path where one applies.
 *
 * Messages name paths, and a path is a name the agent or the store chose: every message is made
 * safe for a terminal (`escapeForTerminal`) when the error is made. The `path` fields keep the
 * path exactly, for code.
 */
import { escapeForTerminal } from './terminal-text.js';

/** Bad `MemoryMounterOptions`: thrown by the constructor, before anything is touched. */
export class MemoryConfigError extends Error {
  override name = 'MemoryConfigError';
  constructor(
    message: string,
    /** The option at fault. */
    readonly option?: string,
    /** For an unknown option: the valid name closest to it (`memorySyncDeletions` for `memorySyncDeletion`). */
    readonly suggestion?: string,
  ) {
    super(escapeForTerminal(message));
  }
}

/** Why `materialize` (or `mountSessionMemory`) refused; docs/troubleshooting.md has each cause and fix. */
export type MountErrorCode =
  | 'too_many_stores'
  | 'invalid_resource'
  | 'mount_path_invalid'
  | 'duplicate_mount_path'
  | 'duplicate_store_id'
  | 'mount_path_exists'
  | 'mount_path_unwritable'
  | 'download_failed'
  | 'missing_secret'
  | 'state_dir_unusable';

/** A session's stores could not be mounted. Nothing this call created is left on disk, or `leftInPlace` names it. */
export class MemoryMountError extends Error {
  override name = 'MemoryMountError';
  readonly code: MountErrorCode;
  /** The store at fault, when one is. */
  readonly memoryStoreId?: string;
  /** The path at fault: a host path, or the mount path when no host path exists yet. */
  readonly path?: string;
  /**
   * Folders this call made and could not remove (a disk that failed the cleanup too); absent
   * when it removed everything. Each blocks a later mount at its path until it is removed.
   */
  leftInPlace?: { path: string; reason: string }[];
  constructor(
    code: MountErrorCode,
    message: string,
    details: { memoryStoreId?: string; path?: string; cause?: unknown } = {},
  ) {
    super(escapeForTerminal(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.memoryStoreId !== undefined) this.memoryStoreId = details.memoryStoreId;
    if (details.path !== undefined) this.path = details.path;
  }
}

/** A write or edit tool aimed at a path the mounts do not allow: a read-only store, or outside every store. */
export class MemoryWriteRefusedError extends Error {
  override name = 'MemoryWriteRefusedError';
  constructor(
    readonly path: string,
    readonly reason: 'read_only' | 'outside_store',
    message: string,
  ) {
    super(escapeForTerminal(message));
  }
}

/** A call made in the wrong phase of the mounter's life: reconcile after finalize, say. */
export class MemoryLifecycleError extends Error {
  override name = 'MemoryLifecycleError';
  constructor(
    readonly code: 'not_materialized' | 'already_materialized' | 'finalized',
    message: string,
  ) {
    super(message);
  }
}

/** What a StoreClient failure means to the engine; it decides on the kind alone. */
export type StoreErrorKind =
  /** 404 */
  | 'not_found'
  /** 409/412 on a content_sha256 precondition */
  | 'precondition_failed'
  /** 409 memory_path_conflict_error on create/rename */
  | 'path_conflict'
  /** 400/413/422: the server will refuse this content again */
  | 'rejected'
  /** 401/403 */
  | 'unauthorized'
  /** network error, timeout, 429, 5xx: the outcome of a write is unknown */
  | 'unavailable';

const STORE_ERROR_KINDS: ReadonlySet<string> = new Set<StoreErrorKind>([
  'not_found',
  'precondition_failed',
  'path_conflict',
  'rejected',
  'unauthorized',
  'unavailable',
]);

/**
 * Every StoreClient call the engine makes goes through here, so whatever a client throws arrives
 * as a StoreError, and anything else caught later is the filesystem's.
 */
export function storeCall<T>(call: Promise<T>): Promise<T> {
  return call.catch((err: unknown) => {
    throw asStoreError(err);
  });
}

/** Every memory of a listing, all pages; a failure is a StoreError like any other call's. */
export async function listAll<T>(listing: () => AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  try {
    for await (const item of listing()) out.push(item);
  } catch (err) {
    throw asStoreError(err);
  }
  return out;
}

/** The one error a StoreClient reports. */
export class StoreError extends Error {
  override name = 'StoreError';
  readonly kind: StoreErrorKind;
  /** The HTTP status, when the failure was an HTTP answer. */
  readonly status?: number;
  /**
   * How long (ms) the store asked to be left alone (`retry-after`), when it said: no request to
   * it is sent sooner, within a pass or across passes.
   */
  readonly retryAfterMs?: number;
  constructor(kind: StoreErrorKind, message: string, details: { status?: number; cause?: unknown; retryAfterMs?: number } = {}) {
    super(escapeForTerminal(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = kind;
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
  }
}

/**
 * Any failure from a StoreClient as a StoreError. A host's client that throws something else
 * broke the contract; the engine then treats the outcome as unknown (`unavailable`), the one
 * reading that can never lose data.
 */
export function asStoreError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const kind = (err as { kind?: unknown } | null)?.kind;
  if (typeof kind === 'string' && STORE_ERROR_KINDS.has(kind)) {
    const retryAfterMs = (err as { retryAfterMs?: unknown }).retryAfterMs;
    return new StoreError(kind as StoreErrorKind, String((err as Error).message ?? err), {
      cause: err,
      ...(typeof retryAfterMs === 'number' && retryAfterMs >= 0 && { retryAfterMs }),
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new StoreError('unavailable', `store client failed: ${message}`, { cause: err });
}
