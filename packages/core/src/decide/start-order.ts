import type { Transfer } from './plan.js';

/**
 * The order in which the executor starts transfers: a few folders take turns, one transfer
 * each, so the transfers in flight at any moment sit in different folders. Within a folder the
 * order they were handed in is kept.
 *
 * Why turns: creating or renaming a name in a folder holds that folder's lock in the kernel, so
 * writes into one folder run one after another however many are in flight. A download in path
 * order keeps its whole pool on one folder at a time; taking turns lets them run side by side
 * (measured on ext4 with 32 in flight: 2,000 files in 40 folders written in about half the time
 * and half the kernel CPU).
 *
 * Why only a few at a time (`FOLDERS_IN_TURN`): no more than libuv's 4 threads make filesystem
 * calls at once, so four folders already keep them apart; and the store folder keeps only
 * `MAX_HELD_FOLDERS` (8) subfolders open between acts. With all 40 folders of a download taking
 * turns, every write found its folder closed again and opened it anew (an `openat`, an `fstat`
 * and a `close` more per file: 20 system calls a file instead of 12, measured by `strace -c`).
 * A folder that has no transfer left gives its turn to the next one waiting.
 *
 * The order is only a schedule: every transfer still re-checks the disk right before it acts.
 */
export const FOLDERS_IN_TURN = 4;

/** One folder's transfers still to start: `queue[at]` on; those before it are taken and let go. */
interface Turn<T> {
  readonly folder: string;
  readonly queue: (T | undefined)[];
  at: number;
}

/**
 * Transfers handed in at any time (a download adds each folder's as its listing arrives), taken
 * out with the folders in turn: at most `window` folders take turns, the others wait in the
 * order they first appeared.
 */
export class FolderTurns<T extends Pick<Transfer, 'path'>> {
  readonly #turns = new Map<string, Turn<T>>();
  readonly #active: Turn<T>[] = [];
  readonly #waiting: Turn<T>[] = [];
  #cursor = 0;
  #size = 0;

  constructor(readonly window: number = FOLDERS_IN_TURN) {
    if (!(window >= 1)) throw new RangeError(`FolderTurns needs a window of at least 1; got ${window}`);
  }

  /** Transfers handed in and not taken yet. */
  get size(): number {
    return this.#size;
  }

  add(item: T): void {
    const folder = parentOf(item.path);
    let turn = this.#turns.get(folder);
    if (!turn) {
      turn = { folder, queue: [], at: 0 };
      this.#turns.set(folder, turn);
      if (this.#active.length < this.window) this.#active.push(turn);
      else this.#waiting.push(turn);
    }
    turn.queue.push(item);
    this.#size++;
  }

  /** The next transfer to start, or undefined when none is left. */
  next(): T | undefined {
    if (this.#active.length === 0) return undefined;
    if (this.#cursor >= this.#active.length) this.#cursor = 0;
    const turn = this.#active[this.#cursor]!;
    const item = turn.queue[turn.at]!;
    // Let go as it is taken: a download's item holds its memory's content, which must not wait
    // in memory for the rest of its folder (docs/performance.md, the seventh round).
    turn.queue[turn.at++] = undefined;
    this.#size--;
    if (turn.at < turn.queue.length) {
      this.#cursor++;
    } else {
      // Done with this folder (for now: a later add opens a new turn for it). The next folder
      // waiting takes its place in the rotation, so the turns keep their order.
      this.#turns.delete(turn.folder);
      const replacement = this.#waiting.shift();
      if (replacement) {
        this.#active[this.#cursor] = replacement;
        this.#cursor++;
      } else {
        this.#active.splice(this.#cursor, 1);
      }
    }
    return item;
  }
}

/** The indexes of `transfers` in the order `FolderTurns` starts them, each once. */
export function spreadByFolder(transfers: readonly Pick<Transfer, 'path'>[], window = FOLDERS_IN_TURN): number[] {
  const turns = new FolderTurns<{ path: string; index: number }>(window);
  transfers.forEach((transfer, index) => turns.add({ path: transfer.path, index }));
  const order: number[] = [];
  for (let item = turns.next(); item; item = turns.next()) order.push(item.index);
  return order;
}

/** `/a/b/c.md` → `/a/b`; a path at the root → ``. */
function parentOf(path: string): string {
  return path.slice(0, Math.max(0, path.lastIndexOf('/')));
}
