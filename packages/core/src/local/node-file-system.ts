import { chmod, close, closeSync, constants as fsConstants, fstat, fstatSync, link, lstat, lstatSync, open, openSync, read, rename, statSync, unlink, watch, write, type Stats } from 'node:fs';
import { promisify } from 'node:util';
import { open as openPath, readdir as readdirPath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import fse from 'fs-extra';
import { MemoryConfigError } from '../model/errors.js';
import { errorCode, fsError, unpinnedDirHandle } from './file-system.js';
import type { DirEntry, DirHandle, DirWatch, EntryType, FileStat, FileSystem, OpenFile, WriteOptions } from './file-system.js';
import { tempFileName } from '../model/unsynced-names.js';
import { isUtf8 } from 'node:buffer';

/**
 * The open(2) flags NodeFileSystem needs. `O_NOFOLLOW` and `O_NONBLOCK` are optional in the type
 * because Windows lacks them; the constructor refuses to run without them.
 */
export type OpenFlagConstants = Omit<typeof fsConstants, 'O_NOFOLLOW' | 'O_NONBLOCK'> & {
  O_NOFOLLOW?: number;
  O_NONBLOCK?: number;
};

const DEFAULT_FILE_MODE = 0o600;
const DEFAULT_DIR_MODE = 0o700;

const openFd = promisify(open) as (path: string, flags: number) => Promise<number>;
const fstatFd = promisify(fstat) as (fd: number) => Promise<Stats>;
const closeFd = promisify(close);
/** How long one `lstatAll` may describe entries on the calling thread before the rest go to libuv's pool. */
const SYNC_LSTAT_BUDGET_MS = 2;
/** Past that budget, how many of its `lstat`s are in libuv's pool at once. */
const POOL_LSTAT_SLICE = 16;
// The callback lstat, promisified: called for every entry of every scan, cheaper than fs/promises'.
const lstatCallback = promisify(lstat) as (path: string) => Promise<Stats>;
const readFd = promisify(read) as (fd: number, buffer: Buffer, offset: number, length: number, position: number) => Promise<{ bytesRead: number }>;
const openFdMode = promisify(open) as (path: string, flags: number, mode: number) => Promise<number>;
const writeFd = promisify(write) as (fd: number, buffer: Uint8Array, offset: number, length: number) => Promise<{ bytesWritten: number }>;
const renamePath = promisify(rename);
const unlinkPath = promisify(unlink);
const linkPath = promisify(link);
const chmodPath = promisify(chmod);

/** Where the kernel names an open descriptor as a path (Linux). */
const FD_DIR = '/proc/self/fd';
/**
 * Linux's O_PATH (not in Node's constants): a descriptor that names an inode without opening
 * it. Used only with pinned handles, which exist only where /proc/self/fd does (Linux).
 */
const O_PATH = 0o10000000;

/**
 * The FileSystem on the host's real POSIX disk. Every open carries `O_NOFOLLOW`, so a symlink an
 * agent plants in a mount fails the call (`ELOOP`) instead of leading it outside the mount.
 *
 * `openDir` holds the folder open and, on Linux, names it `/proc/self/fd/<fd>`: the kernel
 * resolves that prefix to the opened folder itself, so `${handle.path}/${name}` acts relative to
 * the handle the way `openat(2)` would, and no later swap of a name above it can redirect the
 * call. Node has no `openat`; this is the same guarantee through paths. Where `/proc` is not
 * mounted the handles are unpinned and the engine verifies identities instead.
 *
 * Modes are passed to open(2) and mkdir(2), so the process umask applies as usual.
 */
export class NodeFileSystem implements FileSystem {
  readonly #readFlags: number;
  readonly #createNewFlags: number;
  readonly #dirFlags: number;
  readonly #noFollow: number;
  readonly #pinned: boolean;
  /**
   * Present on Linux with pinned handles (see `FileSystem.watchDir`): one inotify watch per
   * folder (Node's `fs.watch`, not recursive: Node 20's recursive watch on Linux watches every
   * file and follows links by name). Given a handle's `/proc/self/fd/<n>` path, inotify binds the
   * watch to the opened folder's inode, so a folder renamed or swapped later is never what a
   * watch starts watching, and a name outside the mount is never looked at.
   */
  readonly watchDir?: (path: string, onEvent: (kind: 'change' | 'error') => void) => DirWatch;

  /**
   * `constants` is the platform's `fs.constants`; tests pass a doctored one. `pinDirectories`
   * defaults to whether this process can name descriptors under `/proc/self/fd`; `false` forces
   * unpinned handles (the fallback other platforms get), for tests. `watch: false` leaves out
   * `watchDir`, as on platforms without it.
   */
  constructor(constants: OpenFlagConstants = fsConstants, opts: { pinDirectories?: boolean; watch?: boolean } = {}) {
    const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
    if (O_NOFOLLOW === undefined || O_NONBLOCK === undefined) {
      throw new MemoryConfigError(
        'NodeFileSystem needs O_NOFOLLOW and O_NONBLOCK, which this platform lacks (Windows?): ' +
          'without them a symlink in a mount could be followed. Pass another fileSystem.',
        'fileSystem',
      );
    }
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    // O_NOCTTY: a terminal device opened here must never become the worker's controlling tty.
    this.#readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (constants.O_NOCTTY ?? 0);
    // O_EXCL: a temp name is fresh, and a file made in place is new, so anything already there is
    // someone else's and not ours.
    this.#createNewFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
    this.#noFollow = O_NOFOLLOW;
    this.#dirFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (constants.O_DIRECTORY ?? 0);
    this.#pinned = opts.pinDirectories ?? canNameDescriptors(this.#dirFlags);
    // inotify reports writes to a folder's files; kqueue (macOS, BSD) only its list of names.
    if (this.#pinned && process.platform === 'linux' && opts.watch !== false) this.watchDir = watchPinnedDir;
  }

  async lstat(path: string): Promise<FileStat | null> {
    try {
      return fileStat(await lstatCallback(path));
    } catch (err) {
      // ENOTDIR: a file where a parent directory should be also means nothing is there.
      if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') return null;
      throw err;
    }
  }

  /**
   * The scan's stat of a folder's files. Each `lstat` through libuv's pool costs a hand-off to a
   * thread and back, several times the call itself on an entry the kernel has cached, so these
   * are made on the calling thread, one after the other, for as long as they stay that cheap:
   * after `SYNC_LSTAT_BUDGET_MS` in one call (a cold cache, a slow disk) the rest go through the
   * pool, so the event loop is never held longer than that and one call.
   */
  async lstatAll(paths: readonly string[]): Promise<(FileStat | null)[]> {
    const stats: (FileStat | null)[] = [];
    const started = performance.now();
    for (const path of paths) {
      if (performance.now() - started > SYNC_LSTAT_BUDGET_MS) {
        // A slice at a time, so a huge folder never floods the pool other work shares.
        for (let at = stats.length; at < paths.length; at += POOL_LSTAT_SLICE) {
          stats.push(...(await Promise.all(paths.slice(at, at + POOL_LSTAT_SLICE).map((rest) => this.lstat(rest)))));
        }
        return stats;
      }
      try {
        const stat = lstatSync(path, { throwIfNoEntry: false });
        stats.push(stat ? fileStat(stat) : null);
      } catch (err) {
        if (errorCode(err) !== 'ENOTDIR') throw err;
        stats.push(null);
      }
    }
    return stats;
  }

  async readdir(path: string): Promise<DirEntry[]> {
    // readdir(3) follows a link named as the directory itself; refuse one instead.
    if ((await fse.lstat(path)).isSymbolicLink()) throw fsError('ENOTDIR', 'scandir', path, 'is a symlink');
    // Dirent types come from the entry itself (lstat when the filesystem gives none): never followed.
    // Names as bytes: a name that is not UTF-8 would otherwise come back altered and reach nothing.
    const entries = await readdirPath(path, { withFileTypes: true, encoding: 'buffer' });
    return entries.map((entry) => {
      const raw = entry.name as unknown as Buffer;
      const type = entryType(entry);
      return isUtf8(raw) ? { name: raw.toString('utf8'), type } : { name: raw.toString('utf8'), type, notUtf8: true as const };
    });
  }

  async openDir(path: string): Promise<DirHandle> {
    if (!this.#pinned) return unpinnedDirHandle(this, path);
    // O_NOFOLLOW|O_DIRECTORY refuses a link and anything but a folder, both as ENOTDIR on Linux;
    // the lstat after the refusal only names which it was (ELOOP for a link).
    // A plain descriptor, not a FileHandle: a handle is held across passes and closed by its
    // owner; Node would otherwise close (and warn about) one the host never finalized at GC.
    const fd = await openFd(path, this.#dirFlags).catch(async (err: unknown) => {
      if (errorCode(err) === 'ENOTDIR' && (await this.lstat(path))?.type === 'symlink') throw fsError('ELOOP', 'open', path, 'is a symlink');
      throw err;
    });
    try {
      const stat = await fstatFd(fd);
      let closed = false;
      return {
        path: `${FD_DIR}/${fd}`,
        pinned: true,
        dev: stat.dev,
        ino: stat.ino,
        close: async () => {
          // Once only: the number may belong to another open by the time of a second close.
          if (closed) return;
          closed = true;
          await closeFd(fd);
        },
      };
    } catch (err) {
      await closeFd(fd);
      throw err;
    }
  }

  async openFile(path: string): Promise<OpenFile> {
    if (this.#pinned) return this.#openFileByPath(path);
    const handle = await openPath(path, this.#readFlags);
    try {
      const stat = fileStat(await handle.stat());
      return {
        stat,
        read: (maxBytes) => readUpTo((buf, pos) => handle.read(buf, 0, buf.length, pos), maxBytes, stat.size),
        close: () => handle.close(),
      };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * Linux: the entry is first opened with O_PATH, which reaches the inode without calling any
   * driver's open() (a device node the agent planted is never opened: some drivers act on open,
   * a watchdog reboots the host on the close that follows). Only a regular file is then opened
   * for reading, through `/proc/self/fd/<n>`: the very inode that was checked, not its name again.
   */
  async #openFileByPath(path: string): Promise<OpenFile> {
    // Plain descriptors (not FileHandles): this runs once per file a scan reads, and the
    // callback API costs a fraction of the promise one per call.
    const probe = await openFd(path, O_PATH | this.#readFlags);
    try {
      const stat = fileStat(await fstatFd(probe));
      // O_PATH|O_NOFOLLOW opens a link itself rather than failing: refuse it as open(2) would.
      if (stat.type === 'symlink') throw fsError('ELOOP', 'open', path, 'is a symlink');
      if (stat.type !== 'file') {
        return { stat, read: async () => Promise.reject(fsError('EINVAL', 'read', path, 'not a regular file')), close: async () => {} };
      }
      // The descriptor's name is the kernel's link to the inode: followed, on purpose (no O_NOFOLLOW).
      const fd = await openFd(`${FD_DIR}/${probe}`, this.#readFlags & ~this.#noFollow);
      let closed = false;
      const close = async () => {
        // Once only: the number may belong to another open by the time of a second close.
        if (closed) return;
        closed = true;
        await closeFd(fd);
      };
      return { stat, read: (maxBytes) => readUpTo((buf, pos) => readFd(fd, buf, 0, buf.length, pos), maxBytes, stat.size), close };
    } finally {
      // Closed in place, not through the thread pool: an O_PATH descriptor was never opened on
      // the file's driver or filesystem (no flush, no release to wait for), so its close(2)
      // cannot block, and one hand-off per file read is saved.
      closeSync(probe);
    }
  }

  async readFile(path: string): Promise<Uint8Array> {
    const fd = await fse.open(path, this.#readFlags);
    try {
      // fstat, not lstat: it describes exactly what was opened, with no window for a swap.
      if (!(await fse.fstat(fd)).isFile()) throw fsError('EINVAL', 'read', path, 'not a regular file');
      return await fse.readFile(fd);
    } finally {
      await fse.close(fd);
    }
  }

  async writeFile(path: string, data: Uint8Array, opts: WriteOptions = {}): Promise<void> {
    const temp = await this.#writeTemp(path, data, opts.mode);
    try {
      await opts.beforeReplace?.();
      // rename(2) replaces whatever entry is at `path`, a symlink included: never writes through it.
      // No fsync: readers need atomicity, not durability; the store holds the real copy.
      await renamePath(temp, path);
    } catch (err) {
      await unlinkPath(temp).catch(() => {});
      throw err;
    }
  }

  /**
   * link(2) is the kernel's only "create this name unless something has it" for a file with
   * content: it fails with EEXIST on any entry at `path`, a dangling link included, in the same
   * step that makes the name. The temp file is ours alone and goes either way. A disk without
   * hard links (EPERM, ENOTSUP) gets the next best: an `lstat`, then the rename.
   */
  async writeFileExclusive(path: string, data: Uint8Array, opts: { mode?: number } = {}): Promise<void> {
    const temp = await this.#writeTemp(path, data, opts.mode);
    let renamed = false;
    try {
      try {
        await linkPath(temp, path);
      } catch (err) {
        const code = errorCode(err);
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
        if ((await this.lstat(path)) !== null) throw fsError('EEXIST', 'link', path, 'already exists');
        await renamePath(temp, path);
        renamed = true;
      }
    } finally {
      if (!renamed) await unlinkPath(temp).catch(() => {});
    }
  }

  /**
   * open(2) with O_CREAT | O_EXCL | O_NOFOLLOW makes the name or fails with EEXIST on any entry
   * there, a link included (never followed), so nothing but a file of ours is ever written. What
   * this process created and could not fill is removed: a half file is no one's content.
   */
  createFile(path: string, data: Uint8Array, opts: { mode?: number } = {}): Promise<void> {
    return this.#createFilled(path, data, opts.mode);
  }

  /** link(2): it does not follow a symlink at `from`, and fails with EEXIST on any entry at `to`. */
  async link(from: string, to: string): Promise<void> {
    await linkPath(from, to);
  }

  /** Writes `data` to a fresh temp file beside `path` (same directory: the rename or link stays on one filesystem); returns its path. */
  async #writeTemp(path: string, data: Uint8Array, mode: number | undefined): Promise<string> {
    const temp = join(dirname(path), tempFileName());
    await this.#createFilled(temp, data, mode);
    return temp;
  }

  /** A new file at `path` (O_CREAT | O_EXCL | O_NOFOLLOW) holding `data`; removed again if it cannot be filled. */
  async #createFilled(path: string, data: Uint8Array, mode: number | undefined): Promise<void> {
    // Plain descriptors and the callback API, as for reads: a download writes thousands of
    // files, and fs-extra's promise wrappers cost more per call than the write itself.
    const fd = await openFdMode(path, this.#createNewFlags, mode ?? DEFAULT_FILE_MODE);
    try {
      try {
        await writeWhole(fd, data, path);
      } finally {
        await closeFd(fd);
      }
    } catch (err) {
      await unlinkPath(path).catch(() => {});
      throw err;
    }
  }

  async mkdir(path: string, opts: { mode?: number; recursive?: boolean } = {}): Promise<void> {
    const mode = opts.mode ?? DEFAULT_DIR_MODE;
    if (!opts.recursive) {
      // mkdir(2) fails with EEXIST on any entry, a dangling symlink included.
      await fse.mkdir(path, { mode });
      return;
    }
    await fse.mkdir(path, { mode, recursive: true });
    // `mkdir -p` accepts a symlink to a directory at `path`; the caller asked for a directory.
    if (!(await fse.lstat(path)).isDirectory()) throw fsError('EEXIST', 'mkdir', path, 'not a directory');
  }

  async rm(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    if (opts.recursive) {
      // Node's rm unlinks symlinks it meets (the top one too) and never descends through them.
      await fse.rm(path, { recursive: true, force: true });
      return;
    }
    // unlink(2) first: it never follows a link, and most entries removed are files, so no lstat
    // is spent deciding. A folder answers EISDIR (EPERM on some systems) and goes by rmdir(2).
    try {
      await fse.unlink(path);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      if (code !== 'EISDIR' && code !== 'EPERM') throw err;
      try {
        await fse.rmdir(path);
      } catch (rmdirErr) {
        if (errorCode(rmdirErr) === 'ENOENT') return;
        // EPERM from unlink on a file we may not remove: rmdir then says ENOTDIR; report the first.
        throw errorCode(rmdirErr) === 'ENOTDIR' ? err : rmdirErr;
      }
    }
  }

  /**
   * Linux: the entry is reached with O_PATH|O_NOFOLLOW (no permission on it is needed, and a link
   * is opened as itself, then refused), fstat'ed, and chmod'ed through `/proc/self/fd/<n>`: the
   * very inode that was checked, never a name looked up again. Elsewhere: an lstat, then a chmod
   * by name (a window a swap could use; the engine calls this only on its own folders' entries).
   */
  async grantOwnerAccess(path: string, expect?: { dev: number; ino: number }): Promise<void> {
    if (!this.#pinned) {
      const wanted = ownerAccess(await lstatCallback(path), path, expect);
      if (wanted !== null) await chmodPath(path, wanted);
      return;
    }
    const fd = await openFd(path, O_PATH | this.#noFollow);
    try {
      const wanted = ownerAccess(await fstatFd(fd), path, expect);
      if (wanted !== null) await chmodPath(`${FD_DIR}/${fd}`, wanted);
    } finally {
      closeSync(fd);
    }
  }

  async rename(from: string, to: string): Promise<void> {
    await fse.rename(from, to);
  }

  /**
   * One readlink(2), so no swap can slip between a check and the read: `EINVAL` (not a link),
   * `ENOENT` and `ENOTDIR` (nothing there) are `null`. fs-extra's sync calls are node:fs's own.
   */
  readLinkSync(path: string): string | null {
    try {
      return fse.readlinkSync(path);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'EINVAL' || code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw err;
    }
  }
}

/** `FileSystem.watchDir` on Linux: only a handle's own path, never a name. */
function watchPinnedDir(path: string, onEvent: (kind: 'change' | 'error') => void): DirWatch {
  if (!path.startsWith(`${FD_DIR}/`)) throw fsError('EINVAL', 'watch', path, 'only a pinned folder handle is watched');
  let closed = false;
  // Not persistent: a watch never keeps the host's process alive.
  const watcher = watch(path, { persistent: false }, () => {
    if (!closed) onEvent('change');
  });
  watcher.on('error', () => {
    if (closed) return;
    closed = true;
    watcher.close();
    onEvent('error');
  });
  return {
    close: () => {
      if (closed) return;
      closed = true;
      watcher.close();
    },
  };
}

/** Writes all of `data` to `fd` from its start; `path` only names a failure. */
async function writeWhole(fd: number, data: Uint8Array, path: string): Promise<void> {
  for (let at = 0; at < data.byteLength; ) {
    const { bytesWritten: written } = await writeFd(fd, data, at, data.byteLength - at);
    // A regular file takes at least one byte or fails (ENOSPC, EIO): never loop on nothing.
    if (written <= 0) throw fsError('EIO', 'write', path, 'wrote nothing');
    at += written;
  }
}

/**
 * Reads from the start of the file until its end or `maxBytes`, whichever comes first.
 * `expectedSize` is the size the open descriptor's fstat gave: the first read asks for one byte
 * more, so a file that did not grow is read whole by one read(2) into a buffer of its size, and
 * one that did goes on in chunks. Never more than `maxBytes` is read or allocated.
 */
async function readUpTo(
  read: (buffer: Buffer, position: number) => Promise<{ bytesRead: number }>,
  maxBytes: number,
  expectedSize: number,
): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  let want = Math.max(1, Math.min(maxBytes, expectedSize + 1));
  while (total < maxBytes) {
    // Its own zeroed memory, never the shared pool of small Buffers: the bytes go out (to
    // `conflict` listeners too) as a view of this buffer, and its `.buffer` must hold nothing else.
    const chunk = Buffer.alloc(want);
    const { bytesRead } = await read(chunk, total);
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
    // A regular file reads short only at its end: no second read to learn that.
    if (bytesRead < chunk.length) break;
    want = Math.min(maxBytes - total, 65_536);
  }
  // One chunk (the usual case) is returned as it is, without a copy.
  const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  return new Uint8Array(whole.buffer, whole.byteOffset, whole.byteLength);
}

/**
 * Whether `/proc/self/fd/<fd>` names the folder open on `fd` here: true on Linux with /proc
 * mounted. Checked once per NodeFileSystem by opening `/` and comparing identities.
 */
function canNameDescriptors(dirFlags: number): boolean {
  let fd: number | undefined;
  try {
    fd = openSync('/', dirFlags);
    const viaFd = statSync(`${FD_DIR}/${fd}/.`);
    const opened = fstatSync(fd);
    return viaFd.ino === opened.ino && viaFd.dev === opened.dev;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function fileStat(stat: Stats): FileStat {
  return {
    type: entryType(stat),
    size: stat.size,
    mtimeMs: stat.mtimeMs,
    ctimeMs: stat.ctimeMs,
    dev: stat.dev,
    ino: stat.ino,
    nlink: stat.nlink,
  };
}

function entryType(entry: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryType {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  return 'other';
}

/**
 * The mode with the owner's access added (rw, and x for a folder), or null when it has it
 * already. Refuses a link, anything but a folder or a singly-linked regular file (a file with
 * another name may be a host file linked in: its mode is the host's), and an entry that is not
 * `expect`.
 */
function ownerAccess(stat: Stats, path: string, expect: { dev: number; ino: number } | undefined): number | null {
  if (stat.isSymbolicLink()) throw fsError('ELOOP', 'chmod', path, 'is a symlink');
  const folder = stat.isDirectory();
  if (!folder && !(stat.isFile() && stat.nlink === 1)) throw fsError('EINVAL', 'chmod', path, 'not a folder or a singly-linked file');
  if (expect && (stat.dev !== expect.dev || stat.ino !== expect.ino)) throw fsError('ESTALE', 'chmod', path, 'not the entry expected');
  const mode = stat.mode & 0o7777;
  const wanted = mode | (folder ? 0o700 : 0o600);
  return wanted === mode ? null : wanted;
}
