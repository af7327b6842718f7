import { posix } from 'node:path';
import { errorCode, type DirHandle, type FileSystem } from './file-system.js';

/**
 * The folders on a store's mount path, held open from the top down: `memoryRoot`, then each
 * folder between it and the store folder, each opened without following a link from the handle
 * of the one above it. The store folder is `leaf` in the last of them (`parent`).
 *
 * Why: below memoryRoot the agent may be able to rename or replace a folder (an in-between folder
 * it can write, or its own store folder). A host path handed to the kernel again follows any
 * folder on the way that has become a link, so nothing on the mount path is ever found again by
 * its path: every later look (a pass's `locate`, finalize's removal, recover) goes from these
 * handles, one no-follow step at a time, and compares what it finds with the identity held.
 */

/** Identity of a folder: the pair names one folder on the host. */
export interface FolderIdentity {
  dev: number;
  ino: number;
}

/** Why a mount path no longer leads to the folder held: nothing there, a link or a file, or another folder. */
export type ChainProblem = 'missing' | 'not_directory' | 'replaced';

export class MountChain {
  #closed = false;

  /**
   * `top` is the host path of `handles[0]`; `names[i]` is the entry in `handles[i]` that leads to
   * `handles[i + 1]`, and its last one (`leaf`) is the store folder's name in `parent`.
   */
  constructor(
    private readonly fs: FileSystem,
    readonly top: string,
    readonly names: readonly string[],
    readonly handles: readonly DirHandle[],
  ) {
    if (handles.length !== names.length || names.length === 0) throw new TypeError('a mount chain holds one handle per name');
  }

  /** The store folder's parent, held. */
  get parent(): DirHandle {
    return this.handles.at(-1)!;
  }

  /** The store folder's name in `parent`. */
  get leaf(): string {
    return this.names.at(-1)!;
  }

  /** `parent.path/leaf`: how the store folder is reached through its parent's handle. */
  get leafVia(): string {
    return `${this.parent.path}/${this.leaf}`;
  }

  /** Host path of the folder `handles[i]` (the operator's name for it). */
  hostPathOf(i: number): string {
    return posix.join(this.top, ...this.names.slice(0, i));
  }

  /**
   * Whether every name on the way still leads, from the handle above it, to the folder held
   * (and the leaf to `leaf`). Each step is one lstat of a name in a held folder: a link is seen
   * as a link, never followed. The first step that does not hold says why.
   */
  async check(leaf: FolderIdentity): Promise<ChainProblem | null> {
    for (let i = 0; i < this.names.length; i++) {
      const expect = i + 1 < this.handles.length ? this.handles[i + 1]! : leaf;
      const problem = await stepProblem(this.fs, `${this.handles[i]!.path}/${this.names[i]!}`, expect);
      if (problem) return problem;
    }
    return null;
  }

  /** The held in-between folders' identities, outermost first (memoryRoot's is not one of them). */
  get between(): FolderIdentity[] {
    return this.handles.slice(1).map(({ dev, ino }) => ({ dev, ino }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const handle of [...this.handles].reverse()) await handle.close().catch(() => {});
  }
}

/** What is at `via` (a name in a held folder) compared with the folder `expect` names. */
export async function stepProblem(fs: FileSystem, via: string, expect: FolderIdentity): Promise<ChainProblem | null> {
  const stat = await fs.lstat(via);
  if (stat === null) return 'missing';
  if (stat.type !== 'directory') return 'not_directory';
  return stat.dev === expect.dev && stat.ino === expect.ino ? null : 'replaced';
}

/**
 * Opens the chain from `top` (opened by its path: it is the operator's) down to the parent of
 * `hostPath`, one no-follow step at a time. `expect[i]`, when given, is the identity the i-th
 * in-between folder must have (recorded when the mount made or first opened it). Returns the
 * chain, or why the way is not there: `missing` (a folder on the way is gone), `not_directory`
 * (a link or a file on the way), `replaced` (a folder other than the one recorded). Other
 * failures (EACCES, EIO) are thrown.
 */
export async function reachMountChain(
  fs: FileSystem,
  top: string,
  hostPath: string,
  expect: readonly (FolderIdentity | undefined)[] = [],
): Promise<MountChain | { problem: ChainProblem; at: string }> {
  const names = posix.relative(top, hostPath).split('/');
  if (names.length === 0 || names.some((n) => n === '' || n === '.' || n === '..')) throw new TypeError(`${hostPath} is not below ${top}`);
  const handles: DirHandle[] = [await fs.openDir(top)];
  try {
    for (let i = 0; i < names.length - 1; i++) {
      const at = posix.join(top, ...names.slice(0, i + 1));
      let child: DirHandle;
      try {
        child = await fs.openDir(`${handles[i]!.path}/${names[i]!}`);
      } catch (err) {
        const code = errorCode(err);
        if (code === 'ENOENT') return await failed(handles, 'missing', at);
        if (code === 'ELOOP' || code === 'ENOTDIR') return await failed(handles, 'not_directory', at);
        throw err;
      }
      handles.push(child);
      const want = expect[i];
      if (want && (child.dev !== want.dev || child.ino !== want.ino)) return await failed(handles, 'replaced', at);
    }
  } catch (err) {
    await failed(handles, 'missing', '');
    throw err;
  }
  return new MountChain(fs, top, names, handles);
}

async function failed(handles: DirHandle[], problem: ChainProblem, at: string): Promise<{ problem: ChainProblem; at: string }> {
  for (const handle of handles.reverse()) await handle.close().catch(() => {});
  return { problem, at };
}
