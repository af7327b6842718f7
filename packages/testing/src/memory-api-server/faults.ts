import type { RouteName } from './routes.js';

/**
 * What an injected failure does: answer with this HTTP status (and the error body and retry
 * headers the service sends with it); `'disconnect'`: drop the connection without an answer,
 * which the SDK reports as a connection error; or `'hang'`: accept the request and never answer
 * it (a stalled connection) until the client gives up or the server closes.
 */
export type Fault = number | 'disconnect' | 'hang';

/** Failures queued per route, consumed one per request in the order they were queued. */
export class FaultPlan {
  readonly #queues = new Map<RouteName, Fault[]>();

  add(route: RouteName, fault: Fault, times: number): void {
    if (typeof fault === 'string' && fault !== 'disconnect' && fault !== 'hang') {
      throw new RangeError(`a fault is an HTTP error status, 'disconnect' or 'hang', not ${JSON.stringify(fault)}`);
    }
    if (typeof fault === 'number' && !(Number.isInteger(fault) && fault >= 400 && fault <= 599)) {
      throw new RangeError(`a fault status must be an HTTP error status (400-599), not ${fault}`);
    }
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
