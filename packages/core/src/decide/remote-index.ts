import { ancestorPaths, mountablePathProblem } from '../model/memory-path.js';
import type { RemoteEntry } from './plan.js';
import type { PathReport } from '../model/reports.js';
import type { StoreMemory } from '../remote/store-client.js';

/**
 * Turns a listing into the planner's remote side, refusing what server data must not do to a
 * mount: paths that escape it or cannot be files (see mountablePathProblem), the same path
 * twice, and a memory whose path is also a folder of other memories (a file and a folder cannot
 * share a name on disk).
 */
export interface RemoteIndex {
  remote: Map<string, RemoteEntry>;
  skipped: PathReport[];
}

export function indexRemote(
  memories: Iterable<Pick<StoreMemory, 'id' | 'path' | 'content_sha256' | 'memory_version_id'>>,
  opts: { caseInsensitiveDisk?: boolean } = {},
): RemoteIndex {
  const remote = new Map<string, RemoteEntry>();
  const skipped: RemoteIndex['skipped'] = [];
  // On a case-insensitive disk, /Notes.md and /notes.md are one file: only the first in path
  // order gets it, so that neither memory is ever written over the other's file.
  const byFoldedPath = new Map<string, string>();
  const sorted = [...memories].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const memory of sorted) {
    const problem = mountablePathProblem(memory.path);
    const folded = memory.path.toLowerCase();
    const twin = opts.caseInsensitiveDisk ? byFoldedPath.get(folded) : undefined;
    if (problem) skipped.push({ path: memory.path, code: 'remote_bad_path', reason: `remote path ${problem}` });
    else if (remote.has(memory.path)) skipped.push({ path: memory.path, code: 'listed_twice', reason: 'listed twice by the store' });
    else if (twin !== undefined) {
      skipped.push({ path: memory.path, code: 'case_clash', reason: `differs only in case from ${twin}, and this disk ignores case` });
    }
    else {
      const versionId = memory.memory_version_id;
      remote.set(memory.path, { id: memory.id, sha: memory.content_sha256, ...(typeof versionId === 'string' && { versionId }) });
      byFoldedPath.set(folded, memory.path);
    }
  }
  const folders = new Set<string>();
  for (const path of remote.keys()) for (const folder of ancestorPaths(path)) folders.add(folder);
  for (const path of folders) {
    if (remote.delete(path)) skipped.push({ path, code: 'path_is_folder', reason: 'remote path is also a folder of other memories' });
  }
  return { remote, skipped };
}

/**
 * On a case-insensitive disk a file may be listed under another spelling than its memory's
 * (`/notes.md` for `/Notes.md`). Renames such local paths to the spelling the store or the
 * baseline uses, so the table compares the file with its own memory, not with "a new file" and
 * "a deleted memory".
 */
export function alignLocalCase<T>(local: ReadonlyMap<string, T>, known: Iterable<string>): Map<string, T> {
  const spelling = new Map<string, string>();
  for (const path of known) spelling.set(path.toLowerCase(), path);
  const aligned = new Map<string, T>();
  for (const [path, value] of local) aligned.set(spelling.get(path.toLowerCase()) ?? path, value);
  return aligned;
}
