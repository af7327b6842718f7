/**
 * Why the engine left something alone, as data: a `code` that programs branch on, and a
 * `detail` (a sentence, with the numbers and names of this case) for people. No code ever
 * tests a detail; docs/reports.md lists every code.
 */

/** Why a whole store was skipped, failed or re-downloaded (`StoreSyncReport.code`). */
export type StoreReasonCode =
  /** The folder failed the trust check: never synced again this session. */
  | 'distrusted'
  /** The folder or its marker could not be read; tried again next pass. */
  | 'folder_unreadable'
  /** A time bound (`syncTimeout`, `finalSyncTimeout`) ran out before or during the pass. */
  | 'time_bound'
  /** The store could not be read (a listing failed): `detail` names the StoreError kind. */
  | 'store_error'
  /** The store was unavailable at its last passes: skipped until its circuit breaker probes it again. */
  | 'backing_off'
  /** The disk failed under the pass (an I/O error outside any one path). */
  | 'filesystem_error'
  /** The store folder was gone: re-downloaded (or, in a push-only flush, left). */
  | 'folder_gone'
  /** The marker and every file were gone: re-downloaded (or, in a push-only flush, left). */
  | 'folder_emptied'
  /** Every memory file was gone at once: re-downloaded (or, in a push-only flush, left). */
  | 'folder_wiped';

/** Why one path was left alone, refused or not pushed (`skippedPaths`, `refused`, `unpushed`). */
export type PathReasonCode =
  // What the scan or a re-check found at the path.
  /** A symlink (the entry, or a folder on its way): never followed, never synced. */
  | 'is_symlink'
  /** A FIFO, socket or device (or a file where a folder on the way was expected). */
  | 'not_regular'
  /** A folder where a file was expected (one that holds files is never removed). */
  | 'is_folder'
  /** A regular file with other hard links: possibly a host file linked in, never read. */
  | 'hard_link'
  /** Local content over the 100 kB memory limit: never read past it, never pushed. */
  | 'too_large'
  /** Local content that is not UTF-8 text. */
  | 'not_utf8'
  /** A local path no memory can have (or that a mount keeps for itself). */
  | 'bad_path'
  /** An entry whose name is not UTF-8. */
  | 'bad_name'
  /** A folder deeper or longer than any memory path can be: not read. */
  | 'too_deep'
  /** An entry (or a folder above it) could not be read. */
  | 'unreadable'
  /** A folder changed identity between two steps of one operation. */
  | 'swapped'
  /** Something already stands where a download would write. */
  | 'taken'
  /** The disk refused the name (too long, invalid on this file system). */
  | 'disk_refused'
  // What the store said or holds.
  /** The store rejected the content (400/413/422): not sent again until it changes. */
  | 'rejected'
  /** A remote memory over the size limit: not written to disk. */
  | 'remote_too_large'
  /** A remote path that cannot live in a mount (escapes it, the marker's name, a temp-file name...). */
  | 'remote_bad_path'
  /** The store listed the same path twice. */
  | 'listed_twice'
  /** Differs only in case from another memory, on a disk that ignores case. */
  | 'case_clash'
  /** A remote memory whose path is also a folder of other memories. */
  | 'path_is_folder'
  // What the engine decided.
  /** A read-only store: local changes are kept on disk and never pushed. */
  | 'read_only'
  /** A new file written less than `newFileSettle` ago: left for the next pass. */
  | 'settling'
  /** The file changed on disk after the scan (or after the read a write was to replace): left for the next pass. */
  | 'changed_during_sync'
  /** The memory was renamed in the store after the listing: the next pass follows it. */
  | 'renamed_during_sync'
  /** A file missing at planning time was back before its remote delete. */
  | 'reappeared'
  /**
   * The memory was absent from one listing only: the file is kept, not deleted, until the store
   * confirms the deletion (a `get` answering `not_found`, a `deleted` version, a second listing).
   */
  | 'absence_unconfirmed'
  /** The store marker failed its last-moment check: no remote delete sent. */
  | 'marker_check_failed'
  /** Both sides changed differently; the store keeps its version. */
  | 'conflict'
  /**
   * A conflict the store wins, but the conflict copy asked for (`conflictCopies`) could not be
   * written: the local file is kept and nothing is pulled this pass (SPEC 6.6).
   */
  | 'conflict_copy_failed'
  /**
   * A conflict the store wins, but the local loser is a file the engine never reads (over the
   * size limit, or hard-linked): it cannot be handed over, so it is kept and nothing is pulled.
   */
  | 'conflict_loser_unread'
  /** A time bound ran out before the action was sent. */
  | 'time_bound'
  /** The push was sent and failed (`detail` has the StoreError kind). */
  | 'push_failed';

export type ReasonCode = StoreReasonCode | PathReasonCode;

/** A reason as data. */
export interface Reason<C extends ReasonCode = ReasonCode> {
  code: C;
  detail: string;
}
