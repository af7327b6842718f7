/**
 * A clock a test moves by hand, for the fakes' `now` option:
 *
 *   const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
 *   const server = new MemoryApiServer({ now: clock.now });
 *
 * It stands still until told otherwise, so every version written meanwhile shares one
 * `created_at` (a forced tie); `set` may also move it back, as a real clock can.
 */
export class ManualClock {
  #ms: number;

  constructor(startMs = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.#ms = startMs;
  }

  /** The current time in ms; a bound function, safe to pass as `now`. */
  readonly now = (): number => this.#ms;

  /** Moves the clock to `ms`, forward or back. */
  set(ms: number): void {
    this.#ms = ms;
  }

  /** Moves the clock `ms` forward (back, if negative). */
  advance(ms: number): void {
    this.#ms += ms;
  }
}
