import { randomBytes } from 'node:crypto';
import {
  LIST_PAGE_SIZE,
  LIST_PAGE_SIZE_WITH_CONTENT,
  MAX_MEMORY_BYTES,
  StoreError,
  memoryPathProblem,
  sha256Hex,
} from '@memory-mounter/core';
import type {
  StoreClient,
  StoreErrorKind,
  StoreFolderEntry,
  StoreListFolderOptions,
  StoreListVersionsOptions,
  StoreMemory,
  StoreMemoryVersion,
} from '@memory-mounter/core';
import { listEntries, pageAfter } from './memory-api-server/listing.js';
import {
  VersionLog,
  VersionQueryError,
  parseInstant,
  parseOperation,
  type VersionFilter,
  type VersionOperation,
  type VersionRecord,
} from './memory-versions.js';

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
  /** `now()` when the request was sent. */
  at: number;
}

export interface InMemoryStoreClientOptions {
  /** Delay before each request is answered; abortable. Default 0. */
  latencyMs?: number;
  /**
   * Clock for `StoreRequest.at` and for each memory version's `created_at`; default
   * `Date.now`. A `ManualClock`'s `now` lets a test stop it (versions that tie) or move it back.
   */
  now?: () => number;
  /** Initial `versionRetentionMs`. */
  versionRetentionMs?: number;
}

interface StoredMemory {
  id: string;
  path: string;
  content: string;
  /** The version holding the memory as it stands, and when it was written: the wire's `memory_version_id` and `updated_at`. */
  versionId?: string;
  updatedAt?: string;
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

const utf8 = new TextEncoder();

/**
 * A fake memory-store service in memory, for tests: several stores, each a set of memories with
 * the real API's ids, hashes, validation and error kinds, plus a request log, latency and fault
 * injection.
 *
 * It implements the optional `listVersions` and `listFolder` too, by the same rules as
 * `MemoryApiServer` (shared code: memory-versions.ts, memory-api-server/listing.ts): every write,
 * through the StoreClient or a helper, records a memory version stamped by `now`; tests can
 * redact a version (`redactVersion`) and set a retention period (`versionRetentionMs`).
 *
 * A store id it has never seen is an empty store, created on first use: tests need not declare
 * their stores, and a listing of a fresh store is simply empty (the real API would say 404 for an
 * id that does not exist; inject `failNext('list', 'not_found')` to test that).
 *
 * Every object returned is a fresh copy; mutating it never changes the store.
 */
export class InMemoryStoreClient implements StoreClient {
  /** Delay before each request is answered. Settable between calls. */
  latencyMs: number;
  /** Every request sent through the StoreClient methods, in order. Test helpers are not logged. */
  readonly requests: StoreRequest[] = [];
  /**
   * How long a memory version is kept, in ms of the clock: an older one is gone from
   * `listVersions`, for good. `undefined` (the default) keeps every one.
   */
  versionRetentionMs: number | undefined;

  readonly #stores = new Map<string, Map<string, StoredMemory>>();
  readonly #versions = new Map<string, VersionLog>();
  readonly #failNext = new Map<StoreOp, StoreErrorKind[]>();
  readonly #failAfterApply = new Map<StoreWriteOp, number>();
  readonly #now: () => number;

  constructor(options: InMemoryStoreClientOptions = {}) {
    this.latencyMs = options.latencyMs ?? 0;
    this.#now = options.now ?? Date.now;
    this.versionRetentionMs = options.versionRetentionMs;
  }

  // --- StoreClient ---------------------------------------------------------------------------

  async *list(
    storeId: string,
    opts: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } = {},
  ): AsyncIterable<StoreMemory> {
    const pageSize = opts.withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE;
    let matching: StoredMemory[] | undefined;
    for (let offset = 0; matching === undefined || offset < matching.length; offset += pageSize) {
      await this.#request({ op: 'list', storeId, ...(opts.pathPrefix ? { path: opts.pathPrefix } : {}) }, opts.signal);
      // Read when the first page is answered; later pages page through that same view.
      matching ??= sortedByPath(this.#store(storeId)).filter((m) => m.path.startsWith(opts.pathPrefix ?? ''));
      for (const memory of matching.slice(offset, offset + pageSize)) {
        yield toWire(memory, opts.withContent ?? false);
      }
    }
  }

  async get(storeId: string, memoryId: string, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    await this.#request({ op: 'get', storeId, memoryId }, opts.signal);
    return toWire(this.#existing(storeId, memoryId), true);
  }

  async create(
    storeId: string,
    input: { path: string; content: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    await this.#request({ op: 'create', storeId, path: input.path }, opts.signal);
    validatePath(input.path);
    validateContent(input.content);
    this.#refuseTakenPath(storeId, input.path);
    const memory: StoredMemory = { id: newMemoryId(), path: input.path, content: input.content };
    this.#store(storeId).set(memory.id, memory);
    this.#record(storeId, memory, 'created');
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
    const memory = this.#existing(storeId, memoryId);
    if (input.content === undefined && input.path === undefined) {
      throw storeError('rejected', 'an update needs content or path');
    }
    if (input.path !== undefined) validatePath(input.path);
    if (input.content !== undefined) validateContent(input.content);
    // Like the service: an update asking for exactly what the memory already holds succeeds
    // whatever its precondition says, so a retried write that already landed is harmless.
    const noChange = (input.content ?? memory.content) === memory.content && (input.path ?? memory.path) === memory.path;
    if (noChange) return toWire(memory, true);
    checkPrecondition(memory, input.expected_content_sha256);
    if (input.path !== undefined && input.path !== memory.path) this.#refuseTakenPath(storeId, input.path, memoryId);
    if (input.path !== undefined) memory.path = input.path;
    if (input.content !== undefined) memory.content = input.content;
    this.#record(storeId, memory, 'modified');
    this.#maybeFailAfterApply('update');
    return toWire(memory, true);
  }

  async delete(
    storeId: string,
    memoryId: string,
    opts: { expected_content_sha256?: string; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.#request({ op: 'delete', storeId, memoryId }, opts.signal);
    const memory = this.#existing(storeId, memoryId);
    checkPrecondition(memory, opts.expected_content_sha256);
    this.#store(storeId).delete(memoryId);
    this.#record(storeId, memory, 'deleted');
    this.#maybeFailAfterApply('delete');
  }

  /**
   * The store's memory versions, newest first, one request per page of 100 (see
   * `StoreClient.listVersions`). A malformed timestamp is `rejected`, as the service's 400 is.
   */
  async *listVersions(storeId: string, opts: StoreListVersionsOptions = {}): AsyncIterable<StoreMemoryVersion> {
    let filter: VersionFilter | undefined;
    let cursor: string | undefined;
    for (;;) {
      await this.#request({ op: 'listVersions', storeId, ...(opts.memoryId !== undefined && { memoryId: opts.memoryId }) }, opts.signal);
      filter ??= versionFilter(opts);
      // Read page by page, as the service does: a version recorded meanwhile may or may not show.
      const page = this.#log(storeId).page(filter, cursor, LIST_PAGE_SIZE);
      for (const version of page.versions) yield toStoreVersion(version);
      if (page.nextPage === null) return;
      cursor = page.nextPage;
    }
  }

  /**
   * One level of a folder, with the service's `depth=1` roll-ups and paging (the emulator's own
   * listing rules); each page is one `list` request with `depth: 1`. Sorted by path, though the
   * contract promises no order.
   */
  async *listFolder(storeId: string, opts: StoreListFolderOptions = {}): AsyncIterable<StoreFolderEntry> {
    const withContent = opts.withContent ?? false;
    const pathPrefix = opts.pathPrefix === undefined || opts.pathPrefix === '/' ? undefined : opts.pathPrefix;
    const pageSize = withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE;
    let cursor: string | undefined;
    for (;;) {
      await this.#request({ op: 'list', storeId, ...(pathPrefix !== undefined && { path: pathPrefix }), depth: 1 }, opts.signal);
      if (pathPrefix !== undefined && !(pathPrefix.startsWith('/') && pathPrefix.endsWith('/'))) {
        throw storeError('rejected', `path_prefix must start and end with /, not ${JSON.stringify(pathPrefix)}`);
      }
      const entries = listEntries([...this.#store(storeId).values()], { ...(pathPrefix !== undefined && { pathPrefix }), depth: 1 });
      const page = pageAfter(entries, cursor, pageSize);
      for (const entry of page.entries) {
        yield entry.kind === 'memory'
          ? { type: 'memory', memory: toWire(entry.memory, withContent) }
          : { type: 'prefix', path: entry.path };
      }
      if (page.nextPage === null) return;
      cursor = page.nextPage;
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

  // --- Test helpers: no log, no latency, no faults, no validation -----------------------------

  /** Requests of `op` sent so far, optionally to one store. */
  count(op: StoreOp, storeId?: string): number {
    return this.requests.filter((r) => r.op === op && (storeId === undefined || r.storeId === storeId)).length;
  }

  /** Adds memories as if another writer had created them. Unvalidated, so tests can plant bad paths. */
  seed(storeId: string, files: Record<string, string>): StoreMemory[] {
    return Object.entries(files).map(([path, content]) => this.putAs(storeId, path, content));
  }

  /**
   * Another writer creates or overwrites the memory at `path` (its id is kept on overwrite).
   * Records a version, except for an overwrite with the same content.
   */
  putAs(storeId: string, path: string, content: string): StoreMemory {
    const existing = this.#byPath(storeId, path);
    if (existing) {
      if (existing.content !== content) {
        existing.content = content;
        this.#record(storeId, existing, 'modified');
      }
      return toWire(existing, true);
    }
    const memory: StoredMemory = { id: newMemoryId(), path, content };
    this.#store(storeId).set(memory.id, memory);
    this.#record(storeId, memory, 'created');
    return toWire(memory, true);
  }

  /** Another writer renames a memory, keeping its id. Returns false when `from` is absent. */
  renameAs(storeId: string, from: string, to: string): boolean {
    const memory = this.#byPath(storeId, from);
    if (!memory) return false;
    // The service refuses this too; a test that wants it means removeAs(to) first.
    if (from === to) return true;
    if (this.#byPath(storeId, to)) throw new Error(`renameAs: ${to} is already taken in ${storeId}`);
    memory.path = to;
    this.#record(storeId, memory, 'modified');
    return true;
  }

  /** Another writer deletes the memory at `path`. Returns false when it was absent. */
  removeAs(storeId: string, path: string): boolean {
    const memory = this.#byPath(storeId, path);
    if (!memory) return false;
    this.#store(storeId).delete(memory.id);
    this.#record(storeId, memory, 'deleted');
    return true;
  }

  /** Every retained version of the store, newest first (content kept). */
  versions(storeId: string): VersionRecord[] {
    return this.#log(storeId).all();
  }

  /**
   * Redacts a version as a user would: its path, content and sha become `null` and
   * `redacted_at` is set. Throws when the store has no such version (any more).
   */
  redactVersion(storeId: string, versionId: string): VersionRecord {
    const redacted = this.#log(storeId).redact(versionId);
    if (!redacted) throw new Error(`no memory version ${versionId} in store ${storeId}`);
    return redacted;
  }

  /** path -> content, sorted by path. */
  snapshot(storeId: string): Record<string, string> {
    return Object.fromEntries(sortedByPath(this.#store(storeId)).map((m) => [m.path, m.content]));
  }

  /** Every memory of the store with content, sorted by path. */
  memories(storeId: string): StoreMemory[] {
    return sortedByPath(this.#store(storeId)).map((m) => toWire(m, true));
  }

  // --- Internals -----------------------------------------------------------------------------

  /** Logs the request, waits out the latency, then fails it if a fault is queued. */
  async #request(request: Omit<StoreRequest, 'at'>, signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    this.requests.push({ ...request, at: this.#now() });
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

  /** Records a version of `memory` as it now stands (as it stood, for a delete). */
  #record(storeId: string, memory: StoredMemory, operation: VersionOperation): void {
    const version = this.#log(storeId).record(memory.id, operation, memory);
    memory.versionId = version.id;
    memory.updatedAt = version.created_at;
  }

  #log(storeId: string): VersionLog {
    let log = this.#versions.get(storeId);
    if (!log) {
      log = new VersionLog({ nowMs: this.#now, retentionMs: () => this.versionRetentionMs });
      this.#versions.set(storeId, log);
    }
    return log;
  }

  #store(storeId: string): Map<string, StoredMemory> {
    let store = this.#stores.get(storeId);
    if (!store) this.#stores.set(storeId, (store = new Map()));
    return store;
  }

  #existing(storeId: string, memoryId: string): StoredMemory {
    const memory = this.#store(storeId).get(memoryId);
    if (!memory) throw storeError('not_found', `memory ${memoryId} not found in ${storeId}`);
    return memory;
  }

  #byPath(storeId: string, path: string): StoredMemory | undefined {
    for (const memory of this.#store(storeId).values()) if (memory.path === path) return memory;
    return undefined;
  }

  /** The service refuses a path equal to another memory's, or one that is a folder of it or inside it. */
  #refuseTakenPath(storeId: string, path: string, ownId?: string): void {
    for (const other of this.#store(storeId).values()) {
      if (other.id === ownId) continue;
      const overlaps = other.path === path || other.path.startsWith(`${path}/`) || path.startsWith(`${other.path}/`);
      if (overlaps) throw storeError('path_conflict', `${path} overlaps the memory at ${other.path}`);
    }
  }
}

function storeError(kind: StoreErrorKind, message: string, status = STATUS[kind]): StoreError {
  return new StoreError(kind, message, { status });
}

function validatePath(path: string): void {
  const problem = memoryPathProblem(path);
  if (problem) throw storeError('rejected', `path ${JSON.stringify(path)} ${problem}`);
}

function validateContent(content: string): void {
  const size = utf8.encode(content).length;
  if (size > MAX_MEMORY_BYTES) throw storeError('rejected', `content is ${size} bytes, over ${MAX_MEMORY_BYTES}`, 413);
}

function checkPrecondition(memory: StoredMemory, expected: string | undefined): void {
  if (expected !== undefined && expected !== sha256Hex(memory.content)) {
    throw storeError('precondition_failed', `memory ${memory.id} no longer has content_sha256 ${expected}`);
  }
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

/** The listing filter, checked as the service checks its query; a bad one is `rejected`. */
function versionFilter(opts: StoreListVersionsOptions): VersionFilter {
  try {
    return {
      ...(opts.createdAtGte !== undefined && { createdAtGte: parseInstant('createdAtGte', opts.createdAtGte) }),
      ...(opts.createdAtLte !== undefined && { createdAtLte: parseInstant('createdAtLte', opts.createdAtLte) }),
      ...(opts.memoryId !== undefined && { memoryId: opts.memoryId }),
      ...(opts.operation !== undefined && { operation: parseOperation('operation', opts.operation) }),
    };
  } catch (err) {
    if (err instanceof VersionQueryError) throw storeError('rejected', err.message);
    throw err;
  }
}

function toStoreVersion(version: VersionRecord): StoreMemoryVersion {
  return {
    id: version.id,
    memory_id: version.memory_id,
    operation: version.operation,
    path: version.path,
    content_sha256: version.content_sha256,
    created_at: version.created_at,
    redacted_at: version.redacted_at,
  };
}

function toWire(memory: StoredMemory, withContent: boolean): StoreMemory {
  const wire: StoreMemory = {
    id: memory.id,
    path: memory.path,
    content_sha256: sha256Hex(memory.content),
    content_size_bytes: utf8.encode(memory.content).length,
  };
  if (memory.updatedAt !== undefined) wire.updated_at = memory.updatedAt;
  if (memory.versionId !== undefined) wire.memory_version_id = memory.versionId;
  if (withContent) wire.content = memory.content;
  return wire;
}

function sortedByPath(store: Map<string, StoredMemory>): StoredMemory[] {
  // Code-unit order, like a byte-wise sort for the ASCII paths tests use.
  return [...store.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function newMemoryId(): string {
  return `mem_${randomBytes(12).toString('hex')}`;
}
