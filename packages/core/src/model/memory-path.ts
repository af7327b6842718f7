import { MARKER_FILE, MAX_PATH_BYTES, MAX_PATH_SEGMENTS } from './limits.js';
import { isConflictCopyName, isTempFileName } from './unsynced-names.js';

/**
 * Rules for memory paths, the wire form `/a/b.md`. Two layers:
 * - `memoryPathProblem`: what the service itself accepts. The emulator enforces it.
 * - `mountablePathProblem`: that, plus what a mount cannot hold safely (the marker, temp-file
 *   names, backslashes). A remote memory failing it is skipped with a warning; a local file
 *   failing it is never pushed.
 */

// Control (Cc) and format (Cf) characters, and the line/paragraph separators U+2028/U+2029
// (Zl, Zp): invisible or line-breaking, all refused by the service.
const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
// A lone surrogate has no UTF-8 form: the service cannot store it, and no file name holds it.
const LONE_SURROGATE = /\p{Cs}/u;
const utf8 = new TextEncoder();

/** Why the service would refuse `path`, or `null` when it is a valid memory path. */
export function memoryPathProblem(path: string): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'is empty';
  if (!path.startsWith('/')) return 'does not start with /';
  if (path.includes('\0')) return 'contains NUL';
  if (CONTROL_OR_FORMAT.test(path)) return 'contains a control or format character';
  if (LONE_SURROGATE.test(path)) return 'contains a lone surrogate (no UTF-8 form)';
  if (path.normalize('NFC') !== path) return 'is not NFC-normalised';
  if (utf8.encode(path).length > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  const segments = path.slice(1).split('/');
  if (segments.length > MAX_PATH_SEGMENTS) return `has more than ${MAX_PATH_SEGMENTS} segments`;
  for (const segment of segments) {
    if (segment === '') return 'has an empty segment';
    if (segment === '.' || segment === '..') return `has a '${segment}' segment`;
  }
  return null;
}

/** Why `path` cannot live in a mount, or `null` when it can. */
export function mountablePathProblem(path: string): string | null {
  const problem = memoryPathProblem(path);
  if (problem) return problem;
  // On POSIX a backslash is an ordinary character, but other tools read it as a separator.
  if (path.includes('\\')) return 'contains a backslash';
  if (path === `/${MARKER_FILE}`) return 'names the store marker';
  const base = path.slice(path.lastIndexOf('/') + 1);
  if (isTempFileName(base)) return 'looks like a temp file of an atomic write';
  if (isConflictCopyName(base)) return 'looks like a conflict copy (<name>.conflict-<timestamp>.<ext>), which never syncs';
  return null;
}

/** `/a/b.md` -> `['a', 'b.md']`. Only for paths that passed `memoryPathProblem`. */
export function pathSegments(path: string): string[] {
  return path.slice(1).split('/');
}

/** The wire paths of the folders that hold `path`: `/a/b/c.md` -> `['/a', '/a/b']`. */
export function ancestorPaths(path: string): string[] {
  const segments = pathSegments(path);
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) out.push(`/${segments.slice(0, i).join('/')}`);
  return out;
}
