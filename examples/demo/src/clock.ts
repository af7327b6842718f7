/**
 * The session's clock. The mounter reads time only through its `now` option, so the demo can
 * show 15 s of throttling and a 30 s deletion grace period without waiting for either.
 */
export class ManualClock {
  #ms = 0;

  readonly now = (): number => this.#ms;

  advance(seconds: number): void {
    this.#ms += seconds * 1000;
  }

  /** Seconds since the session started, for the timeline. */
  get seconds(): number {
    return this.#ms / 1000;
  }
}
