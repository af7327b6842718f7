import { LIST_PAGE_SIZE, LIST_PAGE_SIZE_WITH_CONTENT, StoreError } from '@memory-mounter/core';
import type {
  StoreClient,
  StoreErrorKind,
  StoreFolderEntry,
  StoreListFolderOptions,
  StoreListingOptions,
  StoreListVersionsOptions,
  StoreMemory,
  StoreMemoryVersion,
} from '@memory-mounter/core';
import { MemoryService, type MemoryServiceOptions } from './model/memory-service.js';
import { API_ACTOR, type MemoryRecord, type MemoryStore } from './model/memory-store.js';
import type { VersionRecord } from './model/memory-versions.js';
import { ServiceRefusal, type RefusalCode } from './model/refusal.js';

/**
 * The request kinds, by StoreClient method. `listFolder` is the memory listing with `depth=1`
 * on the wire, so it logs (and fails) as `list`, with `depth: 1` in the request.
 */
export type StoreOp = 'list' | 'get' | 'create' | 'update' | 'delete' | 'listVersions';
export type StoreWriteOp = 'create' | 'update' | 'delete';

/** One request as the service would have received it. A listing logs one per page. */
export interface StoreRequest {
  op: StoreOp;
  storeId: string;
  memoryId?: string;
  path?: string;
  /** `1` for a `listFolder` page; absent for every other request. */
  depth?: number;
  /** A `listVersions` page read with content (the full view); absent for every other request. */
  withContent?: true;
  /** `now()` when the request was sent. */
  at: number;
}

export interface InMemoryStoreClientOptions extends MemoryServiceOptions {
  /** Delay before each request is answered; abortable. Default 0. */
  latencyMs?: number;
}

/** The HTTP status the service answers each kind with. */
const STATUS: Record<StoreErrorKind, number> = {
  not_found: 404,
  precondition_failed: 409,
  path_conflict: 409,
  rejected: 400,
  unauthorized: 401,
  unavailable: 503,
};

/** What each refusal of the model becomes: the kind AnthropicStoreClient maps its HTTP error to. */
const KIND: Record<RefusalCode, StoreErrorKind> = {
  invalid_request: 'rejected',
  not_found: 'not_found',
  path_conflict: 'path_conflict',
  precondition_failed: 'precondition_failed',
};

/**
 * A fake memory-store service in memory, for tests: the StoreClient face of the service model
 * (`MemoryService`, one `MemoryStore` per store) that `MemoryApiServer` serves over HTTP, so the
 * two fakes keep the same rules for paths, limits, versions, preconditions, listings and the
 * change feed. What this class adds is the transport a test controls: a request log, latency,
 * and fault injection.
 *
 * It implements the optional `listVersions` and `listFolder` too. Every write, through the
 * StoreClient or a helper (`seed`, `writeMemory`, `renameMemory`, `deleteMemory`,
 * `plantMemory`), records a memory version stamped by `now`; tests can redact a version
 * (`redactVersion`) and set a retention period (`versionRetentionMs`).
 *
 * A store id it has never seen is an empty store, created on first use: tests need not declare
 * their stores, and a listing of a fresh store is simply empty (the real API would say 404 for an
 * id that does not exist; inject `failNext('list', 'not_found')` to test that).
 *
 * Every object returned is a fresh copy; mutating it never changes the store.
 */
export class InMemoryStoreClient extends MemoryService implements StoreClient {
  /** Delay before each request is answered. Settable between calls. */
  latencyMs: number;
  /** Every request sent through the StoreClient methods, in order. Test helpers are not logged. */
  readonly requests: StoreRequest[] = [];

  readonly #failNext = new Map<StoreOp, StoreErrorKind[]>();
  readonly #failAfterApply = new Map<StoreWriteOp, number>();

  constructor(options: InMemoryStoreClientOptions = {}) {
    super(options);
    this.latencyMs = options.latencyMs ?? 0;
  }

  // --- StoreClient ---------------------------------------------------------------------------

  /** Every memory below `pathPrefix`, one request per page (100, or 20 with content). */
  async *list(
    storeId: string,
    opts: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } & StoreListingOptions = {},
  ): AsyncIterable<StoreMemory> {
    const withContent = opts.withContent ?? false;
    const logged = { op: 'list' as const, ...(opts.pathPrefix !== undefined && { path: opts.pathPrefix }) };
    for await (const entry of this.#pages(storeId, logged, 0, withContent, opts)) {
      if (entry.kind === 'memory') yield toWire(entry.memory, withContent);
    }
  }

  async get(storeId: string, memoryId: string, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    await this.#request({ op: 'get', storeId, memoryId }, opts.signal);
    return toWire(model(() => this.store(storeId).get(memoryId)), true);
  }

  async create(
    storeId: string,
    input: { path: string; content: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    await this.#request({ op: 'create', storeId, path: input.path }, opts.signal);
    const memory = model(() => this.store(storeId).create(input.path, input.content, API_ACTOR));
    this.#maybeFailAfterApply('create');
    return toWire(memory, true);
  }

  async update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    await this.#request({ op: 'update', storeId, memoryId, ...(input.path !== undefined ? { path: input.path } : {}) }, opts.signal);
    const change = {
      ...(input.content !== undefined && { content: input.content }),
      ...(input.path !== undefined && { path: input.path }),
      ...(input.expected_content_sha256 !== undefined && { expectedSha256: input.expected_content_sha256 }),
    };
    const memory = model(() => this.store(storeId).update(memoryId, change, API_ACTOR));
    this.#maybeFailAfterApply('update');
    return toWire(memory, true);
  }

  async delete(
    storeId: string,
    memoryId: string,
    opts: { expected_content_sha256?: string; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.#request({ op: 'delete', storeId, memoryId }, opts.signal);
    model(() => this.store(storeId).delete(memoryId, opts.expected_content_sha256, API_ACTOR));
    this.#maybeFailAfterApply('delete');
  }

  /**
   * The store's memory versions, newest first, one request per page of 100, or of 20 with
   * `withContent` (see `StoreClient.listVersions`); no page is read once `maxVersions` are
   * yielded. A malformed timestamp is `rejected`, as the service's 400 is.
   */
  async *listVersions(storeId: string, opts: StoreListVersionsOptions = {}): AsyncIterable<StoreMemoryVersion> {
    const query = {
      ...(opts.createdAtGte !== undefined && { createdAtGte: opts.createdAtGte }),
      ...(opts.createdAtLte !== undefined && { createdAtLte: opts.createdAtLte }),
      ...(opts.memoryId !== undefined && { memoryId: opts.memoryId }),
      ...(opts.operation !== undefined && { operation: opts.operation }),
    };
    const withContent = opts.withContent ?? false;
    const maxVersions = opts.maxVersions ?? Infinity;
    if (maxVersions <= 0) return;
    let cursor: string | undefined;
    let yielded = 0;
    for (;;) {
      opts.onPage?.();
      await this.#request(
        { op: 'listVersions', storeId, ...(opts.memoryId !== undefined && { memoryId: opts.memoryId }), ...(withContent && { withContent: true as const }) },
        opts.signal,
      );
      // Read page by page, as the service does: a version recorded meanwhile may or may not show.
      const page = model(() => this.store(storeId).listVersions(query, cursor, withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE));
      for (const version of page.versions) {
        yield toStoreVersion(version, withContent);
        if (++yielded >= maxVersions) return;
      }
      if (page.nextPage === null) return;
      cursor = page.nextPage;
    }
  }

  /**
   * One level of a folder, with the service's `depth=1` roll-ups and paging; each page is one
   * `list` request with `depth: 1`. Sorted by path, though the contract promises no order.
   */
  async *listFolder(storeId: string, opts: StoreListFolderOptions = {}): AsyncIterable<StoreFolderEntry> {
    const withContent = opts.withContent ?? false;
    // The root, `/`, logs as no prefix: the whole store's first level.
    const prefix = opts.pathPrefix === '/' ? undefined : opts.pathPrefix;
    const logged = { op: 'list' as const, ...(prefix !== undefined && { path: prefix }), depth: 1 };
    for await (const entry of this.#pages(storeId, logged, 1, withContent, opts, opts.pathPrefix)) {
      yield entry.kind === 'memory'
        ? { type: 'memory', memory: toWire(entry.memory, withContent) }
        : { type: 'prefix', path: entry.path };
    }
  }

  // --- Fault injection -----------------------------------------------------------------------

  /** The next `times` requests of `op` fail with `kind` and change nothing. */
  failNext(op: StoreOp, kind: StoreErrorKind, times = 1): void {
    const queue = this.#failNext.get(op) ?? [];
    for (let i = 0; i < times; i++) queue.push(kind);
    this.#failNext.set(op, queue);
  }

  /** The next `times` requests of `op` are applied, then answered `unavailable`: outcome unknown to the caller. */
  failAfterApply(op: StoreWriteOp, times = 1): void {
    this.#failAfterApply.set(op, (this.#failAfterApply.get(op) ?? 0) + times);
  }

  /** Requests of `op` sent so far, optionally to one store. */
  count(op: StoreOp, storeId?: string): number {
    return this.requests.filter((r) => r.op === op && (storeId === undefined || r.storeId === storeId)).length;
  }

  // --- Internals -----------------------------------------------------------------------------

  /**
   * The memory listing at `depth`, page by page: one logged request each (told to `onPage`),
   * read live from the store as the service reads it. `pathPrefix` `/` is the whole store.
   */
  async *#pages(
    storeId: string,
    logged: Omit<StoreRequest, 'at' | 'storeId'>,
    depth: number,
    withContent: boolean,
    opts: { signal?: AbortSignal } & StoreListingOptions,
    pathPrefix = logged.path,
  ): AsyncIterable<ReturnType<MemoryStore['list']>['entries'][number]> {
    const limit = withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE;
    let page: string | undefined;
    for (;;) {
      opts.onPage?.();
      await this.#request({ ...logged, storeId }, opts.signal);
      const result = model(() =>
        this.store(storeId).list({ ...(pathPrefix !== undefined && { pathPrefix }), depth, limit, ...(page !== undefined && { page }) }),
      );
      yield* result.entries;
      if (result.nextPage === null) return;
      page = result.nextPage;
    }
  }

  /** Logs the request, waits out the latency, then fails it if a fault is queued. */
  async #request(request: Omit<StoreRequest, 'at'>, signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    this.requests.push({ ...request, at: this.env.nowMs() });
    await delay(this.latencyMs, signal);
    const kind = this.#failNext.get(request.op)?.shift();
    if (kind !== undefined) throw storeError(kind, `injected ${kind} on ${request.op}`);
  }

  #maybeFailAfterApply(op: StoreWriteOp): void {
    const remaining = this.#failAfterApply.get(op) ?? 0;
    if (remaining === 0) return;
    this.#failAfterApply.set(op, remaining - 1);
    throw storeError('unavailable', `injected unavailable after ${op} was applied`);
  }
}

/** Runs one step of the model; its refusal becomes the StoreError the real client would throw. */
function model<T>(step: () => T): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof ServiceRefusal) throw storeError(KIND[err.code], err.message);
    throw err;
  }
}

function storeError(kind: StoreErrorKind, message: string): StoreError {
  return new StoreError(kind, message, { status: STATUS[kind] });
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new StoreError('unavailable', 'request aborted', { cause: signal.reason });
}

/** Waits `ms`, or rejects with `unavailable` as soon as `signal` aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StoreError('unavailable', 'request aborted', { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function toStoreVersion(version: VersionRecord, withContent: boolean): StoreMemoryVersion {
  return {
    id: version.id,
    memory_id: version.memory_id,
    operation: version.operation,
    path: version.path,
    content_sha256: version.content_sha256,
    ...(typeof version.content_size_bytes === 'number' && { content_size_bytes: version.content_size_bytes }),
    created_at: version.created_at,
    redacted_at: version.redacted_at,
    ...(withContent && { content: version.content }),
  };
}

function toWire(memory: MemoryRecord, withContent: boolean): StoreMemory {
  const wire: StoreMemory = {
    id: memory.id,
    path: memory.path,
    content_sha256: memory.content_sha256,
    content_size_bytes: memory.content_size_bytes,
    updated_at: memory.updated_at,
    memory_version_id: memory.memory_version_id,
  };
  if (withContent) wire.content = memory.content;
  return wire;
}
