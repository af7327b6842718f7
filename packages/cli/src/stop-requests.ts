import { constants } from 'node:os';

/** The signals that ask the CLI to stop: Ctrl-C, a kill, a closed terminal. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type StopSignal = (typeof SIGNALS)[number];

/**
 * The ways a person asks a download or a mount to stop, counted: SIGINT, SIGTERM and SIGHUP
 * alike, and stdout closing under the CLI. The first request aborts `stop` (a download in
 * progress then removes what it wrote; a running mount finalizes); a second one aborts `hurry`
 * (the final sync is cut short, and what it did not push is kept for `recover`). Further ones
 * change nothing: finalize is bounded, so the process ends on its own soon after.
 *
 * Installed before anything is written to disk, so no signal finds the process without a
 * handler (Node's default for these signals kills it at once, leaving a half-made folder).
 */
export class StopRequests {
  readonly #stop = new AbortController();
  readonly #hurry = new AbortController();
  readonly #handlers = new Map<StopSignal, () => void>();
  #first: string | null = null;
  #second: string | null = null;
  #signal: StopSignal | null = null;

  constructor() {
    for (const name of SIGNALS) {
      const handler = () => this.request(name, name);
      this.#handlers.set(name, handler);
      process.on(name, handler);
    }
  }

  /** Aborted at the first request. */
  get stop(): AbortSignal {
    return this.#stop.signal;
  }

  /** Aborted at the second request. */
  get hurry(): AbortSignal {
    return this.#hurry.signal;
  }

  /** What made the first request (`SIGINT`, `stdout closed`...), null while none came. */
  get firstReason(): string | null {
    return this.#first;
  }

  /** What made the second request, null while none came. */
  get secondReason(): string | null {
    return this.#second;
  }

  /**
   * The exit code of a command stopped before it did anything: 128 + the signal's number, as
   * a shell reports a process a signal ended (130 for Ctrl-C); 0 when stdout closing stopped it
   * (a reader that has had enough is no failure).
   */
  get interruptedExitCode(): number {
    return this.#signal === null ? 0 : 128 + constants.signals[this.#signal];
  }

  request(reason: string, signal?: StopSignal): void {
    if (this.#first === null) {
      this.#first = reason;
      if (signal) this.#signal = signal;
      this.#stop.abort(new Error(`stopped by ${reason}`));
    } else if (this.#second === null) {
      this.#second = reason;
      this.#hurry.abort(new Error(`cut short by ${reason}`));
    }
  }

  dispose(): void {
    for (const [name, handler] of this.#handlers) process.off(name, handler);
    this.#handlers.clear();
  }
}
