/**
 * The session's transfer slots, shared fairly by its stores (SPEC 6.7: one failing store never
 * starves the others).
 *
 * Why not one plain semaphore: a store whose requests hang (a write route that never answers)
 * holds every slot it takes until `requestTimeout`, and a store that starts its transfers first
 * takes them all. With one semaphore the other stores' pushes then wait behind it, and a
 * finalize's window can close on them.
 *
 * The rule, for a store (a lane) asking for a slot while `free` slots are left:
 *
 * | the lane holds            | granted when                                                     |
 * |---------------------------|------------------------------------------------------------------|
 * | fewer than its share      | any slot is free                                                 |
 * | its share or more         | a slot is free beyond what the other active lanes still need to |
 * |                           | reach their shares (it borrows only what they leave idle)        |
 *
 * `share` = ⌊total / active lanes⌋, at least 1. A lane is active while it is inside a pass
 * (`begin` … `end`), holds a slot, or waits for one. Freed slots go first to the waiting lane
 * that holds the fewest. So a store alone gets every slot; eight stores at once get four each
 * (of 32); and a store that hangs holds at most its share while the others work, borrowing more
 * only once they are done with theirs.
 */

/** What a transfer takes a slot of: the shape `applyPlan` and the listings use. */
export interface TransferSlots {
  runExclusive<T>(work: () => Promise<T> | T): Promise<T>;
}

/** One store's slots, with its pass marked: while inside one, its share is kept for it. */
export interface StoreSlots extends TransferSlots {
  begin(): void;
  end(): void;
}

interface Lane {
  held: number;
  /** Inside a pass (possibly between transfers, holding nothing). */
  inPass: number;
  waiting: (() => void)[];
}

export class FairSlots {
  readonly #total: number;
  #free: number;
  readonly #lanes = new Map<string, Lane>();

  constructor(total: number) {
    if (!Number.isSafeInteger(total) || total < 1) throw new RangeError(`FairSlots needs at least one slot; got ${total}`);
    this.#total = total;
    this.#free = total;
  }

  /** The slots of one store. */
  lane(key: string): StoreSlots {
    const lane = this.#laneOf(key);
    return {
      runExclusive: async <T>(work: () => Promise<T> | T): Promise<T> => {
        await this.#acquire(lane);
        try {
          return await work();
        } finally {
          this.#release(lane);
        }
      },
      begin: () => {
        lane.inPass++;
      },
      end: () => {
        lane.inPass = Math.max(0, lane.inPass - 1);
        // Its reserve is free to borrow now.
        this.#pump();
      },
    };
  }

  /** Slots held per lane, for tests and status. */
  held(key: string): number {
    return this.#lanes.get(key)?.held ?? 0;
  }

  #laneOf(key: string): Lane {
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { held: 0, inPass: 0, waiting: [] };
      this.#lanes.set(key, lane);
    }
    return lane;
  }

  #acquire(lane: Lane): Promise<void> {
    // First come first served among equals: a lane that already waits keeps its place.
    if (lane.waiting.length === 0 && this.#grantable(lane)) {
      this.#take(lane);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      lane.waiting.push(resolve);
      // Counted active from now on, so others' borrowing stops short of its share.
      this.#pump();
    });
  }

  #release(lane: Lane): void {
    lane.held--;
    this.#free++;
    this.#pump();
  }

  #take(lane: Lane): void {
    lane.held++;
    this.#free--;
  }

  /** Hands free slots to waiting lanes, fewest held first, while the rule allows. */
  #pump(): void {
    for (;;) {
      let next: Lane | undefined;
      for (const lane of this.#lanes.values()) {
        if (lane.waiting.length === 0 || !this.#grantable(lane)) continue;
        if (!next || lane.held < next.held) next = lane;
      }
      if (!next) return;
      this.#take(next);
      next.waiting.shift()!();
    }
  }

  #grantable(lane: Lane): boolean {
    if (this.#free === 0) return false;
    const active = [...this.#lanes.values()].filter((l) => l === lane || l.inPass > 0 || l.held > 0 || l.waiting.length > 0);
    const share = Math.max(1, Math.floor(this.#total / active.length));
    if (lane.held < share) return true;
    let reserved = 0;
    for (const other of active) if (other !== lane) reserved += Math.max(0, share - other.held);
    return this.#free > reserved;
  }
}
