import { Semaphore } from 'async-mutex';
import { errorCode } from './file-system.js';
import { MARKER_FILE } from './limits.js';
import { readMarker, type MarkerState } from './marker.js';
import { mountablePathProblem } from './memory-path.js';
import type { PathReasonCode, Reason } from './reasons.js';
import type { FolderFile, StoreFolder } from './store-folder.js';
import { isUnsyncedName } from './temp-files.js';
import { decodeUtf8 } from './utf8.js';

/** A regular file in the mount, by its wire path. */
export interface LocalFile {
  /** sha256 of the content; for a file never read (too large, hard-linked), a stat fingerprint that equals no sha. */
  sha: string;
  size: number;
  /** Modification time (host clock, ms) when it was read. */
  mtimeMs: number;
  /** Why this content can never be pushed as it is; absent when it can. */
  unpushable?: Reason<PathReasonCode>;
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
  blocked: Map<string, Reason<PathReasonCode>>;
  /**
   * The blocked paths known to be links or special files, not merely unreadable: nothing of the
   * baseline is behind them, so they do not keep a wiped folder from reading as wiped.
   */
  notFiles?: Set<string>;
}

/**
 * What a previous scan learnt of each file, so an unchanged file is not read again. Kept by the
 * caller between scans; `scanStore` refreshes it in place.
 */
export type ScanCache = Map<
  string,
  { size: number; mtimeMs: number; ctimeMs: number; dev: number; ino: number; hashedAt: number; file: LocalFile }
>;

/**
 * A file changed within this long of being hashed could change again without moving its
 * timestamps (coarse clocks, same-tick writes); it is read again until it is older than that.
 */
const RACY_WINDOW_MS = 2_000;
/** Files read at once: enough to keep libuv's pool busy, few enough to bound memory (each read is at most 100 kB). */
const READ_CONCURRENCY = 16;

/** Scans the store folder through its confined handle. Never reads a byte outside it. */
export async function scanStore(folder: StoreFolder, memoryStoreId: string, cache: ScanCache = new Map()): Promise<LocalSnapshot> {
  const snapshot: LocalSnapshot = { root: 'directory', marker: 'missing', files: new Map(), blocked: new Map() };
  const root = await folder.locate();
  if (root !== 'directory') return { ...snapshot, root };
  snapshot.marker = await readMarker(folder, memoryStoreId);
  const slots = new Semaphore(READ_CONCURRENCY);
  const notFiles = new Set<string>();
  snapshot.notFiles = notFiles;
  try {
    await folder.walk(
      async ({ files, blocked }) => {
        for (const { wirePath, reason, code } of blocked) {
          snapshot.blocked.set(wirePath, { code, detail: reason });
          if (code === 'is_symlink' || code === 'not_regular') notFiles.add(wirePath);
        }
        await Promise.all(files.map((file) => slots.runExclusive(() => scanFile(file, snapshot, cache))));
      },
      // The marker is not a memory; temp files of atomic writes (ours, the agent toolset's) are
      // half-written content; conflict copies are kept for a human, never synced. Folders are
      // walked whatever their name.
      (wireDir, entry) => entry.type !== 'directory' && ((wireDir === '' && entry.name === MARKER_FILE) || isUnsyncedName(entry.name)),
    );
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { ...snapshot, root: 'missing' };
    snapshot.blocked.set('/', { code: 'unreadable', detail: `folder could not be read (${errorCode(err) ?? String(err)})` });
  }
  for (const path of cache.keys()) if (!snapshot.files.has(path)) cache.delete(path);
  return snapshot;
}

async function scanFile(entry: FolderFile, out: LocalSnapshot, cache: ScanCache): Promise<void> {
  const { wirePath } = entry;
  const stat = await entry.stat().catch(() => null);
  const known = cache.get(wirePath);
  if (
    stat?.type === 'file' &&
    stat.nlink === 1 &&
    known &&
    known.size === stat.size &&
    known.mtimeMs === stat.mtimeMs &&
    known.ctimeMs === stat.ctimeMs &&
    known.dev === stat.dev &&
    known.ino === stat.ino &&
    known.hashedAt - Math.max(stat.mtimeMs, stat.ctimeMs) > RACY_WINDOW_MS
  ) {
    out.files.set(wirePath, known.file);
    return;
  }
  const hashedAt = Date.now();
  let read;
  try {
    read = await entry.read();
  } catch (err) {
    out.blocked.set(wirePath, { code: 'unreadable', detail: `could not be read (${errorCode(err) ?? (err as Error).message ?? String(err)})` });
    return;
  }
  if (read.kind === 'absent') return;
  if (read.kind === 'other') {
    // Swapped for a link or a special file between the listing and the open.
    out.blocked.set(wirePath, { code: read.code, detail: read.reason });
    if (read.code === 'is_symlink' || read.code === 'not_regular') out.notFiles?.add(wirePath);
    return;
  }
  const file: LocalFile = { sha: read.sha, size: read.size, mtimeMs: read.stat.mtimeMs };
  const pathProblem = mountablePathProblem(wirePath);
  if (pathProblem) file.unpushable = { code: 'bad_path', detail: `path ${pathProblem}` };
  else if (read.unpushable) file.unpushable = read.unpushable;
  else if (read.bytes && decodeUtf8(read.bytes) === null) file.unpushable = { code: 'not_utf8', detail: 'is not UTF-8 text' };
  out.files.set(wirePath, file);
  // Cache only when the stat taken before the read still describes what was read.
  const { stat: opened } = read;
  if (stat?.type === 'file' && stat.ino === opened.ino && stat.size === opened.size && stat.mtimeMs === opened.mtimeMs) {
    cache.set(wirePath, { size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, dev: stat.dev, ino: stat.ino, hashedAt, file });
  }
}
