import { posix } from 'node:path';
import { fsError, tempFileName, unpinnedDirHandle } from '@memory-mounter/core';
import type { DirEntry, DirHandle, EntryType, FileStat, FileSystem, OpenFile, WriteOptions } from '@memory-mounter/core';
import { Volume } from 'memfs';
import type { DirectoryJSON, IFs } from 'memfs';

const DEFAULT_FILE_MODE = 0o600;
const DEFAULT_DIR_MODE = 0o700;

/**
 * The FileSystem in memory, on memfs, with the same semantics as NodeFileSystem (the shared
 * conformance suite runs against both). To fail chosen calls, wrap it in `FaultyFileSystem`.
 *
 * memfs follows symlinks where POSIX does not: `rm` and `rename` act on a link's target. So every
 * operation checks with `lstat` and handles links itself. Each method runs memfs's synchronous
 * API, which makes every call one indivisible step: concurrent calls never interleave inside one.
 */
export class MemfsFileSystem implements FileSystem {
  /** The volume itself, for tests to plant symlinks or inspect modes and contents. */
  readonly vol: Volume;

  /**
   * `seed`: an existing volume (or memfs `fs`), or a `Volume.fromJSON` layout where `null` makes a
   * directory: `new MemfsFileSystem({ '/mnt/memory': null })`.
   */
  constructor(seed: Volume | IFs | DirectoryJSON = {}) {
    if (seed instanceof Volume) this.vol = seed;
    else if (isMemfsFs(seed)) this.vol = seed.__vol;
    else this.vol = Volume.fromJSON(seed as DirectoryJSON);
  }

  async lstat(path: string): Promise<FileStat | null> {
    return this.#lstat(path);
  }

  async readdir(path: string): Promise<DirEntry[]> {
    const stat = this.vol.lstatSync(path);
    // memfs follows a link named as the directory, and says ENOENT for a file: both are ENOTDIR.
    if (!stat.isDirectory()) throw fsError('ENOTDIR', 'scandir', path);
    const entries = this.vol.readdirSync(path, { withFileTypes: true }) as unknown as DirentLike[];
    return entries.map((entry) => ({ name: String(entry.name), type: entryType(entry) }));
  }

  async readFile(path: string): Promise<Uint8Array> {
    const stat = this.vol.lstatSync(path);
    if (stat.isSymbolicLink()) throw fsError('ELOOP', 'open', path, 'is a symlink');
    if (!stat.isFile()) throw fsError('EINVAL', 'read', path, 'not a regular file');
    return new Uint8Array(this.vol.readFileSync(path) as Buffer);
  }

  async writeFile(path: string, data: Uint8Array, opts: WriteOptions = {}): Promise<void> {
    const temp = this.#writeTemp(path, data, opts.mode);
    try {
      await opts.beforeReplace?.();
      // Our rename: it replaces a symlink at `path` rather than writing through it.
      this.#rename(temp, path);
    } catch (err) {
      this.vol.rmSync(temp, { force: true });
      throw err;
    }
  }

  /**
   * memfs changes only through its synchronous calls, and this method makes no other between
   * its check of `path` and the rename: check-then-rename is exclusive here.
   */
  async writeFileExclusive(path: string, data: Uint8Array, opts: { mode?: number } = {}): Promise<void> {
    const temp = this.#writeTemp(path, data, opts.mode);
    try {
      if (this.#lstat(path) !== null) throw fsError('EEXIST', 'link', path, 'already exists');
      this.#rename(temp, path);
    } catch (err) {
      this.vol.rmSync(temp, { force: true });
      throw err;
    }
  }

  /** In place, as open(2) with O_EXCL: one synchronous step from the create to the last byte. */
  async createFile(path: string, data: Uint8Array, opts: { mode?: number } = {}): Promise<void> {
    this.#fill(path, data, opts.mode);
  }

  /**
   * As link(2): one synchronous step, so nothing can appear at `to` between its check and the
   * new name. memfs's own link follows a symlink at `from`; link(2) does not, so a link there is
   * refused here (the engine never links one: it checks the entry is a regular file first).
   */
  async link(from: string, to: string): Promise<void> {
    const source = this.#lstat(from);
    if (source === null) throw fsError('ENOENT', 'link', from);
    if (source.type === 'directory') throw fsError('EPERM', 'link', from, 'is a directory');
    if (source.type === 'symlink') throw fsError('EPERM', 'link', from, 'is a symlink');
    if (this.#lstat(to) !== null) throw fsError('EEXIST', 'link', to, 'already exists');
    this.vol.linkSync(from, to);
  }

  /** The content in a fresh temp file beside `path`; its path. */
  #writeTemp(path: string, data: Uint8Array, mode: number | undefined): string {
    const temp = posix.join(posix.dirname(path), tempFileName());
    this.#fill(temp, data, mode);
    return temp;
  }

  /**
   * A new file at `path` holding `data`, removed again if it cannot be filled. 'wx' is
   * O_WRONLY|O_CREAT|O_EXCL: it fails on any entry at `path`, a link included.
   */
  #fill(path: string, data: Uint8Array, mode: number | undefined): void {
    // Created owner-writable: unlike open(2), memfs checks the new file's own mode before writing.
    const fd = this.vol.openSync(path, 'wx', 0o600);
    try {
      try {
        this.vol.writeFileSync(fd, data);
        this.vol.fchmodSync(fd, mode ?? DEFAULT_FILE_MODE);
      } finally {
        this.vol.closeSync(fd);
      }
    } catch (err) {
      this.vol.rmSync(path, { force: true });
      throw err;
    }
  }

  async mkdir(path: string, opts: { mode?: number; recursive?: boolean } = {}): Promise<void> {
    const mode = opts.mode ?? DEFAULT_DIR_MODE;
    // Non-recursive memfs mkdir fails with EEXIST on any entry, a symlink included.
    this.vol.mkdirSync(path, { mode, recursive: opts.recursive ?? false });
    // memfs `mkdir -p` accepts a file or a symlink at `path` silently; the caller asked for a directory.
    if (opts.recursive && this.#lstat(path)?.type !== 'directory') {
      throw fsError('EEXIST', 'mkdir', path, 'not a directory');
    }
  }

  async rm(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    const stat = this.#lstat(path);
    if (stat === null) return;
    // Only a real directory reaches memfs's rm/rmdir: given a link, they remove its target.
    if (stat.type !== 'directory') this.vol.unlinkSync(path);
    else if (opts.recursive) this.vol.rmSync(path, { recursive: true });
    else {
      // memfs's rmdir miscounts a folder in which a file was renamed over another (ENOTEMPTY
      // when empty): check emptiness ourselves, in this same synchronous step, then remove it.
      if (this.vol.readdirSync(path).length > 0) throw fsError('ENOTEMPTY', 'rmdir', path);
      this.vol.rmSync(path, { recursive: true });
    }
  }

  async rename(from: string, to: string): Promise<void> {
    this.#rename(from, to);
  }

  /** memfs cannot hold a folder open: handles are unpinned, and the engine verifies identities. */
  async openDir(path: string): Promise<DirHandle> {
    return unpinnedDirHandle({ lstat: async (p) => this.#lstat(p) }, path);
  }

  async openFile(path: string): Promise<OpenFile> {
    // lstat and open in one synchronous step: nothing can swap the entry between them.
    const stat = this.#lstat(path);
    if (stat === null) throw fsError('ENOENT', 'open', path);
    if (stat.type === 'symlink') throw fsError('ELOOP', 'open', path, 'is a symlink');
    const fd = stat.type === 'file' ? this.vol.openSync(path, 'r') : null;
    return {
      stat,
      read: async (maxBytes) => {
        if (fd === null) throw fsError('EINVAL', 'read', path, 'not a regular file');
        const buffer = Buffer.alloc(Math.min(maxBytes, stat.size + 1));
        let total = 0;
        while (total < buffer.length) {
          const n = this.vol.readSync(fd, buffer, total, buffer.length - total, total);
          if (n === 0) break;
          total += n;
        }
        return new Uint8Array(buffer.subarray(0, total));
      },
      close: async () => {
        if (fd !== null) this.vol.closeSync(fd);
      },
    };
  }

  readLinkSync(path: string): string | null {
    return this.#lstat(path)?.type === 'symlink' ? String(this.vol.readlinkSync(path)) : null;
  }

  #lstat(path: string): FileStat | null {
    try {
      const stat = this.vol.lstatSync(path);
      return {
        type: entryType(stat),
        size: Number(stat.size),
        mtimeMs: Number(stat.mtimeMs),
        ctimeMs: Number(stat.ctimeMs),
        dev: Number(stat.dev),
        ino: Number(stat.ino),
        nlink: Number(stat.nlink),
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw err;
    }
  }

  /**
   * rename(2) on memfs, which would move a link's target and let a directory replace a non-empty
   * one. The checks below are the POSIX refusals; the move itself is memfs's.
   */
  #rename(from: string, to: string): void {
    const source = this.#lstat(from);
    if (source === null) throw fsError('ENOENT', 'rename', from);
    if (posix.resolve(from) === posix.resolve(to)) return;
    const target = this.#lstat(to);
    if (source.type === 'directory') {
      if (posix.resolve(to).startsWith(`${posix.resolve(from)}/`)) throw fsError('EINVAL', 'rename', to, 'into itself');
      if (target && target.type !== 'directory') throw fsError('ENOTDIR', 'rename', to);
      if (target && this.vol.readdirSync(to).length > 0) throw fsError('ENOTEMPTY', 'rename', to);
    } else if (target?.type === 'directory') {
      throw fsError('EISDIR', 'rename', to);
    }
    if (source.type !== 'symlink') {
      // memfs's rename over a file does not count the replaced file's lost name (its nlink
      // stays): the name goes first, in this same synchronous step, as rename(2) drops it.
      if (target && target.type !== 'directory') this.vol.unlinkSync(to);
      this.vol.renameSync(from, to);
      return;
    }
    // A link moves as a link: recreate it at `to`, then drop the old name.
    const linkTarget = String(this.vol.readlinkSync(from));
    if (target) this.vol.unlinkSync(to);
    this.vol.symlinkSync(linkTarget, to);
    this.vol.unlinkSync(from);
  }
}

interface DirentLike {
  name: string | Buffer;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

function entryType(entry: Omit<DirentLike, 'name'>): EntryType {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  return 'other';
}

function isMemfsFs(seed: object): seed is IFs & { __vol: Volume } {
  return (seed as { __vol?: unknown }).__vol instanceof Volume;
}
