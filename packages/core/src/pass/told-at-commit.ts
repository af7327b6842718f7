import type { StoreEvents } from '../model/events.js';

/**
 * The store's events as the act step sees them: what a transfer has to tell (`pulled`, `pushed`,
 * `deleted`, `renamed`, `refused`) is kept, in the order it happened, and told by the commit step
 * (`tell`), so a listener hears of a pass's transfers once the state they moved is the store's
 * state.
 *
 * Two go out at once, because what they promise is about the moment itself:
 * - `conflict` is told *before the file is replaced* (docs/reconcile.md): a listener may still
 *   read or copy the losing file on disk, and a copy that fails stops the pull. It is part of
 *   the transfer, not news of it.
 * - `progress` is a meter: a long download shows its progress while it runs.
 */
export class ToldAtCommit implements StoreEvents {
  readonly #events: StoreEvents;
  readonly #kept: (() => void)[] = [];

  constructor(events: StoreEvents) {
    this.#events = events;
  }

  get conflictCopies(): boolean {
    return this.#events.conflictCopies;
  }

  hostPath(path: string): string {
    return this.#events.hostPath(path);
  }

  conflict(e: Parameters<StoreEvents['conflict']>[0]): void {
    this.#events.conflict(e);
  }

  pulled(e: Parameters<StoreEvents['pulled']>[0]): void {
    this.#kept.push(() => this.#events.pulled(e));
  }

  pushed(e: Parameters<StoreEvents['pushed']>[0]): void {
    this.#kept.push(() => this.#events.pushed(e));
  }

  deleted(e: Parameters<StoreEvents['deleted']>[0]): void {
    this.#kept.push(() => this.#events.deleted(e));
  }

  renamed(e: Parameters<StoreEvents['renamed']>[0]): void {
    this.#kept.push(() => this.#events.renamed(e));
  }

  refused(e: Parameters<StoreEvents['refused']>[0]): void {
    this.#kept.push(() => this.#events.refused(e));
  }

  progress(done: number, total: number): void {
    this.#events.progress(done, total);
  }

  /** Tells what was kept, in order, once. */
  tell(): void {
    for (const told of this.#kept.splice(0)) told();
  }
}
