import { posix } from 'node:path';
import { errorCode, type FileSystem } from './file-system.js';
import { pathSegments } from './memory-path.js';
import { sha256Hex } from './sha256.js';

/**
 * The executor's disk operations on one memory file, each re-checking the disk at the moment
 * it acts. Paths reaching here passed `mountablePathProblem`, so joining their segments under
 * the store root cannot leave it; links on the way are refused here, not followed.
 */

export function hostPathOf(storeRoot: string, wirePath: string): string {
  return posix.join(storeRoot, ...pathSegments(wirePath));
}

/** What is at a memory's place on disk right now: a file's sha, absent, or something else. */
export type LocalNow = { kind: 'file'; sha: string } | { kind: 'absent' } | { kind: 'other'; reason: string };

export async function localNow(fs: FileSystem, hostPath: string): Promise<LocalNow> {
  try {
    return { kind: 'file', sha: sha256Hex(await fs.readFile(hostPath)) };
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'other', reason: 'is a symlink' };
    if (code === 'EINVAL' || code === 'EISDIR') return { kind: 'other', reason: 'is not a regular file' };
    throw err;
  }
}

/** The local state a planner expected (`null`: absent) still holds. */
export function stillAsPlanned(now: LocalNow, expected: string | null): boolean {
  return expected === null ? now.kind === 'absent' : now.kind === 'file' && now.sha === expected;
}

/**
 * Makes the folders above `wirePath`, one level at a time, mode 0700. Returns why it cannot, or
 * null. A recursive mkdir would follow a symlinked folder out of the mount; this never does.
 */
export async function ensureFolders(fs: FileSystem, storeRoot: string, wirePath: string): Promise<string | null> {
  const segments = pathSegments(wirePath);
  let dir = storeRoot;
  for (const segment of segments.slice(0, -1)) {
    dir = posix.join(dir, segment);
    const stat = await fs.lstat(dir);
    if (stat?.type === 'directory') continue;
    if (stat) return `${dir} ${stat.type === 'symlink' ? 'is a symlink' : 'is not a folder'}`;
    try {
      await fs.mkdir(dir, { mode: 0o700 });
    } catch (err) {
      // Another transfer of this pass made it first: fine if it is a folder now.
      if (errorCode(err) !== 'EEXIST' || (await fs.lstat(dir))?.type !== 'directory') throw err;
    }
  }
  return null;
}
