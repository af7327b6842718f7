import { posix } from 'node:path';
import { MemoryMountError } from '../model/errors.js';
import { errorCode, type DirHandle, type FileSystem } from './file-system.js';
import { MARKER_FILE, MOUNT_PREFIX } from '../model/limits.js';
import { writeMarker } from './marker.js';
import { MountChain, reachMountChain, stepProblem, type FolderIdentity } from './mount-chain.js';
import { StoreFolder } from './store-folder.js';
import type { MountedStore } from '../model/types.js';

/**
 * Creating and removing the folders a mounter owns. The rule throughout: the worker never adopts
 * or deletes what it did not create, so every folder made here is recorded, and only recorded
 * folders are ever removed.
 */

/** A folder this mounter made: a store's folder, or one between `memoryRoot` and a nested store. */
export interface CreatedFolder {
  path: string;
  /** Set for a store folder; absent for an in-between folder. */
  store?: MountedStore;
  /** The store folder as opened right after its mkdir. */
  folder?: StoreFolder;
  /**
   * For an in-between folder: the identities of the folders from memoryRoot's child down to it,
   * itself last, as opened right after they were made or found. Its removal reaches it through
   * them, and leaves it when any differs.
   */
  way?: FolderIdentity[];
}

const UNWRITABLE_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR']);

/** The operator prepares `memoryRoot`; say how when it is not usable. */
export async function checkMemoryRoot(fs: FileSystem, memoryRoot: string): Promise<void> {
  const stat = await fs.lstat(memoryRoot).catch((err: unknown) => {
    throw new MemoryMountError(
      'mount_path_unwritable',
      `memory root ${memoryRoot} cannot be checked (${errorCode(err) ?? String(err)}); the worker's user must be able to reach it`,
      { path: memoryRoot, cause: err },
    );
  });
  if (stat?.type === 'directory') return;
  const found = stat ? `is a ${stat.type}, not a directory` : 'does not exist';
  throw new MemoryMountError(
    'mount_path_unwritable',
    `memory root ${memoryRoot} ${found}. The operator prepares it once: ` +
      `\`mkdir -p ${memoryRoot} && chown <worker user> ${memoryRoot}\` (it stands for ${MOUNT_PREFIX}).`,
    { path: memoryRoot },
  );
}

/**
 * Creates the store's folder (and any folder between memoryRoot and it), mode 0700, with its
 * marker, and returns it opened. The store folder itself is made with a non-recursive mkdir: if
 * two sessions race for one path, exactly one wins and the other gets `mount_path_exists`.
 *
 * Every folder on the way is opened without following links from its parent's handle, starting
 * at memoryRoot, and each mkdir is relative to its parent's handle: a folder on the way that is
 * (or becomes) a link is refused, never walked through. A folder on the way that holds a store
 * marker is another store's folder, whose agent owns its contents: nothing is mounted inside it.
 * The store folder is opened right after its mkdir, through its parent's handle, and checked
 * to be empty, so what the engine holds is the folder it made. The handles of memoryRoot and
 * of every folder on the way stay held with it (its `chain`): nothing on the mount path is found
 * again by path later.
 * Every folder created is appended to `created` as soon as it exists, so a failure part-way
 * still lets the caller clean up.
 */
export async function createStoreFolder(
  fs: FileSystem,
  memoryRoot: string,
  store: MountedStore,
  created: CreatedFolder[],
): Promise<StoreFolder> {
  const refuse = (code: 'mount_path_invalid' | 'mount_path_exists', path: string, why: string, cause?: unknown) =>
    new MemoryMountError(code, `store ${store.memoryStoreId}: ${path} ${why}`, { memoryStoreId: store.memoryStoreId, path, cause });
  const segments = posix.relative(memoryRoot, store.path).split('/');
  const opened: DirHandle[] = [];
  let chain: MountChain | null = null;
  try {
    let parent = await fs.openDir(memoryRoot);
    opened.push(parent);
    let dir = memoryRoot;
    for (const segment of segments.slice(0, -1)) {
      dir = posix.join(dir, segment);
      let child: DirHandle;
      try {
        child = await fs.openDir(`${parent.path}/${segment}`);
      } catch (err) {
        if (errorCode(err) === 'ELOOP' || errorCode(err) === 'ENOTDIR') throw refuse('mount_path_invalid', dir, 'is not a folder (a link or a file)', err);
        if (errorCode(err) !== 'ENOENT') throw err;
        await mkdirOwned(fs, `${parent.path}/${segment}`, dir, store);
        const made: CreatedFolder = { path: dir };
        created.push(made);
        child = await fs.openDir(`${parent.path}/${segment}`).catch((e: unknown) => {
          throw refuse('mount_path_exists', dir, 'changed right after it was created', e);
        });
        made.way = [...opened.slice(1), child].map(({ dev, ino }) => ({ dev, ino }));
      }
      opened.push(child);
      if ((await fs.lstat(`${child.path}/${MARKER_FILE}`)) !== null) {
        throw refuse('mount_path_exists', dir, "is another store's folder (it holds a store marker): no store is mounted inside one");
      }
      parent = child;
    }
    const leaf = `${parent.path}/${segments.at(-1)!}`;
    await mkdirOwned(fs, leaf, store.path, store);
    const entry: CreatedFolder = { path: store.path, store };
    created.push(entry);
    // The folder owns the chain from here on, whether its open succeeds or not.
    chain = new MountChain(fs, memoryRoot, segments, [...opened]);
    const folder = await StoreFolder.openIn(fs, store.path, chain).catch((err: unknown) => {
      throw refuse('mount_path_exists', store.path, 'changed right after it was created', err);
    });
    // Closed on any failure here (EMFILE included): nothing opened outlives a failed mount.
    const names = await folder.topLevelNames().catch(async (err: unknown) => {
      await folder.close();
      throw err;
    });
    if (names.length > 0) {
      // Someone else's entries: this folder is never emptied by us (it is removed only if empty).
      await folder.close();
      throw refuse('mount_path_exists', store.path, 'is not the empty folder just created');
    }
    entry.folder = folder;
    await writeMarker(folder, store.memoryStoreId);
    return folder;
  } finally {
    if (chain === null) for (const handle of opened.reverse()) await handle.close();
  }
}

/** mkdir of `target` (a handle-relative path) for the folder the operator knows as `path`. */
async function mkdirOwned(fs: FileSystem, target: string, path: string, store: MountedStore): Promise<void> {
  try {
    await fs.mkdir(target, { mode: 0o700 });
  } catch (err) {
    const code = errorCode(err);
    const details = { memoryStoreId: store.memoryStoreId, path, cause: err };
    if (code === 'EEXIST') {
      throw new MemoryMountError(
        'mount_path_exists',
        `store ${store.memoryStoreId}: something is already at ${path} (${store.mountPath}). ` +
          'The worker never adopts or deletes what it did not create: if it is left from an earlier ' +
          'session that is over, remove it; otherwise give this store another mount_path.',
        details,
      );
    }
    if (code && UNWRITABLE_CODES.has(code)) {
      throw new MemoryMountError(
        'mount_path_unwritable',
        `store ${store.memoryStoreId}: cannot create ${path} (${code}). Make the memory root writable ` +
          `by the worker's user: \`mkdir -p <memoryRoot> && chown <worker user> <memoryRoot>\`.`,
        details,
      );
    }
    throw err;
  }
}

/** `gone`: nothing was there to remove (not a failure); `left`: something is there and stays, with why. */
export type RemovalOutcome = { removed: true } | { removed: false; gone: true } | { removed: false; gone: false; reason: string };

/** Out of descriptors, the process's or the system's: often for a moment only, while connections and reads in flight close. */
const OUT_OF_DESCRIPTORS = new Set(['EMFILE', 'ENFILE']);
/** The waits before a removal that ran out of descriptors is tried again: about 6 s in all, past an idle connection's keep-alive. */
const OUT_OF_DESCRIPTORS_RETRY_MS = [100, 1_000, 5_000];

/**
 * `removeCreatedFolder`, tried again a moment later while it fails for want of descriptors: a
 * folder left at a mount path refuses the next session's mount there, so a passing EMFILE (a
 * failed materialize's connections still closing) is waited out, up to about 6 s. Any other
 * failure is the answer at once.
 */
export async function removeCreatedFolder(
  fs: FileSystem,
  memoryRoot: string,
  folder: CreatedFolder,
  storeFolder?: StoreFolder,
): Promise<RemovalOutcome> {
  for (let attempt = 0; ; attempt++) {
    const { outcome, errno } = await removeOnce(fs, memoryRoot, folder, storeFolder);
    const wait = OUT_OF_DESCRIPTORS_RETRY_MS[attempt];
    if (wait === undefined || errno === undefined || !OUT_OF_DESCRIPTORS.has(errno)) return outcome;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/**
 * Removes one folder this mounter created, reaching it from a handle on memoryRoot one no-follow
 * step at a time, never by its path. A store folder is removed whole through its held handle
 * (`StoreFolder.removeAll`: links inside are removed, never followed, at any depth), and only
 * while the store's path still leads to it: one moved away or replaced is left. An in-between
 * folder only when it is still the folder made (`way`) and empty, since another session's store
 * may live in it now; its name is removed through its parent's handle. A failure comes with its
 * `errno`.
 */
async function removeOnce(
  fs: FileSystem,
  memoryRoot: string,
  folder: CreatedFolder,
  storeFolder?: StoreFolder,
): Promise<{ outcome: RemovalOutcome; errno?: string }> {
  try {
    if (storeFolder) {
      const at = await storeFolder.locate();
      if (at === 'missing') return { outcome: { removed: false, gone: true } };
      if (at !== 'directory') return { outcome: { removed: false, gone: false, reason: leftBecause(at) } };
      await storeFolder.removeAll();
      return { outcome: { removed: true } };
    }
    if (!folder.way) return { outcome: { removed: false, gone: false, reason: 'was not opened after it was made; left alone' } };
    return { outcome: await removeEmptyFolder(fs, memoryRoot, folder.path, folder.way) };
  } catch (err) {
    const errno = errorCode(err);
    return { outcome: { removed: false, gone: false, reason: `could not be removed (${errno ?? String(err)})` }, ...(errno !== undefined && { errno }) };
  }
}

/**
 * rmdir of the folder at `path` through its parent's handle, reached from memoryRoot through the
 * folders `way` names (each identity checked, its own last): the folder goes only while it is
 * the one recorded, and only when empty. Throws what the disk throws but ENOENT and ENOTEMPTY.
 * An identity `way` lacks (a record written before they were kept) is not checked.
 */
export async function removeEmptyFolder(
  fs: FileSystem,
  memoryRoot: string,
  path: string,
  way: readonly (FolderIdentity | undefined)[],
): Promise<RemovalOutcome> {
  const chain = await reachMountChain(fs, memoryRoot, path, way.slice(0, -1));
  if (!(chain instanceof MountChain)) {
    return chain.problem === 'missing' ? { removed: false, gone: true } : { removed: false, gone: false, reason: leftBecause(chain.problem) };
  }
  try {
    // No identity (a record from before they were kept): a folder, reached no-follow, is enough.
    const own = way.at(-1);
    const problem = own ? await stepProblem(fs, chain.leafVia, own) : await typeProblem(fs, chain.leafVia);
    if (problem === 'missing') return { removed: false, gone: true };
    if (problem) return { removed: false, gone: false, reason: leftBecause(problem) };
    try {
      await fs.rm(chain.leafVia);
    } catch (err) {
      if (errorCode(err) === 'ENOTEMPTY' || errorCode(err) === 'EEXIST') return { removed: false, gone: false, reason: 'is not empty; left alone' };
      throw err;
    }
    return { removed: true };
  } finally {
    await chain.close();
  }
}

async function typeProblem(fs: FileSystem, via: string): Promise<'missing' | 'not_directory' | null> {
  const stat = await fs.lstat(via);
  if (stat === null) return 'missing';
  return stat.type === 'directory' ? null : 'not_directory';
}

function leftBecause(problem: 'not_directory' | 'replaced'): string {
  return problem === 'replaced'
    ? 'is now a different folder (or a folder on its way is); left alone'
    : 'is now a link or a file (or a folder on its way is); left alone';
}
