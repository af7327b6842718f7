/**
 * Where a path really lands: the resolution the kernel performs on open(2), done component by
 * component, so a guard judges the place a write would reach rather than the string it was given.
 * Pure: the one thing it learns from the disk comes through `readLink`.
 */

/** Symlinks one resolution may follow before giving up, as Linux does (MAXSYMLINKS). */
export const MAX_SYMLINKS = 40;

/**
 * The target of the symlink at `path` (an absolute path with no `.`, `..` or link in it), or
 * `null` when `path` is not a symlink or nothing is there (ENOENT, ENOTDIR). Other failures
 * (EACCES, EIO) are thrown.
 */
export type ReadLink = (path: string) => string | null;

/** A resolution followed more than MAX_SYMLINKS links: a loop, or a chain the kernel refuses too. */
export class SymlinkLoopError extends Error {
  override name = 'SymlinkLoopError';
  /** Node's code for what the kernel answers: too many levels of symbolic links. */
  readonly code = 'ELOOP';
  constructor(readonly path: string) {
    super(`ELOOP: more than ${MAX_SYMLINKS} symbolic links while resolving '${path}'`);
  }
}

/**
 * Resolves the absolute `path` as the kernel does, from `/`:
 * - empty components (`//`) and `.` are skipped;
 * - `..` goes to the parent of what has been resolved so far, links already followed (at `/`
 *   it stays at `/`);
 * - a component that is a symlink is replaced by its target, and resolution goes on through the
 *   target's components: an absolute target restarts from `/`, a relative one from the folder
 *   holding the link. The last component is followed too, as open(2) without O_NOFOLLOW does;
 * - a component that is absent (or not a link) is kept as it is. Nothing below an absent entry
 *   exists, so link-following ends there in effect; a later `..` that climbs back above it
 *   treats it as the folder a `mkdir -p` would make, and resolution resumes at what exists.
 *   (The kernel would answer ENOENT for `missing/..`; judging the place the path names once
 *   the folder is made is the stricter of the two readings.)
 * Returns the resolved path: absolute, normalised, with no symlink among its existing parts.
 * Throws SymlinkLoopError past MAX_SYMLINKS links, and whatever `readLink` throws.
 */
export function resolveKernelPath(path: string, readLink: ReadLink): string {
  if (!path.startsWith('/')) throw new TypeError(`resolveKernelPath takes an absolute path; got ${JSON.stringify(path)}`);
  const resolved: string[] = [];
  // Components still to walk, the next one last, so links can push their targets in front.
  const pending = components(path);
  let links = 0;
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (name === '' || name === '.') continue;
    if (name === '..') {
      resolved.pop();
      continue;
    }
    resolved.push(name);
    const target = readLink(`/${resolved.join('/')}`);
    if (target === null) continue;
    if (++links > MAX_SYMLINKS) throw new SymlinkLoopError(path);
    resolved.pop();
    if (target.startsWith('/')) resolved.length = 0;
    pending.push(...components(target));
  }
  return `/${resolved.join('/')}`;
}

/** `path`'s components in reverse order (the first one last). */
function components(path: string): string[] {
  return path.split('/').reverse();
}
