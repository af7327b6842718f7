/**
 * The filesystem seam. Every byte memory-mounter reads or writes on the host goes through this
 * interface, so a host can mount into a real disk, an in-memory filesystem, or a sandbox's root
 * seen from outside.
 *
 * Contract (each implementation must hold it; the shared conformance suite checks it):
 * - POSIX paths, absolute.
 * - Nothing ever follows a symlink at the last component: `lstat` describes the link itself,
 *   `readFile`/`openFile` refuse a link (`ELOOP`), `openDir` refuses a link (`ELOOP`) or a
 *   non-directory (`ENOTDIR`), `writeFile` replaces a link at the target rather than writing
 *   through it, `rm` removes the link, not what it points at.
 * - Errors carry Node's `code` strings (`ENOENT`, `EEXIST`, `ELOOP`, `EACCES`, `ENOTDIR`, ...).
 * - `writeFile` calls its `beforeReplace` option, when given, right before the new content takes
 *   the name.
 *
 * The optional members make the engine cheaper or safer where a filesystem can offer them, and
 * each says what the engine does without it: `lstatAll` (a folder described in one call),
 * `writeFileExclusive` (a new file that never replaces one made meanwhile), `createFile` (a
 * download's file made in place, where no one can look yet), `link` (a move that
 * never replaces one made meanwhile), `readLinkSync` (`checkWrite` follows links as the kernel
 * will), `grantOwnerAccess` (a locked folder of the agent's can still be read at the end and
 * removed), `watchDir` (an idle scan reads no folder nothing happened in).
 *
 * Folders the engine syncs are reached only through `openDir` handles (see `StoreFolder`): the
 * engine builds `${handle.path}/${name}` and never a path of its own below a store folder. Where
 * `handle.pinned` is true, that path reaches the opened folder whatever happens to the names
 * that led to it (Linux: `/proc/self/fd/<fd>`), so a folder swapped for a link cannot matter.
 * Where it is false, the engine verifies the folder's `(dev, ino)` around each use instead.
 */
/** What an entry is, seen without following links. */
export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

/** `lstat`'s answer: the entry itself, never what a link points at. */
export interface FileStat {
  type: EntryType;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  /** Identity of the entry: the pair names one file or folder on the host. */
  dev: number;
  ino: number;
  /** Hard links to the entry; a regular file with more than one may be a host file linked in. */
  nlink: number;
}

export interface DirEntry {
  name: string;
  type: EntryType;
  /**
   * Set when the name on disk is not valid UTF-8: `name` is then a lossy rendering that reaches
   * no entry, and the engine reports it instead of reading it (or reading it as gone).
   */
  notUtf8?: true;
}

/** A folder opened without following links; its children are reached as `${path}/${name}`. */
export interface DirHandle {
  /** The prefix for this folder's children. */
  readonly path: string;
  /**
   * True when `path` stays bound to the opened folder itself (a held descriptor), so renames or
   * swaps of the names above it cannot redirect it, and creating an entry in it fails with
   * `ENOENT` once the folder has been removed (as Linux does for a removed directory). False
   * when `path` is the folder's name, resolved again on every use: the caller must then check
   * `dev`/`ino` around each use.
   */
  readonly pinned: boolean;
  /** Identity of the folder when it was opened. */
  readonly dev: number;
  readonly ino: number;
  close(): Promise<void>;
}

/** A file opened for reading without following links. */
export interface OpenFile {
  /** fstat of what was opened: no window between this and the bytes read. */
  readonly stat: FileStat;
  /** Reads from the start, at most `maxBytes` bytes. */
  read(maxBytes: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** A watch `FileSystem.watchDir` started; closing it is final, and no call comes after. */
export interface DirWatch {
  close(): void;
}

/** Options of `FileSystem.writeFile`. */
export interface WriteOptions {
  /** Permission bits of a new file (default 0600). */
  mode?: number;
  /**
   * Called once the new content is whole in the temp file, right before it takes the name: the
   * last moment a caller can look at what it is about to replace. A throw abandons the write
   * (the temp file is removed, nothing at `path` changes) and is what `writeFile` throws. An
   * implementation that cannot call it must not ignore it: it calls it before it writes.
   */
  beforeReplace?: () => Promise<void>;
}

/** Where mounts live: the real disk, memfs, or a host's own. See the contract at the top of this file. */
export interface FileSystem {
  /** Describes the entry itself (a link is `symlink`); `null` when nothing is there. */
  lstat(path: string): Promise<FileStat | null>;
  /**
   * Optional. `lstat` of each path, in order, answered the way `lstat` answers each (a failure
   * other than "nothing there" rejects the whole call). For a filesystem that can describe many
   * entries for less than as many separate calls: a scan describes every file of a folder at
   * once through it. Without it, each path is one `lstat`.
   */
  lstatAll?(paths: readonly string[]): Promise<(FileStat | null)[]>;
  readdir(path: string): Promise<DirEntry[]>;
  /** Refuses a symlink (`ELOOP`) and any non-regular file (`EINVAL`); never blocks on a FIFO. */
  readFile(path: string): Promise<Uint8Array>;
  /**
   * Atomic: the data goes to a temp file in the same directory (named by `tempFileName`) which
   * is then renamed over `path`, so a reader sees the old content or the new, never a mix.
   */
  writeFile(path: string, data: Uint8Array, opts?: WriteOptions): Promise<void>;
  /**
   * Optional. Like `writeFile`, but the new file never replaces anything: it fails with `EEXIST`
   * when any entry (a file, a folder, a link, dangling or not) is at `path` at the instant the
   * file would take the name, in the same step (link(2) of the temp file), and leaves no temp
   * file either way. Without it, the engine checks with `lstat` first and then writes: an entry
   * made between the two is replaced.
   */
  writeFileExclusive?(path: string, data: Uint8Array, opts?: { mode?: number }): Promise<void>;
  /**
   * Optional. Creates a new file at `path` holding `data`, in place: one exclusive create
   * (`O_CREAT | O_EXCL`, so it fails with `EEXIST` on any entry at `path`, a link dangling or
   * not, and follows none), then the writes. Not atomic: until it resolves a reader may find the
   * file part-written, and a crash may leave it so. On a failure after the create the file is
   * removed. The engine uses it only where no one else can look yet: a materialize's download into
   * the folder it has just made, before the folder is handed to the agent (a crash there leaves a
   * folder that is never mounted again, and `recover` removes it whole). Without it, that
   * download writes each file atomically (`writeFile`), two more calls a file.
   */
  createFile?(path: string, data: Uint8Array, opts?: { mode?: number }): Promise<void>;
  /**
   * Optional. A second name `to` for the entry at `from` (link(2)), never for what a link at
   * `from` points at: fails with `EEXIST` when any entry is at `to` at that instant, in the same
   * step that makes the name; `EPERM`/`ENOTSUP` where the disk has no hard links. With it a
   * move (`StoreFolder.move`) never replaces an entry that appears at its target; without it,
   * the engine checks the target with `lstat` and then renames: an entry made between the two
   * is replaced.
   */
  link?(from: string, to: string): Promise<void>;
  /** Non-recursive `mkdir` fails with `EEXIST` when anything is already there. */
  mkdir(path: string, opts?: { mode?: number; recursive?: boolean }): Promise<void>;
  /**
   * Absent is fine. Never follows links. Without `recursive`, a directory is removed only when
   * empty (`ENOTEMPTY` otherwise), like `rmdir`.
   */
  rm(path: string, opts?: { recursive?: boolean }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /**
   * Opens a folder without following a link at `path` (`ELOOP`); `ENOTDIR` for anything that is
   * not a folder. Pinned where the platform can hold a folder open and name it by handle.
   */
  openDir(path: string): Promise<DirHandle>;
  /**
   * Opens a file for reading without following a link (`ELOOP`) and without blocking on a FIFO.
   * It does not refuse other entry types: `stat.type` says what was opened, and the caller
   * decides before reading a byte.
   */
  openFile(path: string): Promise<OpenFile>;
  /**
   * Optional. The target of the symlink at `path`, or `null` when `path` is not a symlink or
   * nothing is there (`ENOENT`, `ENOTDIR`); other failures throw. Synchronous, because
   * `MemoryMounter.checkWrite` is: with it, checkWrite follows links as the kernel will; without
   * it, checkWrite stays lexical and refuses any path under `memoryRoot` with a `..` segment.
   */
  readLinkSync?(path: string): string | null;
  /**
   * Optional. Adds the owner's read and write permission (and search, for a folder) to the folder
   * or singly-linked regular file at `path`, keeping its other bits, never following a link there
   * (`ELOOP`). Refuses anything else (`EINVAL`: a file with other hard links may be a host file
   * linked in) and, with `expect`, an entry that is not that one (`ESTALE`). A no-op when the
   * owner has them. The engine calls it on entries of its own store folders that it must read for
   * a final sync or empty for their removal, so a folder the agent locked (`chmod 0`,
   * `chmod -R a-w`) does not strand the mount path. Without it, a locked folder is left in place
   * with its marker.
   */
  grantOwnerAccess?(path: string, expect?: { dev: number; ino: number }): Promise<void>;

  /**
   * Optional. Watches the folder at `path`, a pinned handle's path (see `DirHandle.pinned`): the
   * folder that handle opened, whatever its name becomes, even once the handle is closed.
   * `onEvent` is called soon after any change to the folder's entries (one created, removed,
   * renamed, written to, its metadata changed) or to the folder itself, and with `error` once if
   * the watch fails; it may be called more often than that, never less. Throws when the watch
   * cannot start (a limit of the host's, the folder gone). Without it, every scan reads every
   * folder: the engine takes a watch only as a hint of where to look, never as a reason to skip
   * a check, and reads every folder on a cadence anyway.
   */
  watchDir?(path: string, onEvent: (kind: 'change' | 'error') => void): DirWatch;
}

/** What tells one version of a file's content from another without reading it. */
export type FileVersion = Pick<FileStat, 'dev' | 'ino' | 'size' | 'mtimeMs' | 'ctimeMs'>;

/**
 * `now` is a regular, singly-linked file of the version `then` names, not written to since: the
 * same inode, size, mtime and ctime (any write moves ctime, which nobody can set back). The one
 * statement of "unchanged" for a file: a re-check before a write and the scan's hash cache.
 */
export function sameFileVersion(now: FileStat, then: FileVersion): boolean {
  return (
    now.type === 'file' &&
    now.nlink === 1 &&
    now.dev === then.dev &&
    now.ino === then.ino &&
    now.size === then.size &&
    now.mtimeMs === then.mtimeMs &&
    now.ctimeMs === then.ctimeMs
  );
}

/** `now` describes the very regular, singly-linked file `read` described, not written to since. */
export function unchangedSince(now: FileStat | null, read: FileStat): boolean {
  return now !== null && read.type === 'file' && sameFileVersion(now, read);
}

/**
 * An unpinned handle: the folder's own path plus its identity, for filesystems that cannot hold
 * a folder open (memfs, a host's own seam, wrappers that must see plain paths).
 */
export async function unpinnedDirHandle(fs: Pick<FileSystem, 'lstat'>, path: string): Promise<DirHandle> {
  const stat = await fs.lstat(path);
  if (stat === null) throw fsError('ENOENT', 'open', path);
  if (stat.type === 'symlink') throw fsError('ELOOP', 'open', path, 'is a symlink');
  if (stat.type !== 'directory') throw fsError('ENOTDIR', 'open', path);
  return { path, pinned: false, dev: stat.dev, ino: stat.ino, close: async () => {} };
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
