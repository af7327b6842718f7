import { posix } from 'node:path';
import { errorCode, fsError, unchangedSince, type DirEntry, type DirHandle, type FileStat, type FileSystem } from './file-system.js';
import { MARKER_FILE, MAX_MEMORY_BYTES, MAX_PATH_BYTES, MAX_PATH_SEGMENTS } from '../model/limits.js';
import { pathSegments } from '../model/memory-path.js';
import { MountChain, reachMountChain, type FolderIdentity } from './mount-chain.js';
import type { PathReasonCode } from '../model/reasons.js';
import { escapeForTerminal } from '../model/terminal-text.js';
import { sha256Hex } from '../model/sha256.js';
import { conflictCopyPath, tempFileName } from '../model/unsynced-names.js';

/**
 * The one object through which the engine touches a store folder: scan, read, write, mkdir,
 * unlink, the marker, and the removal at finalize. It takes store-relative wire paths only
 * (`/notes/a.md`, already checked by `mountablePathProblem`) and never builds a host path below
 * the store folder itself.
 *
 * Why: the agent owns the folder's contents and can swap any entry for a link at any moment,
 * including between a check and the act that follows it. So nothing here checks a path and then
 * acts on it again by name. Each folder on the way is opened without following links, from the
 * handle of its parent (`FileSystem.openDir`), and each act names its target relative to the
 * handle of the folder that holds it. With pinned handles (Linux) a swapped component is either
 * refused when opened or irrelevant afterwards: the held folder is acted on wherever it now is.
 * With unpinned handles the folder's `(dev, ino)` is checked before and after each act and a
 * mismatch fails closed (see docs/security.md for what that leaves open).
 *
 * Reads are bounded before they happen: the opened descriptor is fstat'ed, and anything that is
 * not a regular file, has other hard links, or is larger than the memory limit is never read.
 */

/**
 * Why the folder refused to act on an entry; data, not prose, so callers branch on it. Path
 * codes of the reports (`model/reasons.ts` says what each means), so a refusal is reported as is.
 */
export type RefusalCode = Extract<
  PathReasonCode,
  'is_symlink' | 'not_regular' | 'is_folder' | 'hard_link' | 'too_large' | 'swapped' | 'taken' | 'changed_during_sync'
>;

export class FolderRefusal extends Error {
  override name = 'FolderRefusal';
  constructor(
    readonly code: RefusalCode,
    readonly wirePath: string,
    /** Why, without the path: `is a symlink`. */
    readonly detail: string,
  ) {
    // The path is a name the agent chose: shown escaped (terminal-text.ts).
    super(`${escapeForTerminal(wirePath)} ${detail}`);
  }
}

/**
 * What is at a memory's place right now. `sha` is the content's sha256; for a file that is never
 * read (too large, hard-linked) it is a fingerprint of its stat, which equals no sha, so the
 * planner sees "changed" and the refusal says why.
 */
export type LocalRead =
  | { kind: 'file'; sha: string; size: number; stat: FileStat; bytes?: Uint8Array; unpushable?: { code: RefusalCode; detail: string } }
  | { kind: 'absent' }
  | { kind: 'other'; code: RefusalCode; reason: string };

/** An entry of a scanned folder, bound to the folder's handle for as long as the visit runs. */
export interface FolderFile {
  readonly wirePath: string;
  /** lstat of the entry through its folder's handle; null when gone. */
  stat(): Promise<FileStat | null>;
  read(): Promise<LocalRead>;
}

/** A folder of the walk: its regular-looking files, and the entries left alone with why. */
export interface FolderVisit {
  wireDir: string;
  files: FolderFile[];
  /** `code` says why: `is_symlink` / `not_regular` for an entry seen and known to be a link or a special file. */
  blocked: { wirePath: string; reason: string; code: PathReasonCode }[];
  /** lstat of each of `files`, in order, all at once through the folder's handle (`FileSystem.lstatAll`); null when gone. */
  statFiles(): Promise<(FileStat | null)[]>;
  /**
   * The walk did not list this folder: `WalkReuse` says nothing changed in it since it was last
   * listed, and the caller takes what it found then (`files` and `blocked` are empty).
   */
  unchanged?: true;
}

/**
 * What lets a walk visit a folder as it was last listed instead of listing it (folder-watch.ts,
 * through scan.ts). A hint only: the walk never skips a check because of it, it only lists
 * fewer folders, and a folder it says nothing about is listed as always. Keys are wire folders
 * (`/` the root).
 */
export interface WalkReuse {
  /** `wireDir`, opened as `dir`, is about to be listed. */
  listing(wireDir: string, dir: DirHandle): void;
  /** What its listing found below it: the subfolders walked and those too deep to be (wire paths). */
  listed(wireDir: string, walkable: readonly string[], deep: readonly string[]): void;
  /** Nothing changed in `wireDir`, opened now as `identity`, since its last listing: it is visited as it was. */
  unchanged(wireDir: string, identity: { dev: number; ino: number }): boolean;
  /** Below a folder visited as it was: `wireDir` and all under it unchanged too, so none of it is even opened. */
  unchangedBelow(wireDir: string): boolean;
  /** The subfolders of `wireDir` at its last listing. */
  subfolders(wireDir: string): { walkable: readonly string[]; deep: readonly string[] };
}

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

/**
 * Subfolders kept open between acts, by wire path, so a pass opens a folder it works in once, not
 * once per file. Part of the mounter's descriptor budget (docs/operations.md, "Descriptors"):
 * a store holds at most this many whatever the size of its tree. The least recently used one
 * that no act is using is closed to make room; when every one is in use, a further folder is
 * opened for its act alone and closed when the act ends.
 */
export const MAX_HELD_FOLDERS = 8;
/** Entries of one folder removed at once by `removeAll`. */
const REMOVE_CONCURRENCY = 16;
/**
 * Subfolder handles a removal holds at once: the REMOVE_WINDOW deepest levels of the chain it is
 * in, and at most REMOVE_CHECKPOINTS levels above them, evenly spaced (every 2^k-th level, k as
 * small as keeps them that few). A level whose handle was let go is opened again from the
 * checkpoint above it when the removal climbs back. So a removal holds at most 32 descriptors
 * whatever the depth (a chain of 1,100 folders: 32, not 1,100), for about depth × spacing /
 * (2 × REMOVE_WINDOW) re-opens once the chain is deeper than the window.
 */
const REMOVE_CHECKPOINTS = 16;
const REMOVE_DEEPEST = 16;
export const REMOVE_WINDOW = REMOVE_DEEPEST + REMOVE_CHECKPOINTS;

export class StoreFolder {
  #root: DirHandle;
  /**
   * Open subfolders reused by later acts, least recently used first; dropped (retired) when the
   * root moves, at release and at close, and one at a time past MAX_HELD_FOLDERS.
   */
  readonly #held = new Map<string, HeldFolder>();
  /**
   * Opens of a subfolder in progress, by wire path: parallel acts in a folder not held yet
   * (a download's or a push's first files there) wait for the one open instead of each opening
   * and closing their own. What one resolves to is used only if it was then held.
   */
  readonly #opening = new Map<string, Promise<DirHandle>>();
  /**
   * Acts in progress, and handles no act may start using any more. A retired handle is closed
   * only once no act is in progress: a descriptor closed under an act that still holds its
   * `/proc/self/fd/<n>` path could be reused by another open, and the act would land there.
   */
  #busy = 0;
  #retired: DirHandle[] = [];
  /** The closes of the last `release`, until they are done. */
  #releasing: Promise<void> = Promise.resolve();
  #closed = false;
  /**
   * The host path of each pinned handle this folder opened, by the handle's own path: an error a
   * call through `/proc/self/fd/<n>/...` raises names that path, which means nothing to the
   * operator, so the folder's errors name the host path instead (`#named`).
   */
  readonly #hostNames = new Map<string, string>();

  private constructor(
    private readonly fs: FileSystem,
    /** Host path of the store folder, as the operator and the agent see it. */
    readonly hostPath: string,
    root: DirHandle,
    /** The folders above it, held: the only way the store's path is ever looked at again. */
    readonly chain: MountChain,
  ) {
    this.#root = root;
    this.#nameHandle(root, hostPath);
    chain.handles.forEach((handle, i) => this.#nameHandle(handle, chain.hostPathOf(i)));
  }

  #nameHandle(handle: DirHandle, hostPath: string): void {
    if (handle.pinned) this.#hostNames.set(handle.path, hostPath);
  }

  /**
   * `err` with every handle path of this folder in its message and `path` put back as the host
   * path the operator knows (a descriptor number means nothing to anyone reading a log).
   */
  #named(err: unknown): unknown {
    if (!(err instanceof Error) || this.#hostNames.size === 0) return err;
    const keys = [...this.#hostNames.keys()].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    const pattern = new RegExp(`(${keys.join('|')})(?![0-9])`, 'g');
    const rename = (text: string) => text.replace(pattern, (handlePath) => this.#hostNames.get(handlePath) ?? handlePath);
    err.message = rename(err.message);
    const e = err as NodeJS.ErrnoException & { dest?: unknown };
    if (typeof e.path === 'string') e.path = rename(e.path);
    if (typeof e.dest === 'string') e.dest = rename(e.dest);
    return err;
  }

  /**
   * Opens the store folder `chain.leaf` through the held handle of its parent (never through a
   * link at that name) and keeps the chain, which the folder owns from here on (closed with it,
   * or at once if the open fails).
   */
  static async openIn(fs: FileSystem, hostPath: string, chain: MountChain): Promise<StoreFolder> {
    try {
      return new StoreFolder(fs, hostPath, await fs.openDir(chain.leafVia), chain);
    } catch (err) {
      await chain.close();
      throw err;
    }
  }

  /**
   * Opens the folder at `hostPath` (never through a link at that name), holding the folder that
   * contains it as opened by its path: for callers that only read one folder (tools, tests). The
   * engine opens its store folders with `openIn`, from a chain held on the memory root.
   */
  static async open(fs: FileSystem, hostPath: string): Promise<StoreFolder> {
    const chain = await reachMountChain(fs, posix.dirname(hostPath), hostPath);
    // A chain of one step has no folder on the way to find missing.
    if (!(chain instanceof MountChain)) throw fsError('ENOENT', 'open', hostPath);
    return StoreFolder.openIn(fs, hostPath, chain);
  }

  /**
   * memoryRoot's identity (the chain's top) and each folder's on the mount path below it, the
   * store folder last: what a state record keeps so that recovery checks identity.
   */
  mountPathIdentities(): { root: FolderIdentity; folders: { path: string; dev: number; ino: number }[] } {
    const [top, ...between] = this.chain.handles;
    return {
      root: { dev: top!.dev, ino: top!.ino },
      folders: [...between.map((h, i) => ({ path: this.chain.hostPathOf(i + 1), dev: h.dev, ino: h.ino })), { path: this.hostPath, ...this.identity }],
    };
  }

  /** The held store folder's identity. */
  get identity(): FolderIdentity {
    return { dev: this.#root.dev, ino: this.#root.ino };
  }

  /**
   * Whether the store's path still leads to the folder held, looked at from the memory root's
   * handle one no-follow step at a time (MountChain): `missing` (it, or a folder on the way, is
   * gone), `not_directory` (a link or a file on the way), `replaced` (a different folder is
   * there, on the way or at the store's name). A different folder is never adopted: the agent
   * put it there, and the worker never adopts what it did not create.
   */
  locate(): Promise<'directory' | 'missing' | 'not_directory' | 'replaced'> {
    return this.#act(async () => (await this.chain.check(this.identity)) ?? 'directory');
  }

  /**
   * Gives the owner back read, write and search on the store folder itself (through its name in
   * the held parent: a folder locked with `chmod 0` cannot be reached through its own handle),
   * when the FileSystem can. For the final sync and the removal only.
   */
  unlockRoot(): Promise<void> {
    return this.#act(async () => {
      if (!(await this.#grant(this.chain.leafVia, this.identity))) return;
      await this.#grant(`${this.#root.path}/${MARKER_FILE}`);
    });
  }

  /** Reads a file in the store folder's top level, bounded; for the marker. */
  readTopLevel(name: string, maxBytes: number): Promise<LocalRead> {
    return this.#act(() => this.#readIn(this.#root, name, `/${name}`, maxBytes));
  }

  /** What is at `wirePath` now: the file with its sha, absent, or something never read. */
  read(wirePath: string): Promise<LocalRead> {
    return this.#act(async () => {
      try {
        return await this.#inParent(wirePath, false, { kind: 'absent' }, (dir, name) => this.#readIn(dir, name, wirePath, MAX_MEMORY_BYTES));
      } catch (err) {
        // A link on the way, or an unpinned folder replaced around the read (what was read is
        // then not the file's, and is dropped): nothing to read here.
        if (err instanceof FolderRefusal) return { kind: 'other', code: err.code, reason: err.message };
        throw err;
      }
    });
  }

  /**
   * Writes `bytes` at `wirePath` atomically (temp file + rename inside the held parent), making
   * the folders on the way (0700), each opened and checked right after its mkdir. An empty
   * folder standing where the file goes (left by a remote delete or rename) is removed first;
   * a non-empty one is never touched. Throws FolderRefusal when a folder on the way is a link,
   * a file, or swapped. With `onlyIfAbsent`, anything already at `wirePath` (but an empty
   * folder) is refused (`taken`) instead of replaced: a download into a fresh folder never
   * writes over a name clash, and a pull of a new memory never over a file the agent made
   * there meanwhile, even one made after the check (`FileSystem.writeFileExclusive`, where the
   * seam has it). `firstDownload`: nobody else can look in the folder yet (materialize's download,
   * before the agent is given it), so with `onlyIfAbsent` the file is made in place where the
   * seam can (`FileSystem.createFile`: its exclusive create is the check, and no temp name nor
   * rename is needed), and else the check alone decides and the cheaper rename is used.
   * `ifStill`: the file a pull read and means to replace, as its descriptor's fstat described
   * it: replaced only while that very file, unwritten since, is at `wirePath`, checked before
   * the write and again once the new content is in its temp file, right before the rename
   * (`changed_during_sync` otherwise). An edit landing between that last check and the rename
   * is still replaced: no call of Node's swaps two names atomically.
   */
  write(wirePath: string, bytes: Uint8Array, opts: { onlyIfAbsent?: boolean; firstDownload?: boolean; ifStill?: FileStat } = {}): Promise<void> {
    return this.#act(() =>
      this.#inParent(wirePath, true, undefined, async (dir, name) => {
        const target = `${dir.path}/${name}`;
        await this.#verify(dir, wirePath);
        // Any entry already there fails the create (EEXIST), and is then judged as below.
        if (opts.firstDownload && opts.onlyIfAbsent && this.fs.createFile && (await this.#createdInPlace(dir, wirePath, target, bytes))) return;
        const there = await this.fs.lstat(target);
        if (opts.onlyIfAbsent && there && there.type !== 'directory') {
          throw new FolderRefusal('taken', wirePath, there.type === 'symlink' ? 'is a symlink' : 'already exists');
        }
        const { ifStill } = opts;
        const changed = () => new FolderRefusal('changed_during_sync', wirePath, 'changed on disk during the sync');
        if (ifStill && !unchangedSince(there, ifStill)) throw changed();
        // Looked at again once the new content is ready, right before it replaces the file.
        const stillThere = ifStill && (async () => {
          if (!unchangedSince(await this.fs.lstat(target), ifStill)) throw changed();
        });
        if (there?.type === 'directory') {
          // rmdir(2) refuses a folder that holds anything: only an empty one goes.
          try {
            await this.fs.rm(target);
          } catch (err) {
            if (errorCode(err) === 'ENOTEMPTY' || errorCode(err) === 'EEXIST') {
              throw new FolderRefusal('is_folder', wirePath, 'is a folder that holds files');
            }
            throw err;
          }
        }
        const exclusive = opts.onlyIfAbsent && !opts.firstDownload ? this.fs.writeFileExclusive?.bind(this.fs) : undefined;
        try {
          if (exclusive) await exclusive(target, bytes, { mode: FILE_MODE });
          else await this.fs.writeFile(target, bytes, { mode: FILE_MODE, ...(stillThere && { beforeReplace: stillThere }) });
        } catch (err) {
          if (err instanceof FolderRefusal) throw err;
          // Made there between the check above and the write: the agent's, never written over.
          if (exclusive && errorCode(err) === 'EEXIST') throw new FolderRefusal('taken', wirePath, 'was made during the sync');
          await this.#refuseIfGone(err, dir, wirePath);
          throw err;
        }
        await this.#verify(dir, wirePath);
      }),
    );
  }

  /**
   * `write`'s in-place create: true once `bytes` is the new file at `target`, false when an
   * entry was there (EEXIST), for the checked write to judge. A part-written file is seen by
   * no one: the folder is not the agent's yet, and the seam removes a file it could not fill.
   */
  async #createdInPlace(dir: DirHandle, wirePath: string, target: string, bytes: Uint8Array): Promise<boolean> {
    try {
      await this.fs.createFile!(target, bytes, { mode: FILE_MODE });
    } catch (err) {
      if (errorCode(err) === 'EEXIST') return false;
      await this.#refuseIfGone(err, dir, wirePath);
      throw err;
    }
    await this.#verify(dir, wirePath);
    return true;
  }

  /**
   * A held folder the agent removed meanwhile takes no new entry (a pinned handle's contract,
   * Linux's ENOENT): the write did not happen for anyone, and says so. Checked only on that
   * failure, not after every write: once the file has its name it is in the folder, and a folder
   * is removed only empty, so whatever removes it afterwards removed the file first, as a later
   * deletion of the agent's.
   */
  async #refuseIfGone(err: unknown, dir: DirHandle, wirePath: string): Promise<void> {
    if (errorCode(err) !== 'ENOENT') return;
    if (!dir.pinned) await this.#verify(dir, wirePath);
    else if ((await this.fs.lstat(`${dir.path}/.`))?.nlink === 0) {
      throw new FolderRefusal('swapped', wirePath, 'is in a folder that was removed during the sync');
    }
  }

  /** Removes the entry at `wirePath` (a file or a link; never what a link points at). */
  unlink(wirePath: string): Promise<void> {
    return this.#act(() =>
      this.#inParent(wirePath, false, undefined, async (dir, name) => {
        await this.#verify(dir, wirePath);
        const target = `${dir.path}/${name}`;
        if ((await this.fs.lstat(target))?.type === 'directory') throw new FolderRefusal('is_folder', wirePath, 'is a folder');
        await this.fs.rm(target);
      }),
    );
  }

  /**
   * Moves the regular file at `fromWire` to `toWire` (a memory the store renamed), without
   * copying it, between the two held parent folders, each named by its handle, so the file never
   * leaves the store folder nor comes in from outside it. The folders on the way to `toWire` are
   * made as `write` makes them. Refuses (FolderRefusal, nothing moved) when the entry at
   * `fromWire` is not the file `expect` names (its `(dev, ino)`, as read by the caller): a link
   * is never moved or followed, and a file swapped in meanwhile is not the one planned for.
   * Never replaces anything at `toWire` (`taken`), but an empty folder, which goes as in `write`:
   * where the seam has `FileSystem.link`, not even an entry the agent makes there after the check
   * (link(2) then refuses it in the same step; see `#moveByLink`), and the old name is given up
   * only while it still holds the moved file (`#retireSource`). Without it, one rename(2) after
   * the check: an entry made in between is replaced. Checked again after the link or rename: the
   * entry now at `toWire` must be that file, and an unpinned folder on either side still the one
   * opened; otherwise the move is undone and refused (`swapped`).
   */
  move(fromWire: string, toWire: string, expect: { dev: number; ino: number }): Promise<void> {
    return this.#act(async () => {
      const fromSegments = pathSegments(fromWire);
      let from: OpenedParent;
      try {
        from = await this.#openParent(fromWire, fromSegments, false);
      } catch (err) {
        if (errorCode(err) === 'ENOENT') throw new FolderRefusal('swapped', fromWire, 'is no longer where it was read');
        throw err;
      }
      try {
        const toSegments = pathSegments(toWire);
        const to = await this.#openParent(toWire, toSegments, true);
        try {
          const source = `${from.dir.path}/${fromSegments.at(-1)!}`;
          const target = `${to.dir.path}/${toSegments.at(-1)!}`;
          await this.#verify(from.dir, fromWire);
          await this.#verify(to.dir, toWire);
          const before = await this.fs.lstat(source);
          if (before === null) throw new FolderRefusal('swapped', fromWire, 'is no longer where it was read');
          if (before.type === 'symlink') throw new FolderRefusal('is_symlink', fromWire, 'is a symlink');
          if (before.type === 'directory') throw new FolderRefusal('is_folder', fromWire, 'is a folder');
          if (before.type !== 'file') throw new FolderRefusal('not_regular', fromWire, 'is not a regular file');
          if (before.nlink > 1) throw new FolderRefusal('hard_link', fromWire, `has ${before.nlink} hard links`);
          if (before.dev !== expect.dev || before.ino !== expect.ino) throw new FolderRefusal('swapped', fromWire, 'was replaced during the sync');
          const there = await this.fs.lstat(target);
          if (there?.type === 'directory') {
            // rmdir(2) refuses a folder that holds anything: only an empty one goes.
            try {
              await this.fs.rm(target);
            } catch (err) {
              if (errorCode(err) === 'ENOTEMPTY' || errorCode(err) === 'EEXIST') throw new FolderRefusal('taken', toWire, 'is a folder that holds files');
              throw err;
            }
          } else if (there !== null && !(there.dev === before.dev && there.ino === before.ino)) {
            // (The same inode under the new name: a case-only rename on a disk that ignores case.)
            throw new FolderRefusal('taken', toWire, there.type === 'symlink' ? 'is a symlink' : 'already exists');
          }
          const sourceName = fromSegments.at(-1)!;
          // A second name at the target, never a replacement of it: what the agent saves there
          // after the check above is refused (`taken`) in the same step. A case-only rename has
          // its target's name already (the same inode), so only rename(2) can do it.
          const link = there === null || there.type === 'directory' ? this.fs.link?.bind(this.fs) : undefined;
          if (link && (await this.#moveByLink(link, from.dir, to.dir, sourceName, source, target, toWire, expect))) return;
          await this.fs.rename(source, target);
          const after = await this.fs.lstat(target);
          const moved = after !== null && after.type === 'file' && after.dev === expect.dev && after.ino === expect.ino;
          let verified = moved;
          if (moved && !from.dir.pinned) verified = await this.#identical(from.dir);
          if (moved && !to.dir.pinned) verified &&= await this.#identical(to.dir);
          if (!verified) {
            // Something else was moved (an entry swapped in at the last moment), or an unpinned
            // folder was replaced around the rename: put back whatever went, by the same names,
            // so nothing stays moved that was not planned for. Best effort; refused either way.
            await this.fs.rename(target, source).catch(() => {});
            throw new FolderRefusal('swapped', toWire, 'changed during the move; put back');
          }
          // A held folder the agent removed meanwhile still takes the entry, which then has no name.
          if (to.dir.pinned && (await this.fs.lstat(`${to.dir.path}/.`))?.nlink === 0) {
            throw new FolderRefusal('swapped', toWire, 'is in a folder that was removed during the sync');
          }
        } finally {
          await to.close();
        }
      } finally {
        await from.close();
      }
    });
  }

  /**
   * The move by link(2): the file gets its new name without anything at the target being
   * replaced, and only then loses its old one (`#retireSource`). False when the disk has no
   * hard links (nothing changed; the caller renames as before). Throws FolderRefusal when
   * something appeared at the target (`taken`) or a folder changed around the link (`swapped`):
   * either way the file is still at its old name only, and the baseline stays as it was.
   */
  async #moveByLink(
    link: (from: string, to: string) => Promise<void>,
    fromDir: DirHandle,
    toDir: DirHandle,
    sourceName: string,
    source: string,
    target: string,
    toWire: string,
    expect: { dev: number; ino: number },
  ): Promise<boolean> {
    try {
      await link(source, target);
    } catch (err) {
      const code = errorCode(err);
      // Made there between the check and the link: the agent's, never replaced.
      if (code === 'EEXIST') throw new FolderRefusal('taken', toWire, 'was made during the sync');
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') return false;
      throw err;
    }
    const after = await this.fs.lstat(target);
    let verified = after !== null && after.type === 'file' && after.dev === expect.dev && after.ino === expect.ino;
    if (verified && !fromDir.pinned) verified = await this.#identical(fromDir);
    if (verified && !toDir.pinned) verified &&= await this.#identical(toDir);
    // A held folder the agent removed meanwhile took the name, which then reaches nothing.
    if (verified && toDir.pinned) verified = ((await this.fs.lstat(`${toDir.path}/.`))?.nlink ?? 0) > 0;
    if (!verified) {
      // The new name is taken back only while it names the very entry still at the source (one
      // swapped in there just before the link): an entry the agent put at the target after the
      // link is the agent's, and stays. The source was never touched. Best effort; refused.
      const back = await this.fs.lstat(source).catch(() => null);
      if (after && back && after.dev === back.dev && after.ino === back.ino) await this.fs.rm(target).catch(() => {});
      throw new FolderRefusal('swapped', toWire, 'changed during the move; nothing moved');
    }
    await this.#retireSource(link, fromDir, sourceName, source, expect);
    return true;
  }

  /**
   * Removes the moved file's old name once its new one holds it, and nothing the agent put
   * there: an entry at `source` that is not `expect` (a file saved there since the move was
   * planned) is left as it is, and the next pass meets it as a new file. No unlink by name,
   * which would remove whatever took the name after a look: the name is first taken, whole, to
   * a fresh temp name of ours beside it (one rename(2)), and what was taken is looked at there.
   * The moved file goes; anything else (the agent's, saved in that instant) is put back with
   * link(2), which replaces nothing, and if the agent has saved the name yet again meanwhile,
   * the earlier file is kept beside it under a conflict-copy name (never synced, never lost).
   */
  async #retireSource(
    link: (from: string, to: string) => Promise<void>,
    dir: DirHandle,
    name: string,
    source: string,
    expect: { dev: number; ino: number },
  ): Promise<void> {
    const same = (stat: FileStat | null) => stat !== null && stat.type === 'file' && stat.dev === expect.dev && stat.ino === expect.ino;
    // An unpinned folder replaced since it was opened: its name reaches another folder, where
    // nothing is ours to take. The old name is left holding the file (two links, which no pass
    // reads); the move itself is done.
    const inPlace = async () => dir.pinned || (await this.#identical(dir));
    if (!(await inPlace()) || !same(await this.fs.lstat(source)) || !(await inPlace())) return;
    const taken = `${dir.path}/${tempFileName()}`;
    try {
      await this.fs.rename(source, taken);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return; // removed by the agent meanwhile: nothing to give up
      throw err;
    }
    const grabbed = await this.fs.lstat(taken);
    if (same(grabbed)) {
      await this.fs.rm(taken);
      return;
    }
    if (grabbed === null) return;
    if (grabbed.type === 'directory') {
      // rename(2) of a folder replaces at most an empty folder: no file is lost by it.
      await this.fs.rename(taken, source).catch(() => {});
      return;
    }
    for (const back of [source, `${dir.path}/${conflictCopyPath(name, Date.now())}`]) {
      try {
        await link(taken, back);
        await this.fs.rm(taken);
        return;
      } catch (err) {
        if (errorCode(err) !== 'EEXIST') throw err;
      }
    }
  }

  /** lstat of the entry at `wirePath` through its folder's handle; null when absent. */
  stat(wirePath: string): Promise<FileStat | null> {
    return this.#act(() =>
      this.#inParent(wirePath, false, null, async (dir, name) => {
        await this.#verify(dir, wirePath);
        return this.fs.lstat(`${dir.path}/${name}`);
      }),
    );
  }

  /**
   * Runs `act` on the entry's name in its opened parent folder. A folder on the way that does
   * not exist means the entry does not either: `absent` is the answer, unless `create` makes it.
   */
  async #inParent<T>(wirePath: string, create: boolean, absent: T, act: (dir: DirHandle, name: string) => Promise<T>): Promise<T> {
    const segments = pathSegments(wirePath);
    let parent: OpenedParent;
    try {
      parent = await this.#openParent(wirePath, segments, create);
    } catch (err) {
      if (!create && errorCode(err) === 'ENOENT') return absent;
      throw err;
    }
    try {
      return await act(parent.dir, segments.at(-1)!);
    } finally {
      await parent.close();
    }
  }

  /** Writes a top-level file (the marker) atomically. */
  writeTopLevel(name: string, bytes: Uint8Array): Promise<void> {
    return this.#act(async () => {
      await this.#verify(this.#root, `/${name}`);
      await this.fs.writeFile(`${this.#root.path}/${name}`, bytes, { mode: FILE_MODE });
    });
  }

  /** Names in the store folder's top level. */
  topLevelNames(): Promise<string[]> {
    return this.#act(async () => {
      await this.#verify(this.#root, '/');
      return (await this.#list(this.#root)).map((e) => e.name);
    });
  }

  /**
   * Walks the folder depth first. Each folder is opened from its parent's handle and held open
   * while `visit` runs for it, so every read of its files is relative to that handle. Links and
   * special entries are reported in `blocked`, never entered or read; `skip` leaves out entries
   * the caller does not sync (the marker, temp files) without reporting them. With `unlock` (a
   * final sync, whose folder is removed next), a folder or file the owner may not read is given
   * back owner access (`FileSystem.grantOwnerAccess`) and tried once more: a folder the agent
   * locked is read, not left unread for ever.
   */
  walk(
    visit: (folder: FolderVisit) => Promise<void>,
    skip: (wireDir: string, entry: DirEntry) => boolean,
    opts: { unlock?: boolean; reuse?: WalkReuse } = {},
  ): Promise<void> {
    return this.#act(() => this.#walkFolder(this.#root, '', visit, skip, opts.unlock === true, opts.reuse));
  }

  async #walkFolder(
    dir: DirHandle,
    wireDir: string,
    visit: (folder: FolderVisit) => Promise<void>,
    skip: (wireDir: string, entry: DirEntry) => boolean,
    unlock: boolean,
    reuse: WalkReuse | undefined,
  ): Promise<void> {
    const key = wireDir || '/';
    if (reuse?.unchanged(key, dir)) {
      // As last listed: its subfolders are walked from that listing, each opened from this
      // handle unless it too (and all below it) is unchanged.
      await visit(unchangedVisit(key));
      const { walkable, deep } = reuse.subfolders(key);
      for (const wirePath of deep) await visit(tooDeep(wirePath));
      for (const wirePath of walkable) {
        if (reuse.unchangedBelow(wirePath)) await replay(wirePath, visit, reuse);
        else await this.#walkChild(dir, wirePath, visit, skip, unlock, reuse);
      }
      return;
    }
    // Before the listing: whatever changes from here on is noticed.
    reuse?.listing(key, dir);
    await this.#verify(dir, key);
    const entries = await this.#list(dir);
    const names: string[] = [];
    const folder: FolderVisit = { wireDir: key, files: [], blocked: [], statFiles: () => this.#statIn(dir, key, names) };
    const walkable: string[] = [];
    const deep: string[] = [];
    for (const entry of entries) {
      const wirePath = `${wireDir}/${entry.name}`;
      if (entry.notUtf8) {
        folder.blocked.push({ wirePath, reason: 'has a name that is not UTF-8; it cannot be a memory path', code: 'bad_name' });
        continue;
      }
      if (skip(wireDir, entry)) continue;
      // Nothing below a folder past the limits can be a memory: not walked, so a chain of
      // folders thousands deep costs one entry, not memory and descriptors per level.
      if (entry.type === 'directory') (beyondAnyMemoryPath(wirePath) ? deep : walkable).push(wirePath);
      else if (entry.type === 'file') {
        folder.files.push(this.#fileIn(dir, entry.name, wirePath, unlock));
        names.push(entry.name);
      }
      else if (entry.type === 'symlink') folder.blocked.push({ wirePath, reason: 'is a symlink', code: 'is_symlink' });
      else folder.blocked.push({ wirePath, reason: 'is not a regular file', code: 'not_regular' });
    }
    reuse?.listed(key, walkable, deep);
    await visit(folder);
    for (const wirePath of deep) await visit(tooDeep(wirePath));
    for (const wirePath of walkable) await this.#walkChild(dir, wirePath, visit, skip, unlock, reuse);
  }

  /** A subfolder of `dir`, opened from its handle and walked; one that cannot be is visited as an entry left alone. */
  async #walkChild(
    dir: DirHandle,
    wirePath: string,
    visit: (folder: FolderVisit) => Promise<void>,
    skip: (wireDir: string, entry: DirEntry) => boolean,
    unlock: boolean,
    reuse: WalkReuse | undefined,
  ): Promise<void> {
    const name = wirePath.slice(wirePath.lastIndexOf('/') + 1);
    let child: DirHandle;
    try {
      child = await this.#openChild(dir, name, wirePath, unlock);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return; // removed while walking: simply gone
      const reason = err instanceof FolderRefusal ? err.detail : `folder could not be read (${errorCode(err) ?? String(err)})`;
      // A folder listed as one but refused at its open changed between the two steps.
      const code = err instanceof FolderRefusal ? 'swapped' : 'unreadable';
      await visit(blockedOnly(wirePath, reason, code));
      return;
    }
    try {
      await this.#walkFolder(child, wirePath, visit, skip, unlock, reuse);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return;
      const reason = err instanceof FolderRefusal ? 'changed while being read' : `folder could not be read (${errorCode(err) ?? String(err)})`;
      await visit(blockedOnly(wirePath, reason, err instanceof FolderRefusal ? 'swapped' : 'unreadable'));
    } finally {
      await child.close();
    }
  }

  /** lstat of `names` in `dir`, through the seam's batch when it has one. */
  async #statIn(dir: DirHandle, wireDir: string, names: readonly string[]): Promise<(FileStat | null)[]> {
    await this.#verify(dir, wireDir);
    const paths = names.map((name) => `${dir.path}/${name}`);
    return this.fs.lstatAll ? this.fs.lstatAll(paths) : Promise.all(paths.map((path) => this.fs.lstat(path)));
  }

  #fileIn(dir: DirHandle, name: string, wirePath: string, unlock: boolean): FolderFile {
    return {
      wirePath,
      stat: async () => {
        await this.#verify(dir, wirePath);
        return this.fs.lstat(`${dir.path}/${name}`);
      },
      read: () => this.#readIn(dir, name, wirePath, MAX_MEMORY_BYTES, unlock),
    };
  }

  /**
   * Removes everything in the folder, then the folder itself, never following a link at any
   * depth. Each folder is first given back owner access (a folder the agent locked with `chmod 0`
   * or `chmod -R a-w` still goes), then opened no-follow from its parent's handle, emptied through
   * its own handle, and removed by its name in that parent. The marker goes last, once nothing
   * else is left, so a removal cut short leaves a folder that still says whose it is (recover
   * vouches for it). The store folder's name is removed through its parent's held handle, and
   * only while it names the very folder that was emptied.
   * However deep the tree, at most REMOVE_WINDOW subfolder handles are open at once (`#empty`).
   */
  async removeAll(): Promise<void> {
    // The cached subfolders are of no use to a removal: their descriptors go back first.
    await this.release();
    await this.#act(async () => {
      await this.#grant(this.chain.leafVia, this.identity);
      // An agent still writing may add entries while the folder is emptied: a second round takes
      // what the first did not list. Past that the marker stays and the removal fails (ENOTEMPTY).
      for (let round = 0; ; round++) {
        await this.#empty(this.#root, '/', MARKER_FILE);
        const left = (await this.#list(this.#root)).filter((entry) => entry.name !== MARKER_FILE);
        if (left.length === 0) break;
        if (round > 0) throw fsError('ENOTEMPTY', 'rmdir', this.hostPath, 'entries were made while it was emptied; its marker is kept');
      }
      await this.#verify(this.#root, `/${MARKER_FILE}`);
      await this.fs.rm(`${this.#root.path}/${MARKER_FILE}`);
      // The folder's name goes only while it still leads to the folder held (never another put there).
      if ((await this.chain.check(this.identity)) === null) await this.fs.rm(this.chain.leafVia);
    });
    await this.close();
  }

  /**
   * Empties `top` (leaving its entry `keep`, the marker, when given) depth first without recursion: a chain of folders thousands deep holds at most
   * REMOVE_WINDOW handles below `top` (the deepest ones), not one per level. A level whose handle
   * was let go is opened again from the nearest open one above it, one no-follow step at a time,
   * each step checked to be the very folder entered on the way down (`dev`, `ino`): a folder
   * moved or replaced meanwhile stops the removal (`swapped`), nothing is removed in its stead.
   */
  async #empty(top: DirHandle, topWire: string, keep?: string): Promise<void> {
    const levels: EmptyingLevel[] = [{ name: '', wireDir: topWire, dev: top.dev, ino: top.ino, handle: top, subfolders: null }];
    const below = (wireDir: string, name: string) => `${wireDir === '/' ? '' : wireDir}/${name}`;
    try {
      for (;;) {
        const level = levels.at(-1)!;
        const dir = await this.#reopenLevels(levels);
        level.subfolders ??= await this.#emptyFiles(dir, level.wireDir, levels.length === 1 ? keep : undefined);
        const name = level.subfolders.shift();
        if (name !== undefined) {
          const wirePath = below(level.wireDir, name);
          let child: DirHandle | null = null;
          await this.#grant(`${dir.path}/${name}`);
          try {
            child = await this.#openChild(dir, name, wirePath);
          } catch (err) {
            // Swapped for a link or a file since the listing: that entry goes, not what it names.
            if (!(err instanceof FolderRefusal) || err.code === 'swapped') throw err;
          }
          if (!child) {
            await this.#removeIn(dir, level.wireDir, name);
            continue;
          }
          levels.push({ name, wireDir: wirePath, dev: child.dev, ino: child.ino, handle: child, subfolders: null });
          await this.#keepWindow(levels);
          continue;
        }
        // Emptied: `top` is its caller's to remove; any other level goes by its name in its parent.
        if (levels.length === 1) return;
        levels.pop();
        await level.handle?.close();
        level.handle = null;
        await this.#removeIn(await this.#reopenLevels(levels), levels.at(-1)!.wireDir, level.name);
      }
    } finally {
      for (const level of levels.slice(1)) await level.handle?.close();
    }
  }

  /**
   * Removes the entries of `dir` that are not folders (but `keep`), several at a time, each by its name in
   * this held folder (a store of thousands is not thousands of calls in a row); returns the names
   * of its folders. Every removal is settled before this returns, so no call outlives the handle.
   */
  async #emptyFiles(dir: DirHandle, wireDir: string, keep?: string): Promise<string[]> {
    await this.#verify(dir, wireDir);
    const entries = (await this.#list(dir)).filter((entry) => entry.name !== keep);
    const files = entries.filter((entry) => entry.type !== 'directory');
    let next = 0;
    const results = await Promise.allSettled(
      Array.from({ length: Math.min(REMOVE_CONCURRENCY, files.length) }, async () => {
        while (next < files.length) await this.#removeIn(dir, wireDir, files[next++]!.name);
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return entries.filter((entry) => entry.type === 'directory').map((entry) => entry.name);
  }

  async #removeIn(dir: DirHandle, wireDir: string, name: string): Promise<void> {
    await this.#verify(dir, `${wireDir === '/' ? '' : wireDir}/${name}`);
    await this.fs.rm(`${dir.path}/${name}`);
  }

  /** The deepest level's handle, opening again (and checking) the levels above it whose handles were let go. */
  async #reopenLevels(levels: EmptyingLevel[]): Promise<DirHandle> {
    const last = levels.length - 1;
    let open = last;
    while (levels[open]!.handle === null) open--;
    for (let i = open + 1; i <= last; i++) {
      const level = levels[i]!;
      const child = await this.#openChild(levels[i - 1]!.handle!, level.name, level.wireDir);
      if (child.dev !== level.dev || child.ino !== level.ino) {
        await child.close();
        throw new FolderRefusal('swapped', level.wireDir, 'was replaced while the folder was being removed');
      }
      level.handle = child;
      // The one above it is let go unless it is kept anyway: the way down goes on from this one.
      await this.#keepWindow(levels, i);
    }
    return levels[last]!.handle!;
  }

  /**
   * Lets go of the handles below `top` that are neither among the REMOVE_DEEPEST deepest levels
   * nor a checkpoint (a level whose depth is a multiple of the spacing, the smallest power of
   * two that leaves at most REMOVE_CHECKPOINTS of them above the deepest), nor the level being
   * opened again (`opening`), from which the way down goes on.
   */
  async #keepWindow(levels: EmptyingLevel[], opening = levels.length - 1): Promise<void> {
    const depth = levels.length - 1;
    const above = depth - REMOVE_DEEPEST;
    let spacing = 1;
    while (above / spacing > REMOVE_CHECKPOINTS) spacing *= 2;
    for (let i = 1; i <= above; i++) {
      const level = levels[i]!;
      if (level.handle === null || i % spacing === 0 || i === opening) continue;
      await level.handle.close();
      level.handle = null;
    }
  }

  /**
   * Lets go of the subfolders held open since the last release (closed once no act is in
   * progress). Called after each pass, so a folder the agent replaces between passes is opened
   * afresh by the next one.
   */
  async release(): Promise<void> {
    const idle: DirHandle[] = [];
    for (const held of this.#held.values()) {
      // One no act is using is closed now, even while other acts run: nothing can be acting
      // through it.
      if (held.users === 0) idle.push(held.handle);
      else this.#retire(held.handle);
    }
    this.#held.clear();
    // A caller that needs the descriptors back (a removal, a failed materialize) awaits this, and
    // with it the closes an earlier release left under way.
    const closing = Promise.all([this.#releasing, ...idle.map((handle) => handle.close().catch(() => {}))]).then(() => {});
    this.#releasing = closing;
    await closing;
    if (this.#busy === 0) await this.#closeRetired();
  }

  /**
   * Closes the folder's handles once no act is in progress (an act cut off by a time bound may
   * still be finishing). Acts after this throw EBADF.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The chain's handles too, and also only once no act is in progress (a late locate may be
    // looking through them).
    this.#retire(this.#root, ...this.#heldHandles(), ...this.chain.handles);
    this.#held.clear();
    if (this.#busy === 0) await this.#closeRetired();
  }

  async #act<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closed) throw fsError('EBADF', 'open', this.hostPath, 'store folder already closed');
    this.#busy++;
    try {
      return await work();
    } catch (err) {
      throw this.#named(err);
    } finally {
      this.#busy--;
      if (this.#busy === 0 && this.#retired.length > 0) await this.#closeRetired();
    }
  }

  #heldHandles(): DirHandle[] {
    return [...this.#held.values()].map((held) => held.handle);
  }

  #retire(...handles: DirHandle[]): void {
    this.#retired.push(...handles);
  }

  async #closeRetired(): Promise<void> {
    for (const handle of this.#retired.splice(0)) await handle.close().catch(() => {});
  }

  /**
   * The folder's entries. A pinned handle's own path is the kernel's link to the folder, which
   * `readdir` rightly refuses to follow; `/.` below it is the folder itself.
   */
  #list(dir: DirHandle): Promise<DirEntry[]> {
    return this.fs.readdir(dir.pinned ? `${dir.path}/.` : dir.path);
  }

  async #readIn(dir: DirHandle, name: string, wirePath: string, maxBytes: number, unlock = false): Promise<LocalRead> {
    await this.#verify(dir, wirePath);
    let file;
    try {
      file = await this.fs.openFile(`${dir.path}/${name}`);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'EACCES' && unlock && (await this.#grant(`${dir.path}/${name}`))) return this.#readIn(dir, name, wirePath, maxBytes);
      if (code === 'ENOENT') return { kind: 'absent' };
      if (code === 'ELOOP') return { kind: 'other', code: 'is_symlink', reason: 'is a symlink' };
      // EISDIR, ENXIO (a socket), EINVAL: nothing a memory can be.
      if (code === 'EISDIR') return { kind: 'other', code: 'is_folder', reason: 'is a folder' };
      if (code === 'ENXIO' || code === 'EINVAL') return { kind: 'other', code: 'not_regular', reason: 'is not a regular file' };
      throw err;
    }
    try {
      const { stat } = file;
      if (stat.type === 'directory') return { kind: 'other', code: 'is_folder', reason: 'is a folder' };
      if (stat.type !== 'file') return { kind: 'other', code: 'not_regular', reason: 'is not a regular file' };
      if (stat.nlink > 1) {
        return refusedUnread(stat, 'hard_link', `has ${stat.nlink} hard links; it may be a host file linked in, so it is never read`);
      }
      if (stat.size > maxBytes) return refusedUnread(stat, 'too_large', `is larger than ${maxBytes} bytes`);
      // One byte past the limit tells a file that grew since the fstat from one that did not.
      const bytes = await file.read(maxBytes + 1);
      if (bytes.byteLength > maxBytes) return refusedUnread(stat, 'too_large', `is larger than ${maxBytes} bytes`);
      await this.#verify(dir, wirePath);
      return { kind: 'file', sha: sha256Hex(bytes), size: bytes.byteLength, stat, bytes };
    } finally {
      await file.close();
    }
  }

  /**
   * Opens the folders above `wirePath` one at a time from the root handle. With `create`,
   * missing ones are made (0700) and then opened like any other, so a folder swapped right after
   * its mkdir is refused, not entered. Whatever the depth, the act holds at most one handle of
   * its own (a folder the cache had no room for) once it is past it: the folder above is closed
   * as soon as the one below it is open.
   */
  async #openParent(wirePath: string, segments: readonly string[], create: boolean): Promise<OpenedParent> {
    // Held folders this act goes through: not closed to make room until it ends.
    const using: HeldFolder[] = [];
    // The folder opened for this act alone (the cache was full), while `dir` is it.
    let own: DirHandle | null = null;
    const close = async () => {
      for (const held of using.splice(0)) held.users--;
      const mine = own;
      own = null;
      await mine?.close();
    };
    const root = this.#root;
    let dir = root;
    try {
      for (let i = 0; i < segments.length - 1; i++) {
        const name = segments[i]!;
        const wireDir = `/${segments.slice(0, i + 1).join('/')}`;
        let next = this.#use(wireDir, using);
        const pending = next ? undefined : this.#opening.get(wireDir);
        // Another act is opening it: its handle, if it was held (not that act's own, which
        // closes with it, and not one retired meanwhile). Else this act opens its own.
        if (pending && (await pending.catch(() => null)) === this.#held.get(wireDir)?.handle) next = this.#use(wireDir, using);
        let nextOwn: DirHandle | null = null;
        if (!next) {
          const opening = this.#openOrMake(dir, name, wireDir, create);
          if (!pending) {
            this.#opening.set(wireDir, opening);
            const done = () => this.#opening.get(wireDir) === opening && this.#opening.delete(wireDir);
            void opening.then(done, done);
          }
          const child = await opening;
          next = await this.#hold(wireDir, child, using, root);
          if (!next) nextOwn = next = child;
        }
        // The folder above is not needed once this one is open.
        if (own) await own.close();
        own = nextOwn;
        dir = next;
      }
    } catch (err) {
      await close();
      throw err;
    }
    return { dir, close };
  }

  /**
   * Opens the folder `name` in `dir`; with `create`, makes it (0700) when missing, then opens
   * it like any other, so a folder swapped right after its mkdir is refused, not entered.
   */
  async #openOrMake(dir: DirHandle, name: string, wireDir: string, create: boolean): Promise<DirHandle> {
    try {
      return await this.#openChild(dir, name, wireDir);
    } catch (err) {
      if (!create || errorCode(err) !== 'ENOENT') throw err;
      await this.#verify(dir, wireDir);
      try {
        await this.fs.mkdir(`${dir.path}/${name}`, { mode: DIR_MODE });
      } catch (mkdirErr) {
        // Made meanwhile by a parallel write of this pass (or the agent): opened and checked below.
        if (errorCode(mkdirErr) !== 'EEXIST') throw mkdirErr;
      }
      return this.#openChild(dir, name, wireDir);
    }
  }

  /** The held handle of `wireDir`, marked used by this act and most recently used; undefined when not held. */
  #use(wireDir: string, using: HeldFolder[]): DirHandle | undefined {
    const held = this.#held.get(wireDir);
    if (!held) return undefined;
    this.#held.delete(wireDir);
    this.#held.set(wireDir, held);
    held.users++;
    using.push(held);
    return held.handle;
  }

  /**
   * Keeps `child` for later acts and returns the handle to use (`child`, or the one another act
   * kept first, `child` then closed); undefined when it stays this act's own: the cache is full
   * of folders in use, or `child` was opened below a root the folder has since moved off.
   */
  async #hold(wireDir: string, child: DirHandle, using: HeldFolder[], root: DirHandle): Promise<DirHandle | undefined> {
    if (root !== this.#root) return undefined;
    const kept = this.#use(wireDir, using);
    if (kept) {
      await child.close();
      return kept;
    }
    // The least recently used folder no act is using makes room: nothing can be acting through
    // it, and nothing can take it up once it is out of the map, so its descriptor is closed at
    // once (waiting for the store to be idle could take the whole pass). It leaves the map in
    // the same step as `child` comes in: acts waiting for this very open (`#opening`) then find
    // `child` held and use it. Closing the old one first let them run during that close, find
    // nothing held, and each open and close a handle of its own: in a download that went through
    // more folders than are held, nearly every file opened its folder anew.
    let evicted: HeldFolder | undefined;
    if (this.#held.size >= MAX_HELD_FOLDERS) {
      for (const [key, held] of this.#held) {
        if (held.users > 0) continue;
        this.#held.delete(key);
        evicted = held;
        break;
      }
      // Every folder held is in use: this one stays the act's own.
      if (!evicted) return undefined;
    }
    const held: HeldFolder = { handle: child, users: 1 };
    this.#held.set(wireDir, held);
    using.push(held);
    await evicted?.handle.close().catch(() => {});
    return child;
  }

  async #openChild(dir: DirHandle, name: string, wireDir: string, unlock = false): Promise<DirHandle> {
    await this.#verify(dir, wireDir);
    try {
      const child = await this.fs.openDir(`${dir.path}/${name}`);
      this.#nameHandle(child, `${this.hostPath}${wireDir}`);
      return child;
    } catch (err) {
      const code = errorCode(err);
      if (code === 'EACCES' && unlock && (await this.#grant(`${dir.path}/${name}`))) return this.#openChild(dir, name, wireDir);
      if (code === 'ELOOP') throw new FolderRefusal('is_symlink', wireDir, 'is a symlink');
      if (code === 'ENOTDIR') throw new FolderRefusal('not_regular', wireDir, 'is not a folder');
      throw err;
    }
  }

  /**
   * Gives the owner access to the entry `via` (a name in a held folder) where the FileSystem can;
   * false when it cannot or refused (a link, a file with other links, not `expect`).
   */
  async #grant(via: string, expect?: FolderIdentity): Promise<boolean> {
    if (!this.fs.grantOwnerAccess) return false;
    try {
      await this.fs.grantOwnerAccess(via, expect);
      return true;
    } catch {
      return false;
    }
  }

  /** The name of an unpinned handle still reaches the folder that was opened. */
  async #identical(dir: DirHandle): Promise<boolean> {
    const now = await this.fs.lstat(dir.path);
    return now?.type === 'directory' && now.dev === dir.dev && now.ino === dir.ino;
  }

  /** For an unpinned handle: the name still reaches the folder that was opened, or refuse. */
  async #verify(dir: DirHandle, wirePath: string): Promise<void> {
    if (dir.pinned) return;
    const now = await this.fs.lstat(dir.path);
    if (now?.type !== 'directory' || now.dev !== dir.dev || now.ino !== dir.ino) {
      throw new FolderRefusal('swapped', wirePath, 'is in a folder that was replaced during the sync');
    }
  }
}

interface OpenedParent {
  dir: DirHandle;
  close(): Promise<void>;
}

/** One folder on the chain `#empty` is in: its name in the one above, its identity, its handle while held. */
interface EmptyingLevel {
  readonly name: string;
  readonly wireDir: string;
  readonly dev: number;
  readonly ino: number;
  handle: DirHandle | null;
  /** Its folders not visited yet; null until its other entries are removed. */
  subfolders: string[] | null;
}

/** A subfolder handle kept between acts, and how many acts are using it now. */
interface HeldFolder {
  readonly handle: DirHandle;
  users: number;
}

/** A folder at `wirePath` cannot hold a memory: every path inside it breaks the service's path limits. */
function beyondAnyMemoryPath(wirePath: string): boolean {
  return pathSegments(wirePath).length >= MAX_PATH_SEGMENTS || Buffer.byteLength(wirePath) >= MAX_PATH_BYTES;
}

/** A folder too deep or long to hold any memory: an entry left alone, never opened. */
function tooDeep(wirePath: string): FolderVisit {
  return blockedOnly(wirePath, 'is deeper or longer than any memory path can be; not read', 'too_deep');
}

/** A folder visited as it was last listed: the caller takes what it found then. */
function unchangedVisit(wireDir: string): FolderVisit {
  return { wireDir, files: [], blocked: [], statFiles: async () => [], unchanged: true };
}

/** `wireDir` and everything below it as last listed, visited as it was; no I/O. */
async function replay(wireDir: string, visit: (folder: FolderVisit) => Promise<void>, reuse: WalkReuse): Promise<void> {
  await visit(unchangedVisit(wireDir));
  const { walkable, deep } = reuse.subfolders(wireDir);
  for (const wirePath of deep) await visit(tooDeep(wirePath));
  for (const wirePath of walkable) await replay(wirePath, visit, reuse);
}

/** A folder of the walk that is only an entry left alone: not entered, nothing in it described. */
function blockedOnly(wirePath: string, reason: string, code: PathReasonCode): FolderVisit {
  return { wireDir: wirePath, files: [], blocked: [{ wirePath, reason, code }], statFiles: async () => [] };
}

function refusedUnread(stat: FileStat, code: RefusalCode, detail: string): LocalRead {
  // Changes whenever the file does (ctime moves on every write), and can never equal a sha256.
  const sha = `${code}:${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
  return { kind: 'file', sha, size: stat.size, stat, unpushable: { code, detail } };
}
