import type { LocalSnapshot } from '../local/scan.js';
import { EMPTY_SHA } from '../model/sha256.js';

/**
 * Folder trust, decided before the table runs: is this still the folder we made for
 * this store, and is it in a state the table can be trusted with?
 *
 * - `distrusted` is sticky (the caller never syncs the folder again, nor removes it): someone
 *   else's files are there, and the worker never adopts or deletes what it did not create.
 * - `redownload`: nothing of the agent's is left to lose, so the folder is rebuilt from the store
 *   with no deletes and no uploads. This is also how a wiped folder is kept from reading as
 *   "the agent deleted every memory".
 * - `unreadable`: this pass cannot tell; try again next pass.
 */
export type FolderVerdict =
  | { kind: 'trusted' }
  | { kind: 'distrusted'; reason: string }
  | { kind: 'redownload'; code: 'folder_gone' | 'folder_emptied' | 'folder_wiped'; reason: string }
  | { kind: 'unreadable'; reason: string };

/**
 * `baseline`: the paths of the memory files expected on disk. `movedShas`, when given: their
 * contents; a file elsewhere holding one of them is that memory moved (a folder renamed as a
 * whole), not a wipe, and the table's rename rows take it from there.
 */
export function assessFolder(
  snapshot: LocalSnapshot,
  baseline: ReadonlySet<string> | ReadonlyMap<string, unknown>,
  movedShas?: ReadonlySet<string> | (() => ReadonlySet<string>),
): FolderVerdict {
  if (snapshot.root === 'not_directory') return { kind: 'distrusted', reason: 'the store path is no longer a directory' };
  // Never adopted: the folder the agent sees now is not the one made, whatever it holds.
  if (snapshot.root === 'replaced') return { kind: 'distrusted', reason: 'a different folder is at the store path (or on the way to it)' };
  if (snapshot.root === 'missing') return { kind: 'redownload', code: 'folder_gone', reason: 'the store folder is gone' };
  const rootBlocked = snapshot.blocked.get('/');
  if (rootBlocked) return { kind: 'unreadable', reason: `the store ${rootBlocked.detail}` };
  // An I/O error says nothing about whose folder this is: never distrust on it, read again next pass.
  if (snapshot.marker === 'unreadable') return { kind: 'unreadable', reason: 'the store marker could not be read' };
  const hasEntries = snapshot.files.size > 0 || snapshot.blocked.size > 0;
  if (snapshot.marker === 'foreign') return { kind: 'distrusted', reason: 'the marker names another store or is damaged' };
  if (snapshot.marker === 'missing') {
    return hasEntries
      ? { kind: 'distrusted', reason: 'the marker is missing and files are present' }
      : { kind: 'redownload', code: 'folder_emptied', reason: 'the folder was emptied (marker gone, no files)' };
  }
  // Marker intact. "Every memory file gone" counts the files the baseline knows: a wipe followed
  // by one new file is still a wipe, and must not read as the agent deleting every memory.
  if (baseline.size > 1 && !someBaselineFileLeft(snapshot, baseline) && !someMovedFile(snapshot, typeof movedShas === 'function' ? movedShas() : movedShas)) {
    return { kind: 'redownload', code: 'folder_wiped', reason: 'every memory file is gone at once (folder wiped)' };
  }
  return { kind: 'trusted' };
}

function someBaselineFileLeft(snapshot: LocalSnapshot, baseline: ReadonlySet<string> | ReadonlyMap<string, unknown>): boolean {
  // A link or a special file where a memory was is not that memory: it does not count as left.
  const unknown = (path: string) => snapshot.blocked.has(path) && !snapshot.notFiles?.has(path);
  for (const path of baseline.keys()) {
    if (snapshot.files.has(path) || unknown(path)) return true;
  }
  // A folder that could not be read may hide baseline files: their absence is unknown, not a wipe.
  for (const blocked of snapshot.blocked.keys()) {
    if (!unknown(blocked)) continue;
    for (const path of baseline.keys()) if (path.startsWith(`${blocked}/`)) return true;
  }
  return false;
}

function someMovedFile(snapshot: LocalSnapshot, shas: ReadonlySet<string> | undefined): boolean {
  if (!shas || shas.size === 0) return false;
  for (const file of snapshot.files.values()) if (file.sha !== EMPTY_SHA && shas.has(file.sha)) return true;
  return false;
}
