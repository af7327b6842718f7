import { seededRandom } from '../seeded-random.js';
import type { RouteName } from './routes.js';

/**
 * What an injected failure does: answer with this HTTP status (and the error body and retry
 * headers the service sends with it); `'disconnect'`: drop the connection without an answer,
 * which the SDK reports as a connection error; `'hang'`: accept the request and never answer
 * it (a stalled connection) until the client gives up or the server closes; or
 * `{ afterApplying: status }`: carry the request out as usual, then replace its answer (success
 * or refusal) by this status, as a gateway that timed out on a backend that went on to finish
 * does. The client is told the call failed; the store may have changed.
 */
export type Fault = number | 'disconnect' | 'hang' | AppliedFault;

export interface AppliedFault {
  afterApplying: number;
}

/** The routes that change a store: the ones a `RandomWriteFaults` plan fails. */
export const WRITE_ROUTES: readonly RouteName[] = ['create', 'update', 'delete'];

/** Failures queued per route, consumed one per request in the order they were queued. */
export class FaultPlan {
  readonly #queues = new Map<RouteName, Fault[]>();

  add(route: RouteName, fault: Fault, times: number): void {
    checkFault(fault);
    if (!(Number.isInteger(times) && times >= 1)) throw new RangeError(`times must be a positive integer, not ${times}`);
    const queue = this.#queues.get(route) ?? [];
    for (let i = 0; i < times; i++) queue.push(fault);
    this.#queues.set(route, queue);
  }

  /** The fault for this request of `route`, if one is queued. */
  take(route: RouteName): Fault | undefined {
    return this.#queues.get(route)?.shift();
  }

  pending(route: RouteName): number {
    return this.#queues.get(route)?.length ?? 0;
  }

  clear(): void {
    this.#queues.clear();
  }
}

/** Throws a RangeError for anything `Fault` does not describe. */
export function checkFault(fault: Fault): void {
  if (typeof fault === 'string') {
    if (fault !== 'disconnect' && fault !== 'hang') {
      throw new RangeError(`a fault is an HTTP error status, 'disconnect', 'hang' or { afterApplying }, not ${JSON.stringify(fault)}`);
    }
    return;
  }
  const status: unknown = typeof fault === 'number' ? fault : fault?.afterApplying;
  if (!(typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599)) {
    throw new RangeError(`a fault status must be an HTTP error status (400-599), not ${JSON.stringify(fault)}`);
  }
}

export interface RandomWriteFaultOptions {
  /** Seeds the generator: the same seed and the same order of writes fail the same writes. */
  seed: number;
  /** Share of writes (create, update, delete) that fail: 0 to 1. */
  fraction: number;
  /** Share of those failures carried out before the status is answered: 0 to 1. */
  appliedFraction: number;
  /** The status answered. Default 503. */
  status?: number;
}

/**
 * Failures of a given share of a server's writes, picked by a seeded generator, some applied
 * before the failure is answered (`{ afterApplying }`) and some not: the service under load,
 * for a test that runs many writers and no script of which call fails. Reads never fail here
 * (queue those with `failNext`).
 */
export class RandomWriteFaults {
  readonly #next: () => number;
  readonly #fraction: number;
  readonly #appliedFraction: number;
  readonly #status: number;
  /** Failures answered so far: carried out first, and not. */
  readonly counts = { applied: 0, notApplied: 0 };

  constructor(options: RandomWriteFaultOptions) {
    for (const name of ['fraction', 'appliedFraction'] as const) {
      const share = options[name];
      if (!(share >= 0 && share <= 1)) throw new RangeError(`${name} must be from 0 to 1, not ${share}`);
    }
    this.#status = options.status ?? 503;
    checkFault(this.#status);
    this.#next = seededRandom(options.seed);
    this.#fraction = options.fraction;
    this.#appliedFraction = options.appliedFraction;
  }

  /** The fault for this request of `route`, if the draw fails it. */
  take(route: RouteName): Fault | undefined {
    if (!WRITE_ROUTES.includes(route)) return undefined;
    // Two draws per write whatever the outcome, so that one write's fate does not shift the next's.
    const fails = this.#next() < this.#fraction;
    const applied = this.#next() < this.#appliedFraction;
    if (!fails) return undefined;
    if (applied) this.counts.applied++;
    else this.counts.notApplied++;
    return applied ? { afterApplying: this.#status } : this.#status;
  }
}

