import { Semaphore } from 'async-mutex';
import { errorCode, sameFileVersion } from './file-system.js';
import { MARKER_FILE } from '../model/limits.js';
import { readMarker, type MarkerState } from './marker.js';
import { mountablePathProblem } from '../model/memory-path.js';
import type { PathReasonCode, Reason } from '../model/reasons.js';
import type { FileStat } from './file-system.js';
import type { FolderWatch } from './folder-watch.js';
import type { FolderFile, StoreFolder, WalkReuse } from './store-folder.js';
import { isUnsyncedName } from '../model/unsynced-names.js';
import { decodeUtf8 } from '../model/utf8.js';

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
  /** Where the store's path leads (StoreFolder.locate): `replaced` is a folder other than the one held. */
  root: 'directory' | 'missing' | 'not_directory' | 'replaced';
  marker: MarkerState;
  files: Map<string, LocalFile>;
  /** Wire paths of entries left alone (symlinks, special files, unreadable), with the reason. */
  blocked: Map<string, Reason<PathReasonCode>>;
  /**
   * The blocked paths known to be links or special files, not merely unreadable: nothing of the
   * baseline is behind them, so they do not keep a wiped folder from reading as wiped.
   */
  notFiles?: Set<string>;
  /**
   * Content this scan read of files that differ from the baseline (see `ScanCarry`), so a push
   * sends those bytes instead of reading the file a second time. Absent when none was asked for.
   */
  carried?: Map<string, CarriedContent>;
  /** Folders this scan listed; the others it took as the last scan found them (`ScanReuse`). Absent: every folder was listed. */
  listedFolders?: number;
}

/**
 * The content of a file as the scan read it: the text, its sha, and the descriptor's fstat taken
 * before the bytes were read. The stat is what a push compares an `lstat` with right before it
 * sends: the same inode, size, mtime and ctime means no write reached the file since (a write
 * moves ctime, which the agent cannot set); anything else and the push reads the file again.
 */
export interface CarriedContent {
  sha: string;
  content: string;
  stat: FileStat;
}

/** Which read files a scan keeps the content of, and how much of it at most. */
export interface ScanCarry {
  /** Whether the content of the file at `wirePath`, of `sha`, may be pushed (it differs from the baseline). */
  wanted(wirePath: string, sha: string): boolean;
  /** Bytes kept at most over the whole scan; files past it are read again by their push. */
  budgetBytes: number;
}


/**
 * What a previous scan learnt of each file, so an unchanged file is not read again. Kept by the
 * caller between scans; `scanStore` refreshes it in place.
 */
export type ScanCache = Map<string, CachedHash>;

/** One file as a scan hashed it: the stat it was read under, when (`hashedAt`, host clock), and what it found. */
export interface CachedHash {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  dev: number;
  ino: number;
  hashedAt: number;
  file: LocalFile;
}

/**
 * A file changed within this long of being hashed could change again without moving its
 * timestamps (coarse clocks, same-tick writes); it is read again until it is older than that.
 * 2 s covers the coarsest disks (FAT's 2 s, ext3's and HFS+'s 1 s).
 */
const RACY_WINDOW_MS = 2_000;
/**
 * The window on a disk that keeps sub-second change times (ext4, xfs, btrfs, tmpfs, APFS):
 * there a change time is the real-time clock `Date.now` reads, as of the kernel's last tick
 * (at least every 10 ms, HZ = 100), so 100 ms is ten ticks of margin.
 */
const FINE_RACY_WINDOW_MS = 100;

/**
 * How long after its last change a file's cached hash is not trusted. The change time (ctime)
 * is the kernel's, never the agent's to set, and a ctime with a fraction of a second proves
 * the disk keeps fractions; one without (one file in a thousand on a fine disk) only costs a
 * read more.
 */
export function racyWindowMs(ctimeMs: number): number {
  return ctimeMs % 1_000 === 0 ? RACY_WINDOW_MS : FINE_RACY_WINDOW_MS;
}
/**
 * What a scan may take from the last one, folder by folder, where a watch says nothing changed
 * (folder-watch.ts). Kept by the caller between scans.
 */
export interface ScanReuse {
  watch: FolderWatch;
  /** False: a full scan, which lists every folder (and keeps the watches going for the next). */
  trust: boolean;
  /** What each folder's last listing found, by wire folder. */
  records: Map<string, FolderRecord>;
}

/** What one folder's listing gave a scan: its files read, and its entries left alone. */
export interface FolderRecord {
  files: string[];
  blocked: [string, Reason<PathReasonCode>][];
  notFiles: string[];
}

/** Files read at once: enough to keep libuv's pool busy, few enough to bound memory (each read is at most 100 kB). */
const READ_CONCURRENCY = 16;

/**
 * Scans the store folder through its confined handle. Never reads a byte outside it. `signal`
 * (the pass's deadline) is checked before each folder and each read: a pass cut off stops
 * scanning at once and the scan rejects with its reason, rather than reading on after its caller
 * gave up (and beside the next pass). `unlock` (final syncs: the folder is removed next) gives the
 * owner back access to what the agent locked before it is read (StoreFolder.walk).
 */
export async function scanStore(
  folder: StoreFolder,
  memoryStoreId: string,
  cache: ScanCache = new Map(),
  carry?: ScanCarry,
  signal?: AbortSignal,
  opts: { unlock?: boolean } = {},
  reuse?: ScanReuse,
): Promise<LocalSnapshot> {
  const snapshot: LocalSnapshot = { root: 'directory', marker: 'missing', files: new Map(), blocked: new Map() };
  const keep = carry && { ...carry, left: carry.budgetBytes, into: (snapshot.carried = new Map()) };
  const root = await folder.locate();
  if (root !== 'directory') return { ...snapshot, root };
  if (opts.unlock) await folder.unlockRoot();
  snapshot.marker = await readMarker(folder, memoryStoreId);
  const slots = new Semaphore(READ_CONCURRENCY);
  const notFiles = new Set<string>();
  snapshot.notFiles = notFiles;
  const records = reuse?.records;
  const visited = new Set<string>();
  if (reuse) snapshot.listedFolders = 0;
  try {
    await folder.walk(
      async (visit) => {
        signal?.throwIfAborted();
        visited.add(visit.wireDir);
        if (visit.unchanged) {
          // Nothing changed since its listing (see `replayable`): taken as that scan found it.
          const record = records!.get(visit.wireDir)!;
          for (const path of record.files) snapshot.files.set(path, cache.get(path)!.file);
          for (const [path, why] of record.blocked) snapshot.blocked.set(path, why);
          for (const path of record.notFiles) notFiles.add(path);
          return;
        }
        const { files, blocked, statFiles } = visit;
        if (snapshot.listedFolders !== undefined) snapshot.listedFolders++;
        for (const { wirePath, reason, code } of blocked) {
          snapshot.blocked.set(wirePath, { code, detail: reason });
          if (code === 'is_symlink' || code === 'not_regular') notFiles.add(wirePath);
        }
        // A folder the last scan saw is described all at once (an idle pass reads nothing, so
        // this is its whole cost); a file unchanged since it was hashed is taken as it was. If
        // that fails, each file is described on its own, as it is read.
        const stats = files.some((file) => cache.has(file.wirePath)) ? await statFiles().catch(() => undefined) : undefined;
        const reads: Promise<void>[] = [];
        files.forEach((file, i) => {
          const stat = stats?.[i];
          const known = cache.get(file.wirePath);
          if (stat && known && unchangedSinceHashed(known, stat)) snapshot.files.set(file.wirePath, known.file);
          else
            reads.push(
              slots.runExclusive(() => {
                signal?.throwIfAborted();
                return scanFile(file, snapshot, cache, keep, stats ? (stat ?? null) : undefined);
              }),
            );
        });
        await Promise.all(reads);
        records?.set(visit.wireDir, recordOf(blocked, files, snapshot));
      },
      // The marker is not a memory; temp files of atomic writes (ours, the agent toolset's) are
      // half-written content; conflict copies are kept for a human, never synced. Folders are
      // walked whatever their name.
      (wireDir, entry) => entry.type !== 'directory' && ((wireDir === '' && entry.name === MARKER_FILE) || isUnsyncedName(entry.name)),
      { unlock: opts.unlock === true, ...(reuse && { reuse: walkReuse(reuse, cache) }) },
    );
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (errorCode(err) === 'ENOENT') return { ...snapshot, root: 'missing' };
    snapshot.blocked.set('/', { code: 'unreadable', detail: `folder could not be read (${errorCode(err) ?? String(err)})` });
  } finally {
    if (reuse) {
      reuse.watch.endWalk();
      for (const wireDir of reuse.records.keys()) if (!visited.has(wireDir)) reuse.records.delete(wireDir);
    }
  }
  for (const path of cache.keys()) if (!snapshot.files.has(path)) cache.delete(path);
  return snapshot;
}

/**
 * The walk's `WalkReuse` for this scan: the watch's word, and the scan's own condition on each
 * folder (`replayable`). A full scan (`trust` false) takes no folder as it was, but still starts
 * the watches before each listing, so that the scans after it may.
 */
function walkReuse({ watch, trust, records }: ScanReuse, cache: ScanCache): WalkReuse {
  const ok = (wireDir: string) => replayable(records.get(wireDir), cache);
  return {
    listing: (wireDir, dir) => watch.listing(wireDir, dir),
    listed: (wireDir, walkable, deep) => watch.listed(wireDir, walkable, deep),
    unchanged: (wireDir, identity) => trust && ok(wireDir) && watch.unchanged(wireDir, identity),
    unchangedBelow: (wireDir) => trust && watch.unchangedBelow(wireDir, ok),
    subfolders: (wireDir) => watch.subfolders(wireDir),
  };
}

/**
 * A folder's last listing can stand for it: every file it found is still cached as hashed (so
 * its sha is the one the scan cache vouches for), and nothing in it was unreadable, which a
 * moment later may not be (EMFILE, EIO) without any change a watch would see.
 */
function replayable(record: FolderRecord | undefined, cache: ScanCache): boolean {
  if (!record) return false;
  for (const [, why] of record.blocked) if (why.code === 'unreadable') return false;
  for (const path of record.files) if (!cache.has(path)) return false;
  return true;
}

/** What a listed folder gave the scan, once its files are read. */
function recordOf(listed: readonly { wirePath: string }[], files: readonly FolderFile[], snapshot: LocalSnapshot): FolderRecord {
  const record: FolderRecord = { files: [], blocked: [], notFiles: [] };
  const paths = [...listed.map((entry) => entry.wirePath), ...files.map((file) => file.wirePath)];
  for (const path of paths) {
    if (snapshot.files.has(path)) record.files.push(path);
    const why = snapshot.blocked.get(path);
    if (why) record.blocked.push([path, why]);
    if (snapshot.notFiles?.has(path)) record.notFiles.push(path);
  }
  return record;
}

/** A scan's `ScanCarry` with what is left of its budget and where the content goes. */
type Keeper = ScanCarry & { left: number; into: Map<string, CarriedContent> };

/**
 * The file `stat` describes is the one `known` was hashed from, not written since (same inode,
 * size, mtime and ctime, singly linked), and its last change is older than the racy window
 * before the hash: its cached sha still holds.
 */
function unchangedSinceHashed(known: CachedHash, stat: FileStat): boolean {
  return sameFileVersion(stat, known) && known.hashedAt - Math.max(stat.mtimeMs, stat.ctimeMs) > racyWindowMs(stat.ctimeMs);
}

/**
 * One file of the scan: its cached hash when still good, else read. `described`: the file's
 * lstat when the folder's was taken (null: gone by then); undefined: not taken, so a file with a
 * cached hash is described here.
 */
async function scanFile(entry: FolderFile, out: LocalSnapshot, cache: ScanCache, keep: Keeper | undefined, described?: FileStat | null): Promise<void> {
  const { wirePath } = entry;
  const known = cache.get(wirePath);
  // A file with nothing cached is read at once: the open descriptor's fstat then stands for
  // the stat an lstat would have given, one call fewer.
  const stat = described !== undefined ? described : known ? await entry.stat().catch(() => null) : null;
  if (stat && known && unchangedSinceHashed(known, stat)) {
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
  else if (read.bytes) {
    const content = decodeUtf8(read.bytes);
    if (content === null) file.unpushable = { code: 'not_utf8', detail: 'is not UTF-8 text' };
    else if (keep && read.bytes.byteLength <= keep.left && keep.wanted(wirePath, read.sha)) {
      keep.left -= read.bytes.byteLength;
      keep.into.set(wirePath, { sha: read.sha, content, stat: read.stat });
    }
  }
  out.files.set(wirePath, file);
  // Cached as the descriptor read saw it (fstat right after the open, before the bytes), and
  // only when an lstat taken before the read, if any, still describes the same file. `hashedAt`
  // precedes that fstat, so a change after it moves ctime past `hashedAt` and is read again.
  const { stat: opened } = read;
  if (opened.type === 'file' && (!stat || (stat.type === 'file' && stat.ino === opened.ino && stat.size === opened.size && stat.mtimeMs === opened.mtimeMs))) {
    cache.set(wirePath, { size: opened.size, mtimeMs: opened.mtimeMs, ctimeMs: opened.ctimeMs, dev: opened.dev, ino: opened.ino, hashedAt, file });
  }
}
