import { ancestorPaths } from '../model/memory-path.js';
import type { PathReasonCode, Reason } from '../model/reasons.js';
import type { StoreSyncReport, UnpushedReport } from '../model/reports.js';

/**
 * Which local changes finalize leaves unpushed: every one is named, with the reason.
 * Pure: the mounter hands in the flush's report, the baseline and the last trusted scan.
 */

/** What a store's last trusted scan saw, and the baseline at that moment. */
export interface LastScan {
  files: ReadonlyMap<string, { sha: string }>;
  /** Paths (or folders) the scan could not see into, with why (`unreadable`: a read error). */
  blocked: ReadonlyMap<string, Reason<PathReasonCode>>;
  baseline: ReadonlyMap<string, string>;
}

/**
 * The last scan as it reads once the pass has moved files on disk (following the store's
 * renames): each moved file, and the baseline it was scanned against, at its new path. Without
 * this, an edit moved with its file and then not pushed (the pass cut off) was named at the
 * path it left, and finalize removed the folder with the edit at a path no report named.
 */
export function scanAfterMoves(scan: LastScan, moves: readonly { from: string; to: string }[]): LastScan {
  const moved = moves.filter(({ from, to }) => scan.files.has(from) && !scan.files.has(to));
  if (moved.length === 0) return scan;
  const files = new Map(scan.files);
  const baseline = new Map(scan.baseline);
  for (const { from, to } of moved) {
    files.set(to, files.get(from)!);
    files.delete(from);
    const agreed = baseline.get(from);
    baseline.delete(from);
    if (agreed !== undefined) baseline.set(to, agreed);
  }
  return { ...scan, files, baseline };
}

export type LocalChange = 'edited' | 'new' | 'deleted';

export interface LocalChangesInput {
  /** path -> sha both sides agree on now. */
  baseline: ReadonlyMap<string, string>;
  /** The files the scan found. */
  files: ReadonlyMap<string, { sha: string }>;
  /**
   * The baseline when the scan was taken (default: `baseline`). A file that still held it is no
   * local change, even if a pass has since moved the baseline (a pull wrote over it).
   */
  baselineAtScan?: ReadonlyMap<string, string>;
  /** Paths (or folders) the scan could not see: nothing is known of what lies there. */
  blocked?: ReadonlyMap<string, unknown>;
}

/**
 * The local differences from the baseline, sorted by path: files whose content the baseline
 * does not hold (`edited`), files it does not know (`new`), and baseline paths the scan did not
 * find (`deleted`; a path the baseline gained after the scan was pulled, not deleted).
 */
export function localChanges(input: LocalChangesInput): { path: string; change: LocalChange }[] {
  const { baseline, files } = input;
  const atScan = input.baselineAtScan ?? baseline;
  const blocked = input.blocked ?? new Map<string, unknown>();
  const out: { path: string; change: LocalChange }[] = [];
  for (const [path, file] of files) {
    const now = baseline.get(path);
    const then = atScan.get(path);
    if (file.sha === now || file.sha === then) continue;
    out.push({ path, change: now === undefined && then === undefined ? 'new' : 'edited' });
  }
  for (const path of baseline.keys()) {
    if (files.has(path) || !atScan.has(path) || isBlocked(path, blocked)) continue;
    out.push({ path, change: 'deleted' });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

const CHANGE_TEXT: Record<LocalChange, string> = {
  edited: 'edited locally',
  new: 'new local file',
  deleted: 'deleted locally',
};

/**
 * The local changes of one read-write store that its push-only flush did not get into the store.
 *
 * When the flush planned, its report says what happened to each: cut off, failed, refused, a
 * conflict the store wins, or skipped at the last-moment re-check. (It never sends deletions, so
 * those are not named; the final sync reports the ones it held back in `pendingDeletions`.)
 * When it could not plan (the listing failed or a time bound cut it off), nothing was pushed:
 * every local difference of the last trusted scan is named, with the flush's reason. When it
 * found the folder wiped (and a flush never re-downloads), the files made since are named.
 *
 * A path the scan could not read (a file, or a folder it could not list: EIO, EACCES, EMFILE)
 * is a change of unknown content (SPEC 6.6), never "nothing to push": it is named with the code
 * `unreadable`. A flush that could not read the folder at all (`folder_unreadable`: the folder or
 * its marker) names the folder itself, `/`. Finalize keeps a folder with either (`keptUnread`).
 *
 * `memoryIds` (path -> the memory the baseline was agreed with) names the memory of each path
 * that has one: the memory the change would have gone to.
 */
export function unpushedChanges(
  flush: StoreSyncReport,
  baseline: ReadonlyMap<string, string>,
  lastScan: LastScan | null,
  memoryIds: ReadonlyMap<string, string> = new Map(),
): UnpushedReport[] {
  if (flush.access !== 'read_write') return [];
  const differences = lastScan
    ? localChanges({ baseline, files: lastScan.files, baselineAtScan: lastScan.baseline, blocked: lastScan.blocked })
    : [];
  const named = new Map<string, UnpushedReport>();
  const name = (path: string | undefined, code: UnpushedReport['code'], reason: string) => {
    if (path === undefined || named.has(path)) return;
    const memoryId = memoryIds.get(path);
    named.set(path, { path, code, reason, ...(memoryId !== undefined && { memoryId }) });
  };
  if (!flushPlanned(flush)) {
    // The store's own code says why nothing of it was pushed (a time bound, a failed listing, a wipe).
    const code = flush.code ?? 'store_error';
    if (code === 'folder_unreadable') name('/', code, `the store folder could not be read, so what it holds is unknown: ${flush.reason ?? flush.status}`);
    const change = (d: { path: string; change: LocalChange }) => name(d.path, code, `${CHANGE_TEXT[d.change]}; not pushed: ${flush.reason ?? flush.status}`);
    // A wiped folder is not re-downloaded by a flush; files made since are still the agent's
    // (the missing ones are the wipe, not deletions).
    if (wipedFolder(flush)) differences.filter((d) => d.change !== 'deleted').forEach(change);
    else if (couldNotRun(flush)) {
      differences.forEach(change);
      // What that earlier scan could not read is unknown still.
      if (lastScan) nameUnreadable(lastScan, name);
    }
    return sortByPath([...named.values()]);
  }
  // A push that failed on the disk failed reading the file (its only disk step): unknown content.
  for (const e of flush.errors) if (e.operation === 'push' && e.kind === 'filesystem') name(e.path, 'unreadable', `could not be read to push it: ${e.message}`);
  for (const e of flush.errors) if (e.operation === 'push') name(e.path, 'push_failed', `push failed (${e.kind}): ${e.message}`);
  // The content is in the store, at the old path: the agent's rename is what would be lost.
  for (const e of flush.errors) if (e.operation === 'rename_remote') name(e.path, 'push_failed', `rename failed (${e.kind}): ${e.message}`);
  for (const path of flush.cutOff) name(path, 'time_bound', 'cut off by the time bound before it was sent');
  for (const r of flush.refused) name(r.path, r.code, `refused: ${r.reason}`);
  for (const path of flush.conflicts) name(path, 'conflict', 'conflict: the memory changed in the store too, and the store keeps its version');
  const changed = new Set(differences.filter((d) => d.change !== 'deleted').map((d) => d.path));
  for (const s of flush.skippedPaths) if (changed.has(s.path)) name(s.path, s.code, `skipped: ${s.reason}`);
  if (lastScan) nameUnreadable(lastScan, name);
  return sortByPath([...named.values()]);
}

/**
 * Whether finalize (and recover) must keep the folder whatever `keepUnpushed` says: something
 * in it could not be read, so removing it would remove content nobody has seen (SPEC 6.6).
 */
export function keptUnread(unpushed: readonly UnpushedReport[]): boolean {
  return unpushed.some((u) => u.code === 'unreadable' || u.code === 'folder_unreadable');
}

/** Each path the scan could not read (a read error, not a link or a bad name), named as a change of unknown content. */
function nameUnreadable(lastScan: LastScan, name: (path: string, code: UnpushedReport['code'], reason: string) => void): void {
  for (const [path, why] of lastScan.blocked) {
    if (why.code !== 'unreadable') continue;
    name(path, 'unreadable', `its content is unknown, so it was not pushed: ${path === '/' ? 'the store folder' : path} ${why.detail}`);
  }
}

function sortByPath(reports: UnpushedReport[]): UnpushedReport[] {
  return reports.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The flush got as far as its plan (some actions may still have failed or been cut off). */
function flushPlanned(flush: StoreSyncReport): boolean {
  return flush.status === 'synced';
}

/** The flush could not plan for a reason that leaves local changes behind (not a distrusted or vanished folder). */
function couldNotRun(flush: StoreSyncReport): boolean {
  return flush.status === 'failed' || (flush.status === 'skipped' && flush.code === 'time_bound');
}

/** The flush found the folder wiped, emptied or gone, and does not re-download. */
export function wipedFolder(flush: StoreSyncReport): boolean {
  // A flush never re-downloads: skipped with a re-download's code is a wipe it left as found.
  return flush.status === 'skipped' && (flush.code === 'folder_gone' || flush.code === 'folder_emptied' || flush.code === 'folder_wiped');
}

function isBlocked(path: string, blocked: ReadonlyMap<string, unknown>): boolean {
  if (blocked.size === 0) return false;
  if (blocked.has(path) || blocked.has('/')) return true;
  return ancestorPaths(path).some((folder) => blocked.has(folder));
}
