import type { PathReasonCode } from './reasons.js';

/**
 * What a MemoryMounter tells its listeners (`mounter.on(event, listener)`), with Node
 * `EventEmitter` conventions: `on`, `once`, `off`, listeners called synchronously in the order
 * they were added. Unlike a bare EventEmitter, a listener that throws never breaks a pass: its
 * error is logged (`event listener threw`) and the other listeners still run.
 *
 * Every payload carries the store (`memoryStoreId`), the memory's wire `path` (`/notes/a.md`)
 * and where it lies on the host (`hostPath`), except `progress`, which counts.
 */
export interface MounterEvents {
  /**
   * Both sides changed differently and the store wins: emitted BEFORE the store's
   * version replaces the file, with the losing local bytes, so a host can keep a copy. With
   * `conflictCopies` the copy is written first; when it cannot be, the conflict is not resolved
   * that pass: no event, the file is kept, and the path is skipped as
   * `conflict_copy_failed` until a pass can write it. In finalize's push-only flush (its
   * `aborted` form too), which replaces nothing and after which the folder may be
   * removed, it is emitted with the file's bytes as they are at the flush (and the copy written
   * when it can be): for a host, the last chance to keep the agent's edit.
   */
  conflict: [ConflictEvent];
  /**
   * A memory was written to disk from the store: new or changed remotely (`remote_change`),
   * restored, a conflict's winner, or downloaded by `materialize()` (`download`: one event per
   * memory, told once every store has downloaded, so a materialize that fails, and removes what
   * it wrote, tells nothing).
   */
  pulled: [TransferEvent & { reason: PulledReason }];
  /** A local file was sent to the store (created or updated). */
  pushed: [TransferEvent];
  /** A file was removed locally (`side: 'local'`, its memory was deleted in the store) or a memory in the store (`'remote'`). */
  deleted: [PathEvent & { side: 'local' | 'remote' }];
  /**
   * One memory now at a new path, its id and history kept, nothing transferred: the file was
   * moved on disk after the store renamed the memory (`side: 'local'`), or the memory was renamed
   * in the store after the agent moved the file (`'remote'`). `path` and `hostPath` are the new
   * place, `from` the old one (wire form).
   */
  renamed: [RenamedEvent];
  /** Local content that is not pushed: not UTF-8, too large, rejected by the store, or a read-only store's edit. */
  refused: [PathEvent & { code: PathReasonCode; reason: string }];
  /** Progress of `materialize()` (memories downloaded) and `finalize()` (planned transfers done: pulls, pushes, deletes), per store. */
  progress: [ProgressEvent];
}

export type MounterEventName = keyof MounterEvents;

/** Why a `pulled` event's memory was written to disk. */
export type PulledReason = 'remote_change' | 'restore' | 'conflict' | 'download';

export interface PathEvent {
  memoryStoreId: string;
  /** Wire form, `/notes/a.md`. */
  path: string;
  /** Where the file lies on the host. */
  hostPath: string;
  /**
   * The memory's id in the store (`mem_…`), when the engine knows for certain which memory this
   * path is: the memory pulled, pushed (the id the store's answer named), deleted, renamed, or
   * whose store version wins a conflict; for `refused`, the memory the refused content would
   * have updated. Absent where no memory is involved (a new file refused) or none is known (a
   * local deletion of a path whose memory id was never learned).
   */
  memoryId?: string;
}

export interface TransferEvent extends PathEvent {
  /** sha256 (lowercase hex) of the content written or sent. */
  sha: string;
  /**
   * The id (`memver_…`) of the memory version written to disk, or created by the push, when the
   * store said which: its answer to the fetch or the write, or the listing or change feed the
   * pass read the memory from. Absent when the store's client gave none.
   */
  versionId?: string;
}

export interface RenamedEvent extends PathEvent {
  /** The old path, wire form. */
  from: string;
  side: 'local' | 'remote';
  /** sha256 of the content, the same at both paths. */
  sha: string;
  /**
   * The memory version that holds the memory at its new path, when the store said: the answer
   * to the rename (`remote`), or the listing or feed that showed it (`local`).
   */
  versionId?: string;
}

export interface ConflictEvent extends PathEvent {
  /**
   * The store's version, the winner, when the store said which (`memver_…`); `memoryId` is its
   * memory. The loser is local content that no version holds: `localSha` names it.
   */
  versionId?: string;
  /** sha256 of the store's version, the one that wins and is written over the file. */
  storeSha: string;
  /** sha256 of the local content that loses. */
  localSha: string;
  /** The losing local content, exactly as it is on disk. */
  localContent: Uint8Array;
  /** Host path of the conflict copy written beside the file (`conflictCopies: true`), else null. */
  copyPath: string | null;
}

export interface ProgressEvent {
  phase: 'materialize' | 'finalize';
  memoryStoreId: string;
  done: number;
  total: number;
}

/** The pre-filled per-store channel the engine emits into: it adds the store and host path. */
export interface StoreEvents {
  /** Write the loser of a conflict beside the file (`conflictCopies`). */
  readonly conflictCopies: boolean;
  /** Where a wire path lies on the host. */
  hostPath(path: string): string;
  conflict(e: Omit<ConflictEvent, 'memoryStoreId' | 'hostPath'>): void;
  pulled(e: Omit<TransferEvent, 'memoryStoreId' | 'hostPath'> & { reason: 'remote_change' | 'restore' | 'conflict' }): void;
  pushed(e: Omit<TransferEvent, 'memoryStoreId' | 'hostPath'>): void;
  deleted(e: Omit<PathEvent, 'memoryStoreId' | 'hostPath'> & { side: 'local' | 'remote' }): void;
  renamed(e: Omit<RenamedEvent, 'memoryStoreId' | 'hostPath'>): void;
  refused(e: Omit<PathEvent, 'memoryStoreId' | 'hostPath'> & { code: PathReasonCode; reason: string }): void;
  /** Counts of the current phase; dropped outside materialize and finalize. */
  progress(done: number, total: number): void;
}
