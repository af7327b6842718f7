import { constants as fsConstants } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import fse from 'fs-extra';
import { MemoryConfigError } from './errors.js';
import { errorCode, fsError } from './file-system.js';
import type { DirEntry, EntryType, FileStat, FileSystem } from './file-system.js';
import { tempFileName } from './temp-files.js';

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

/**
 * The FileSystem on the host's real POSIX disk. Every open carries `O_NOFOLLOW`, so a symlink an
 * agent plants in a mount fails the call (`ELOOP`) instead of leading it outside the mount.
 *
 * Modes are passed to open(2) and mkdir(2), so the process umask applies as usual. The guarantees
 * cover the last path component; the engine walks mounts with `lstat` and never descends into a
 * link, so intermediate components are its own directories.
 */
export class NodeFileSystem implements FileSystem {
  readonly #readFlags: number;
  readonly #createTempFlags: number;

  /** `constants` is the platform's `fs.constants`; tests pass a doctored one. */
  constructor(constants: OpenFlagConstants = fsConstants) {
    const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
    if (O_NOFOLLOW === undefined || O_NONBLOCK === undefined) {
      throw new MemoryConfigError(
        'NodeFileSystem needs O_NOFOLLOW and O_NONBLOCK, which this platform lacks (Windows?): ' +
          'without them a symlink in a mount could be followed. Pass another fileSystem.',
        'fileSystem',
      );
    }
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    this.#readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
    // O_EXCL: the temp name is fresh, so anything already there is someone else's and not ours.
    this.#createTempFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
  }

  async lstat(path: string): Promise<FileStat | null> {
    try {
      const stat = await fse.lstat(path);
      return { type: entryType(stat), size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs };
    } catch (err) {
      // ENOTDIR: a file where a parent directory should be also means nothing is there.
      if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') return null;
      throw err;
    }
  }

  async readdir(path: string): Promise<DirEntry[]> {
    // readdir(3) follows a link named as the directory itself; refuse one instead.
    if ((await fse.lstat(path)).isSymbolicLink()) throw fsError('ENOTDIR', 'scandir', path, 'is a symlink');
    // Dirent types come from the entry itself (lstat when the filesystem gives none): never followed.
    const entries = await fse.readdir(path, { withFileTypes: true });
    return entries.map((entry) => ({ name: entry.name, type: entryType(entry) }));
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

  async writeFile(path: string, data: Uint8Array, opts: { mode?: number } = {}): Promise<void> {
    // Same directory as the target, so the rename stays on one filesystem and is atomic.
    const temp = join(dirname(path), tempFileName(basename(path)));
    const fd = await fse.open(temp, this.#createTempFlags, opts.mode ?? DEFAULT_FILE_MODE);
    try {
      try {
        await fse.writeFile(fd, data);
      } finally {
        await fse.close(fd);
      }
      // rename(2) replaces whatever entry is at `path`, a symlink included: never writes through it.
      // No fsync: readers need atomicity, not durability; the store holds the real copy.
      await fse.rename(temp, path);
    } catch (err) {
      await fse.unlink(temp).catch(() => {});
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
    const stat = await this.lstat(path);
    if (stat === null) return;
    if (stat.type === 'directory') await fse.rmdir(path);
    else await fse.unlink(path);
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

function entryType(entry: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryType {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  return 'other';
}
