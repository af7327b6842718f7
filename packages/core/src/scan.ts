import { posix } from 'node:path';
import { Semaphore } from 'async-mutex';
import { errorCode, type FileSystem } from './file-system.js';
import { MARKER_FILE, MAX_MEMORY_BYTES } from './limits.js';
import { readMarker, type MarkerState } from './marker.js';
import { mountablePathProblem } from './memory-path.js';
import { sha256Hex } from './sha256.js';
import { isTempFileName } from './temp-files.js';
import { decodeUtf8 } from './utf8.js';

/** A regular file in the mount, by its wire path. */
export interface LocalFile {
  sha: string;
  size: number;
  /** Why this content can never be pushed as it is; absent when it can. */
  unpushable?: string;
}

/**
 * What one scan saw of a store directory.
 *
 * Invariant: a wire path is in `files` only if a regular file was read there in this scan. A
 * path (or folder) whose state could not be known is in `blocked` instead, never simply absent:
 * absence means "deleted" to the planner, and an unreadable folder must not look deleted.
 */
export interface LocalSnapshot {
  root: 'directory' | 'missing' | 'not_directory';
  marker: MarkerState;
  files: Map<string, LocalFile>;
  /** Wire paths of entries left alone (symlinks, special files, unreadable), with the reason. */
  blocked: Map<string, string>;
}

/**
 * What a previous scan learnt of each file, so an unchanged file is not read again. Kept by the
 * caller between scans; `scanStore` refreshes it in place.
 */
export type ScanCache = Map<string, { size: number; mtimeMs: number; ctimeMs: number; hashedAt: number; file: LocalFile }>;

/**
 * A file changed within this long of being hashed could change again without moving its
 * timestamps (coarse clocks, same-tick writes); it is read again until it is older than that.
 */
const RACY_WINDOW_MS = 2_000;
/** Files read at once: enough to keep libuv's pool busy, few enough to bound memory. */
const READ_CONCURRENCY = 16;

export async function scanStore(
  fs: FileSystem,
  storeRoot: string,
  memoryStoreId: string,
  cache: ScanCache = new Map(),
): Promise<LocalSnapshot> {
  const snapshot: LocalSnapshot = { root: 'directory', marker: 'missing', files: new Map(), blocked: new Map() };
  const rootStat = await fs.lstat(storeRoot);
  if (!rootStat) return { ...snapshot, root: 'missing' };
  if (rootStat.type !== 'directory') return { ...snapshot, root: 'not_directory' };
  snapshot.marker = await readMarker(fs, storeRoot, memoryStoreId);
  const filesFound: { hostPath: string; wirePath: string }[] = [];
  await scanDirectory(fs, storeRoot, '', snapshot, filesFound);
  const slots = new Semaphore(READ_CONCURRENCY);
  await Promise.all(filesFound.map((f) => slots.runExclusive(() => scanFile(fs, f.hostPath, f.wirePath, snapshot, cache))));
  for (const path of cache.keys()) if (!snapshot.files.has(path)) cache.delete(path);
  return snapshot;
}

async function scanDirectory(
  fs: FileSystem,
  hostDir: string,
  wireDir: string,
  out: LocalSnapshot,
  filesFound: { hostPath: string; wirePath: string }[],
): Promise<void> {
  let entries;
  try {
    entries = await fs.readdir(hostDir);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return; // removed while scanning: it is simply gone
    out.blocked.set(wireDir || '/', `folder could not be read (${errorCode(err) ?? String(err)})`);
    return;
  }
  for (const entry of entries) {
    if (wireDir === '' && entry.name === MARKER_FILE) continue;
    if (isTempFileName(entry.name)) continue;
    const wirePath = `${wireDir}/${entry.name}`;
    const hostPath = posix.join(hostDir, entry.name);
    switch (entry.type) {
      case 'directory':
        await scanDirectory(fs, hostPath, wirePath, out, filesFound);
        break;
      case 'file':
        filesFound.push({ hostPath, wirePath });
        break;
      case 'symlink':
        out.blocked.set(wirePath, 'is a symlink');
        break;
      default:
        out.blocked.set(wirePath, 'is not a regular file');
    }
  }
}

async function scanFile(fs: FileSystem, hostPath: string, wirePath: string, out: LocalSnapshot, cache: ScanCache): Promise<void> {
  const stat = await fs.lstat(hostPath).catch(() => null);
  const known = cache.get(wirePath);
  if (
    stat?.type === 'file' &&
    known &&
    known.size === stat.size &&
    known.mtimeMs === stat.mtimeMs &&
    known.ctimeMs === stat.ctimeMs &&
    known.hashedAt - Math.max(stat.mtimeMs, stat.ctimeMs) > RACY_WINDOW_MS
  ) {
    out.files.set(wirePath, known.file);
    return;
  }
  const hashedAt = Date.now();
  let bytes: Uint8Array;
  try {
    bytes = await fs.readFile(hostPath);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return;
    // ELOOP/EINVAL: swapped for a link or a special file between readdir and open.
    const reason = code === 'ELOOP' ? 'is a symlink' : code === 'EINVAL' ? 'is not a regular file' : `could not be read (${code ?? String(err)})`;
    out.blocked.set(wirePath, reason);
    return;
  }
  const file: LocalFile = { sha: sha256Hex(bytes), size: bytes.byteLength };
  const pathProblem = mountablePathProblem(wirePath);
  if (pathProblem) file.unpushable = `path ${pathProblem}`;
  else if (bytes.byteLength > MAX_MEMORY_BYTES) file.unpushable = `is larger than ${MAX_MEMORY_BYTES} bytes`;
  else if (decodeUtf8(bytes) === null) file.unpushable = 'is not UTF-8 text';
  out.files.set(wirePath, file);
  // Cache only when the stat taken before the read still describes what was read.
  if (stat?.type === 'file' && stat.size === bytes.byteLength) {
    cache.set(wirePath, { size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, hashedAt, file });
  }
}
