import { ancestorPaths, mountablePathProblem } from './memory-path.js';
import type { RemoteEntry } from './plan.js';
import type { StoreMemory } from './store-client.js';

/**
 * Turns a listing into the planner's remote side, refusing what server data must not do to a
 * mount: paths that escape it or cannot be files (see mountablePathProblem), the same path
 * twice, and a memory whose path is also a folder of other memories (a file and a folder cannot
 * share a name on disk).
 */
export interface RemoteIndex {
  remote: Map<string, RemoteEntry>;
  skipped: { path: string; reason: string }[];
}

export function indexRemote(memories: Iterable<Pick<StoreMemory, 'id' | 'path' | 'content_sha256'>>): RemoteIndex {
  const remote = new Map<string, RemoteEntry>();
  const skipped: RemoteIndex['skipped'] = [];
  for (const memory of memories) {
    const problem = mountablePathProblem(memory.path);
    if (problem) skipped.push({ path: memory.path, reason: `remote path ${problem}` });
    else if (remote.has(memory.path)) skipped.push({ path: memory.path, reason: 'listed twice by the store' });
    else remote.set(memory.path, { id: memory.id, sha: memory.content_sha256 });
  }
  const folders = new Set<string>();
  for (const path of remote.keys()) for (const folder of ancestorPaths(path)) folders.add(folder);
  for (const path of folders) {
    if (remote.delete(path)) skipped.push({ path, reason: 'remote path is also a folder of other memories' });
  }
  return { remote, skipped };
}
