import type { StoreReasonCode } from '../model/reasons.js';
import type { StoreRequests, StoreSyncReport } from '../model/reports.js';
import type { SyncState } from '../model/sync-state.js';
import { localChanges, type LastScan } from '../decide/unpushed.js';
import type { Access } from '../model/types.js';

/** One store's state, as `mounter.status()` reports it. Plain data. */
export interface StoreStatus {
  memoryStoreId: string;
  name: string;
  /** Host path of the store folder. */
  path: string;
  access: Access;
  /** When the last pass (or the materialize download) ended, ISO 8601; null before materialize. */
  lastPassAt: string | null;
  /** The last pass's status (`downloaded` for the materialize download); null before materialize. */
  lastOutcome: StoreSyncReport['status'] | 'downloaded' | null;
  /** The last pass's reason, when it was skipped, failed or re-downloaded: `lastCode` for programs, `lastReason` for people. */
  lastCode?: StoreReasonCode;
  lastReason?: string;
  /** From when (ISO 8601) `reconcile()` without `force` runs a pass; null once finalized. */
  nextPassDueAt: string | null;
  /**
   * Local files new, modified or missing against the baseline, as the last scan saw them (the
   * download for a fresh mount: 0). Deletion candidates are in `pendingDeletions`, not here.
   */
  pendingLocalChanges: number;
  /**
   * The store requests the last pass (or the materialize download) cost, as its report says
   * (`StoreSyncReport.requests`); null before materialize.
   */
  lastRequests: StoreRequests | null;
  /** Local deletions not sent yet (grace period, cap, `log_only` or `disabled`), from the last pass. */
  pendingDeletions: string[];
  /** Why the folder is no longer trusted (the folder is never synced again); null while trusted. */
  distrusted: string | null;
  /**
   * The circuit breaker, while the store is unavailable: how many passes in a row
   * found it so, and from when (ISO 8601) the next pass probes it with one request;
   * `probing` while that probe runs. Null while the store answers.
   */
  backoff: { failures: number; nextProbeAt: string; probing: boolean } | null;
  /**
   * Writes sent whose outcome is not known (the response was lost, or the call timed out), by
   * path: each stays here until a listing of the store shows what it holds. A memory holding
   * exactly `sha` then is this mounter's own write. Sorted by path; empty when none.
   */
  unknownWrites: UnknownWrite[];
}

/** A push whose outcome is unknown: what was sent to which path. */
export interface UnknownWrite {
  /** Wire form, `/notes/a.md`. */
  path: string;
  /** sha256 of the content sent. */
  sha: string;
}

/**
 * Local changes the last scan saw (against the baseline of that moment) that are still not in
 * the store: finalize's `localChanges`, less deletions (counted in `pendingDeletions` instead),
 * files a pull replaced since (`pulled`, a conflict the store won) and content refused for good.
 */
export function pendingLocalChanges(state: SyncState, scan: LastScan | null, pulled: readonly string[]): number {
  if (!scan) return 0;
  const replaced = new Set(pulled);
  const changes = localChanges({ baseline: state.baseline, files: scan.files, baselineAtScan: scan.baseline });
  return changes.filter(({ path, change }) => change !== 'deleted' && !replaced.has(path) && state.refused.get(path) !== scan.files.get(path)!.sha).length;
}
