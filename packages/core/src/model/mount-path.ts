import { posix } from 'node:path';
import { MOUNT_PREFIX } from './limits.js';

/**
 * Mount paths: where a store appears to the agent (`/mnt/memory/<slug>`) and where that lies on
 * the host (`memoryRoot` + the part after `/mnt/memory`).
 */

/** `'Demo Memory'` -> `'demo-memory'`: lower case, each run of non-alphanumerics one `-`, none at the ends. */
export function mountPathSlug(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * Why `mountPath` is not `/mnt/memory/` plus one or more clean segments, or `null` when it is.
 * Checked on the raw string, not a normalised one: `/mnt/memory/a/../b` is refused, not read as
 * `/mnt/memory/b`, so what the agent was told is exactly where the store lands.
 */
export function mountPathProblem(mountPath: string): string | null {
  if (!mountPath.startsWith(`${MOUNT_PREFIX}/`)) return `is not under ${MOUNT_PREFIX}/`;
  const rest = mountPath.slice(MOUNT_PREFIX.length + 1);
  for (const segment of rest.split('/')) {
    if (segment === '') return 'has an empty segment';
    if (segment === '.' || segment === '..') return `has a '${segment}' segment`;
    if (segment.includes('\0')) return 'contains NUL';
  }
  return null;
}

/** The mount's segments below `/mnt/memory`. Only for paths that passed `mountPathProblem`. */
export function mountSegments(mountPath: string): string[] {
  return mountPath.slice(MOUNT_PREFIX.length + 1).split('/');
}

/** Host path of a valid mount path under `memoryRoot`. */
export function hostPathOf(memoryRoot: string, mountPath: string): string {
  return posix.join(memoryRoot, ...mountSegments(mountPath));
}

/** Two mount paths that would share a folder: equal, equal ignoring case, or one inside the other. */
export function mountPathsClash(a: string, b: string): boolean {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`);
}

/** `path` is `dir` or lies inside it (both normalised, absolute). */
export function isWithin(dir: string, path: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}
