import type { DirHandle, DirWatch, FileSystem } from './file-system.js';

/**
 * Which folders of one store folder may have changed since the scan last listed them, told by a
 * watch on each folder (`FileSystem.watchDir`), so that an idle scan lists none of them.
 *
 * A hint, never a permission. It only ever lets a scan take a folder's last listing again
 * instead of listing it; no I/O is skipped that would have refused anything, since nothing is
 * done with what a scan saw before the executor checks the disk again through the confined
 * folder (apply.ts re-reads every path before it writes, pushes or deletes). And it says
 * "unchanged" only while it is sure:
 * - a folder is watched from the moment before it is listed, through the handle the walk
 *   opened it by (a pinned handle: the watch is on that very folder, whatever is renamed or
 *   swapped later), so a change during or after the listing is noticed;
 * - the first event stops that folder's watch (it is changed: nothing more to learn until it
 *   is listed again), so a flood of events costs one callback per folder per scan, and the next
 *   listing starts a new watch;
 * - a folder is taken as it was only if its own watch is alive and its identity is the one
 *   listed, and a folder below one taken as it was without being opened only if its parent's
 *   watch (which sees every rename, creation and removal in the parent) is alive too;
 * - a watch that fails, could not start, or is past `MAX_WATCHED_FOLDERS`, leaves its folder
 *   listed at every scan.
 * What a watch can miss (inotify's queue overflowing under a flood of events on other folders,
 * writes through a shared mmap, a filesystem whose changes come from elsewhere) waits for the
 * full scan that the caller runs on a cadence, at finalize, and after any failure here.
 */
export class FolderWatch {
  readonly #watchDir: NonNullable<FileSystem['watchDir']>;
  /** Every folder listed with a watch started, by its wire path (`/` the root). */
  readonly #folders = new Map<string, Watched>();
  /** Folders the current walk reached: the others are gone, and let go at `endWalk`. */
  readonly #reached = new Set<string>();
  /** Watch callbacks since the last `endWalk`, for tests and the debug log. */
  events = 0;
  /** Folders with a live watch. */
  #live = 0;

  constructor(watchDir: NonNullable<FileSystem['watchDir']>) {
    this.#watchDir = watchDir;
  }

  /** `wireDir`, opened as `dir`, is about to be listed: from here on a change to it is noticed. */
  listing(wireDir: string, dir: DirHandle): void {
    this.#reached.add(wireDir);
    const known = this.#folders.get(wireDir);
    if (known?.watch && known.dev === dir.dev && known.ino === dir.ino) {
      known.walkable = [];
      known.deep = [];
      return;
    }
    if (known) this.#stop(known);
    const entry: Watched = { dev: dir.dev, ino: dir.ino, walkable: [], deep: [], watch: null };
    this.#folders.set(wireDir, entry);
    // Only a pinned handle names the folder itself; a name could be swapped before the watch starts.
    if (!dir.pinned || this.#live >= MAX_WATCHED_FOLDERS) return;
    try {
      entry.watch = this.#watchDir(dir.path, () => this.#stop(entry, true));
      this.#live++;
    } catch {
      // A limit of the host's (inotify's watches), the folder gone: listed at every scan instead.
      entry.watch = null;
    }
  }

  /** What the listing found below `wireDir`: the subfolders walked, and those too deep to be (visited as entries only). */
  listed(wireDir: string, walkable: readonly string[], deep: readonly string[]): void {
    const entry = this.#folders.get(wireDir);
    if (!entry) return;
    entry.walkable = walkable;
    entry.deep = deep;
  }

  /** Nothing changed in `wireDir`, now opened as `identity`, since it was listed. */
  unchanged(wireDir: string, identity: { dev: number; ino: number }): boolean {
    const entry = this.#folders.get(wireDir);
    const same = entry?.watch != null && entry.dev === identity.dev && entry.ino === identity.ino;
    if (same) this.#reached.add(wireDir);
    return same;
  }

  /**
   * `wireDir` and every folder below it as last listed are unchanged and `replayable` (the
   * scan's own condition): none of it needs opening. Its parent must be unchanged too (the
   * caller asks only then): the parent's watch is what says `wireDir` is still the folder listed.
   */
  unchangedBelow(wireDir: string, replayable: (wireDir: string) => boolean): boolean {
    const entry = this.#folders.get(wireDir);
    if (entry?.watch == null || !replayable(wireDir)) return false;
    if (!entry.walkable.every((child) => this.unchangedBelow(child, replayable))) return false;
    this.#reached.add(wireDir);
    return true;
  }

  /** The subfolders of `wireDir` as last listed: walked, and too deep to be. */
  subfolders(wireDir: string): { walkable: readonly string[]; deep: readonly string[] } {
    const entry = this.#folders.get(wireDir);
    return { walkable: entry?.walkable ?? [], deep: entry?.deep ?? [] };
  }

  /** After a walk: folders it did not reach are gone (or no longer folders), and their watches stop. */
  endWalk(): void {
    for (const [wireDir, entry] of this.#folders) {
      if (this.#reached.has(wireDir)) continue;
      this.#stop(entry);
      this.#folders.delete(wireDir);
    }
    this.#reached.clear();
    this.events = 0;
  }

  /** Every watch stops; the next walk lists every folder. */
  close(): void {
    for (const entry of this.#folders.values()) this.#stop(entry);
    this.#folders.clear();
    this.#reached.clear();
  }

  /** Folders with a live watch. */
  get watched(): number {
    return this.#live;
  }

  /**
   * The folder's watch stops. On its first event (`event`): it changed, and is listed again by
   * the next scan, which starts a new watch first.
   */
  #stop(entry: Watched, event = false): void {
    if (event) this.events++;
    if (!entry.watch) return;
    entry.watch.close();
    entry.watch = null;
    this.#live--;
  }
}

/**
 * Folders of one store watched at most: inotify's watches are the host's (8,192 a user on older
 * kernels), shared by every process; a store with more folders lists the rest at every scan.
 */
export const MAX_WATCHED_FOLDERS = 1_000;

/**
 * Passes between full scans while the watch is used, and ms at most: what a watch can miss is
 * found within this. The final sync, finalize's flush and recovery always scan in full.
 */
export const FULL_SCAN_EVERY_PASSES = 20;
export const FULL_SCAN_EVERY_MS = 60_000;

interface Watched {
  dev: number;
  ino: number;
  /** Subfolders found at the last listing that the walk enters. */
  walkable: readonly string[];
  /** Subfolders found at the last listing too deep or long to hold a memory (visited as entries only). */
  deep: readonly string[];
  /** Alive while nothing changed since the listing; `null`: changed, failed, or never started. */
  watch: DirWatch | null;
}
