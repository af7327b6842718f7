import { fsError, unpinnedDirHandle, type DirEntry, type DirHandle, type FileStat, type FileSystem, type OpenFile, type WriteOptions } from '@memory-mounter/core';

/** A FileSystem method, as `FaultyFileSystem` names the calls it can fail. */
export type FileSystemOp = keyof FileSystem;

/**
 * The one fault-injecting FileSystem of the test doubles. Wraps any FileSystem (`MemfsFileSystem`,
 * or `NodeFileSystem` on a real temp dir) and fails chosen calls with a Node-style error, without
 * touching the disk: `fail('rm', '/mnt/memory/notes', 'EIO')` makes the next `rm` of that path
 * throw `EIO`; `failNext('writeFile', 'ENOSPC')` the next `writeFile` of any path. Faults are
 * used up in the order they were added.
 *
 * Its folder handles are unpinned (plain paths), so every path the engine passes is the real
 * one a fault can be aimed at; the engine then verifies folder identities as on any platform
 * without pinned handles.
 */
export class FaultyFileSystem implements FileSystem {
  /** `path` undefined: the next call of `op` on any path; a RegExp: on any path it matches. */
  readonly #faults: { op: FileSystemOp; path: string | RegExp | undefined; code: string; always?: true }[] = [];

  /** Present when `inner` has it (the method is optional), and then faultable like the rest. */
  readonly readLinkSync?: (path: string) => string | null;
  /** Present when `inner` has it, and then faultable like the rest. */
  readonly writeFileExclusive?: (path: string, data: Uint8Array, opts?: { mode?: number }) => Promise<void>;
  /** Present when `inner` has it, and then faultable like the rest. */
  readonly createFile?: (path: string, data: Uint8Array, opts?: { mode?: number }) => Promise<void>;
  /** Present when `inner` has it, and then faultable like the rest (a fault names `from`, as for `rename`). */
  readonly link?: (from: string, to: string) => Promise<void>;
  /** Present when `inner` has it, and then faultable like the rest (a fault: the watch cannot start). */
  readonly watchDir?: NonNullable<FileSystem['watchDir']>;
  /**
   * Present when `inner` has it. An `lstatAll` fault on any of its paths rejects the call, and so
   * does an `lstat` fault: the batch is `lstat` of each path, and a test that aims a fault at one
   * file's `lstat` means whichever call describes it. Every path's fault is used up, as the
   * separate calls would each use theirs.
   */
  readonly lstatAll?: (paths: readonly string[]) => Promise<(FileStat | null)[]>;
  /** Present when `inner` has it, and then faultable like the rest. */
  readonly grantOwnerAccess?: (path: string, expect?: { dev: number; ino: number }) => Promise<void>;

  constructor(readonly inner: FileSystem) {
    const exclusive = inner.writeFileExclusive?.bind(inner);
    if (exclusive) {
      this.writeFileExclusive = async (path, data, opts) => {
        this.#inject('writeFileExclusive', path);
        return exclusive(path, data, opts);
      };
    }
    const create = inner.createFile?.bind(inner);
    if (create) {
      this.createFile = async (path, data, opts) => {
        this.#inject('createFile', path);
        return create(path, data, opts);
      };
    }
    const link = inner.link?.bind(inner);
    if (link) {
      this.link = async (from, to) => {
        this.#inject('link', from);
        return link(from, to);
      };
    }
    const watchDir = inner.watchDir?.bind(inner);
    if (watchDir) {
      this.watchDir = (path, onEvent) => {
        this.#inject('watchDir', path);
        return watchDir(path, onEvent);
      };
    }
    const lstatAll = inner.lstatAll?.bind(inner);
    if (lstatAll) {
      this.lstatAll = async (paths) => {
        let first: unknown;
        for (const path of paths) {
          for (const op of ['lstatAll', 'lstat'] as const) {
            try {
              this.#inject(op, path);
            } catch (err) {
              first ??= err;
            }
          }
        }
        if (first !== undefined) throw first;
        return lstatAll(paths);
      };
    }
    const grantOwnerAccess = inner.grantOwnerAccess?.bind(inner);
    if (grantOwnerAccess) {
      this.grantOwnerAccess = async (path, expect) => {
        this.#inject('grantOwnerAccess', path);
        return grantOwnerAccess(path, expect);
      };
    }
    const readLink = inner.readLinkSync?.bind(inner);
    if (readLink) {
      this.readLinkSync = (path) => {
        this.#inject('readLinkSync', path);
        return readLink(path);
      };
    }
  }

  /** The next `times` calls of `op` on exactly `path` (for `rename`, its source) fail with `code`. */
  fail(op: FileSystemOp, path: string, code: string, times = 1): void {
    for (let i = 0; i < times; i++) this.#faults.push({ op, path, code });
  }

  /**
   * Every call of `op` on exactly `path` fails with `code` until `heal()`: a file a `chmod 000`
   * keeps unreadable, on a machine that runs the tests as root (who reads it anyway).
   */
  failAlways(op: FileSystemOp, path: string, code: string): void {
    this.#faults.push({ op, path, code, always: true });
  }

  /** Drops every fault not used up yet, lasting ones included. */
  heal(): void {
    this.#faults.length = 0;
  }

  /**
   * The next `times` calls of `op` on a path `pattern` matches fail with `code`: for a name the
   * test cannot know in advance (`/\.conflict-/`, a conflict copy named by the clock).
   */
  failMatching(op: FileSystemOp, pattern: RegExp, code: string, times = 1): void {
    for (let i = 0; i < times; i++) this.#faults.push({ op, path: pattern, code });
  }

  /** The next `times` calls of `op`, on any path, fail with `code` (ENOSPC, EACCES, ...). */
  failNext(op: FileSystemOp, code: string, times = 1): void {
    for (let i = 0; i < times; i++) this.#faults.push({ op, path: undefined, code });
  }

  async lstat(path: string): Promise<FileStat | null> {
    this.#inject('lstat', path);
    return this.inner.lstat(path);
  }

  async readdir(path: string): Promise<DirEntry[]> {
    this.#inject('readdir', path);
    return this.inner.readdir(path);
  }

  async readFile(path: string): Promise<Uint8Array> {
    this.#inject('readFile', path);
    return this.inner.readFile(path);
  }

  async writeFile(path: string, data: Uint8Array, opts?: WriteOptions): Promise<void> {
    this.#inject('writeFile', path);
    return this.inner.writeFile(path, data, opts);
  }

  async mkdir(path: string, opts?: { mode?: number; recursive?: boolean }): Promise<void> {
    this.#inject('mkdir', path);
    return this.inner.mkdir(path, opts);
  }

  async rm(path: string, opts?: { recursive?: boolean }): Promise<void> {
    this.#inject('rm', path);
    return this.inner.rm(path, opts);
  }

  async rename(from: string, to: string): Promise<void> {
    this.#inject('rename', from);
    return this.inner.rename(from, to);
  }

  async openDir(path: string): Promise<DirHandle> {
    this.#inject('openDir', path);
    return unpinnedDirHandle(this.inner, path);
  }

  async openFile(path: string): Promise<OpenFile> {
    this.#inject('openFile', path);
    // The engine reads through openFile; a readFile fault on the path fails it too.
    this.#inject('readFile', path);
    return this.inner.openFile(path);
  }

  #inject(op: FileSystemOp, path: string): void {
    const index = this.#faults.findIndex(
      (f) => f.op === op && (f.path === undefined || (f.path instanceof RegExp ? f.path.test(path) : f.path === path)),
    );
    if (index < 0) return;
    const fault = this.#faults[index]!;
    if (!fault.always) this.#faults.splice(index, 1);
    throw fsError(fault.code, op, path, 'injected fault');
  }
}
