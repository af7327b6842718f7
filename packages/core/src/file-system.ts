/**
 * The filesystem seam. Every byte memory-mounter reads or writes on the host goes through this
 * interface, so a host can mount into a real disk, an in-memory filesystem, or a sandbox's root
 * seen from outside.
 *
 * Contract (each implementation must hold it; the shared conformance suite checks it):
 * - POSIX paths, absolute.
 * - Nothing ever follows a symlink: `lstat` describes the link itself, `readFile` refuses a link
 *   (`ELOOP`) or any non-regular file (`EINVAL`), `writeFile` replaces a link at the target
 *   rather than writing through it, `rm` removes the link, not what it points at.
 * - Errors carry Node's `code` strings (`ENOENT`, `EEXIST`, `ELOOP`, `EACCES`, `ENOTDIR`, ...).
 */
/** What an entry is, seen without following links. */
export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

/** `lstat`'s answer: the entry itself, never what a link points at. */
export interface FileStat {
  type: EntryType;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

export interface DirEntry {
  name: string;
  type: EntryType;
}

/** Where mounts live: the real disk, memfs, or a host's own. See the contract at the top of this file. */
export interface FileSystem {
  /** Describes the entry itself (a link is `symlink`); `null` when nothing is there. */
  lstat(path: string): Promise<FileStat | null>;
  readdir(path: string): Promise<DirEntry[]>;
  /** Refuses a symlink (`ELOOP`) and any non-regular file (`EINVAL`); never blocks on a FIFO. */
  readFile(path: string): Promise<Uint8Array>;
  /**
   * Atomic: the data goes to a temp file in the same directory (named by `tempFileName`) which
   * is then renamed over `path`, so a reader sees the old content or the new, never a mix.
   */
  writeFile(path: string, data: Uint8Array, opts?: { mode?: number }): Promise<void>;
  /** Non-recursive `mkdir` fails with `EEXIST` when anything is already there. */
  mkdir(path: string, opts?: { mode?: number; recursive?: boolean }): Promise<void>;
  /**
   * Absent is fine. Never follows links. Without `recursive`, a directory is removed only when
   * empty (`ENOTEMPTY` otherwise), like `rmdir`.
   */
  rm(path: string, opts?: { recursive?: boolean }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /**
   * Optional. The target of the symlink at `path`, or `null` when `path` is not a symlink or
   * nothing is there (`ENOENT`, `ENOTDIR`); other failures throw. Synchronous, because
   * `MemoryMounter.checkWrite` is: with it, checkWrite follows links as the kernel will; without
   * it, checkWrite stays lexical and refuses any path under `memoryRoot` with a `..` segment.
   */
  readLinkSync?(path: string): string | null;
}

/** The `code` of a Node-style filesystem error, or undefined. */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A Node-style error with a `code`, for FileSystem implementations that are not Node's own. */
export function fsError(code: string, syscall: string, path: string, detail?: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: ${detail ?? code.toLowerCase()}, ${syscall} '${path}'`);
  err.code = code;
  err.syscall = syscall;
  err.path = path;
  return err;
}
