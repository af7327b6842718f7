/**
 * The session's bound on memory content listed and not yet written: what a materialize holds in
 * memory while it downloads, all stores together.
 *
 * A download lists each folder of a store with content and writes it while the other folders are
 * still being listed (folder-download.ts). Listing runs far ahead of writing (a folder's pages
 * take a few round trips, writing 2,000 files takes the disk most of a second), so without a
 * bound every store's whole content would sit in memory before most of it is on disk: eight
 * stores of 2,000 memories of 1 kB held 16 MB of text at once, and the garbage of 32 listings at
 * a time made V8's heap grow to 150 MB above the process's start (docs/performance.md).
 *
 * The rule, for a folder listing about to start in a store (a lane):
 *
 * | the lane holds                    | it may start                                           |
 * |-----------------------------------|--------------------------------------------------------|
 * | no listing (listed, not written)  | always: every store moves, whatever the others hold    |
 * | one or more                       | while the session holds less than `limit`              |
 *
 * A listing holds, from its start to its answer, an estimate (the mean of the listings answered
 * so far, `FIRST_ESTIMATE` before any), then what it really carried, until the last of its files
 * is written. Waiting listings start fewest-held lane first, so the stores share the budget. A
 * listing waits for the budget before it takes a transfer slot, never while it holds one: the
 * slots it would hold are the ones the writes that free the budget need.
 *
 * Sizes are in UTF-16 code units of the content (`string.length`): what the text takes in
 * memory, near enough, and known without encoding it.
 */

/** What one listing is assumed to carry until it has answered: a folder of about 64 memories of 1 kB. */
export const FIRST_ESTIMATE = 64 * 1024;

/**
 * Content listed and not yet written, all stores together: about 1,000 memories of 1 kB, what
 * the disk writes in half a second or so, so a listing answering within that keeps the writes
 * busy. Smaller held less at the bench's 20 ms a request (eight stores × 2,000: peak RSS about
 * 10 MB lower at 256 KiB than at 2 MiB, medians of 4 runs), but a store farther away needs the
 * listings further ahead: half a second of writing is the margin kept.
 */
export const DOWNLOAD_CONTENT_LIMIT = 1024 * 1024;

/** One listing's hold on the budget. */
export interface ContentTicket {
  /** The listing answered with `size` of content: its hold becomes that. */
  carried(size: number): void;
  /** Its files are written (or it failed): the hold is given back. Idempotent. */
  release(): void;
}

/** One store's side of the budget. */
export interface ContentLane {
  /** Waits until a listing may start under the rule; rejects with the signal's reason if it is aborted first. */
  admit(signal?: AbortSignal): Promise<ContentTicket>;
}

interface Lane {
  open: number;
  waiting: { grant: () => void }[];
}

export class ContentBudget {
  readonly #limit: number;
  #held = 0;
  #answered = 0;
  #answeredSize = 0;
  readonly #lanes = new Map<string, Lane>();

  constructor(limit: number = DOWNLOAD_CONTENT_LIMIT) {
    if (!(limit > 0)) throw new RangeError(`ContentBudget needs a positive limit; got ${limit}`);
    this.#limit = limit;
  }

  /** Content held now (estimates and answers), for tests. */
  get held(): number {
    return this.#held;
  }

  lane(key: string): ContentLane {
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { open: 0, waiting: [] };
      this.#lanes.set(key, lane);
    }
    const own = lane;
    return { admit: (signal) => this.#admit(own, signal) };
  }

  #admit(lane: Lane, signal?: AbortSignal): Promise<ContentTicket> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (lane.waiting.length === 0 && this.#grantable(lane)) return Promise.resolve(this.#ticket(lane));
    return new Promise<ContentTicket>((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#ticket(lane));
        },
      };
      const onAbort = () => {
        const at = lane.waiting.indexOf(waiter);
        if (at >= 0) lane.waiting.splice(at, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      lane.waiting.push(waiter);
    });
  }

  #grantable(lane: Lane): boolean {
    return lane.open === 0 || this.#held < this.#limit;
  }

  #estimate(): number {
    return this.#answered === 0 ? FIRST_ESTIMATE : this.#answeredSize / this.#answered;
  }

  #ticket(lane: Lane): ContentTicket {
    lane.open++;
    let hold = this.#estimate();
    this.#held += hold;
    let released = false;
    return {
      carried: (size) => {
        if (released) return;
        this.#answered++;
        this.#answeredSize += size;
        this.#held += size - hold;
        hold = size;
        // A listing that carried less than assumed may make room.
        this.#pump();
      },
      release: () => {
        if (released) return;
        released = true;
        lane.open--;
        this.#held -= hold;
        this.#pump();
      },
    };
  }

  /** Starts waiting listings while the rule allows, the lane holding fewest first. */
  #pump(): void {
    for (;;) {
      let next: Lane | undefined;
      for (const lane of this.#lanes.values()) {
        if (lane.waiting.length === 0 || !this.#grantable(lane)) continue;
        if (!next || lane.open < next.open) next = lane;
      }
      if (!next) return;
      next.waiting.shift()!.grant();
    }
  }
}
