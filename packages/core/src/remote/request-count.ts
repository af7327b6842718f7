import type { StoreRequests } from '../model/reports.js';

/** What a request does to a store: `read` (listings, the change feed, fetches) or `write` (create, update, delete). */
export type RequestKind = 'read' | 'write';

/**
 * The requests the engine's store client sent, per store id, counted from the moment the
 * counter was made: what a pass cost is the difference between two readings (`requestsBetween`).
 * Fed by `BoundedStoreClient` as each attempt ends, so an attempt the time bound cut off
 * counts for the requests it had sent by then.
 */
export class RequestCounter {
  readonly #byStore = new Map<string, StoreRequests>();

  /** `requests` sent to `storeId` by one attempt of a call; `retry`: the attempt repeated a failed one. */
  add(storeId: string, kind: RequestKind, requests: number, retry: boolean): void {
    if (requests <= 0) return;
    let count = this.#byStore.get(storeId);
    if (!count) {
      count = noRequests();
      this.#byStore.set(storeId, count);
    }
    count.total += requests;
    if (kind === 'read') count.reads += requests;
    else count.writes += requests;
    if (retry) count.retries += requests;
  }

  /** The requests sent to `storeId` so far: a copy, for `requestsBetween`. */
  of(storeId: string): StoreRequests {
    return { ...(this.#byStore.get(storeId) ?? noRequests()) };
  }
}

export function noRequests(): StoreRequests {
  return { total: 0, reads: 0, writes: 0, retries: 0 };
}

/** The requests sent between two readings of one store's count. */
export function requestsBetween(before: StoreRequests, after: StoreRequests): StoreRequests {
  return {
    total: after.total - before.total,
    reads: after.reads - before.reads,
    writes: after.writes - before.writes,
    retries: after.retries - before.retries,
  };
}
