import { MAX_MEMORY_BYTES, memoryPathProblem, sha256Hex } from '@memory-mounter/core';
import { listEntries, pageAfter, type ListEntry } from './listing.js';
import {
  parseInstant,
  parseOperation,
  VersionLog,
  VersionQueryError,
  type VersionActor,
  type VersionClock,
  type VersionFilter,
  type VersionRecord,
} from './memory-versions.js';
import { invalidRequest, notFound, pathConflict, preconditionFailed } from './refusal.js';

/** One memory as the model holds it: the wire fields, content always present. */
export interface MemoryRecord {
  id: string;
  path: string;
  content: string;
  content_sha256: string;
  content_size_bytes: number;
  memory_version_id: string;
  created_at: string;
  updated_at: string;
}

/**
 * Where a store gets fresh ids and timestamps, and its versions their retention period; shared
 * by every store of one fake.
 */
export interface StoreEnvironment extends VersionClock {
  newId(prefix: 'mem'): string;
  /** RFC 3339; the same instant as `nowMs()`. */
  now(): string;
  /** How an update that asks for what the memory already holds meets a stale precondition. */
  alreadyAppliedUpdate(): AlreadyAppliedUpdate;
}

/**
 * How the service answers a guarded update whose precondition fails while the memory already
 * holds exactly the content and path asked for (a retried update whose first try landed):
 * `'succeeds'`, changing nothing, or `'precondition_failed'`, as for any other stale sha. Which
 * one the real service does is not documented; a client must cope with both.
 */
export type AlreadyAppliedUpdate = 'succeeds' | 'precondition_failed';

/** The author recorded for a change a client made through the API. */
export const API_ACTOR: VersionActor = { type: 'api_actor', api_key_id: 'apikey_emulated' };
/** The author recorded for a change made through a test helper ("another writer"). */
export const OTHER_WRITER: VersionActor = { type: 'user_actor', user_id: 'user_emulated' };

export interface MemoryChange {
  content?: string;
  path?: string;
  /** The update's `precondition.content_sha256` (`expected_content_sha256` to a StoreClient). */
  expectedSha256?: string;
}

/** One listing request: `depth` 0 lists every memory below the prefix, n > 0 rolls up below n segments. */
export interface ListRequest {
  /** Starts and ends with `/`; absent lists the whole store. */
  pathPrefix?: string;
  depth: number;
  /** The previous page's `nextPage`. */
  page?: string;
  limit: number;
}

/** A version listing's filter as a client sends it: timestamps as RFC 3339 text. */
export interface VersionQuery {
  createdAtGte?: string;
  createdAtLte?: string;
  memoryId?: string;
  operation?: string;
}

// A lone surrogate has no UTF-8 form, so its sha and size would be undefined.
const LONE_SURROGATE = /\p{Cs}/u;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const utf8 = new TextEncoder();

/**
 * The memories of one store and the service's rules for changing and listing them: the one
 * model behind both fakes (`InMemoryStoreClient` and `MemoryApiServer`), so they cannot drift.
 * No transport here: every refusal is a `ServiceRefusal` each fake turns into its own error.
 *
 * Invariants: `byPath` and `byId` hold the same records, and a record is never mutated (a change
 * replaces it), so a record handed out stays as it was. Through `create`/`update` no two paths
 * are equal or overlap (one an ancestor folder of the other), as the service guarantees; only
 * `plant` may break that, on purpose. Every change that succeeds records exactly one version,
 * and a memory's `memory_version_id` is its latest.
 */
export class MemoryStore {
  readonly #byId = new Map<string, MemoryRecord>();
  readonly #byPath = new Map<string, MemoryRecord>();
  /** The store's memory versions, its change feed. */
  readonly versions: VersionLog;

  constructor(
    readonly storeId: string,
    private readonly env: StoreEnvironment,
  ) {
    this.versions = new VersionLog(env);
  }

  /** Every memory, in no particular order. */
  all(): MemoryRecord[] {
    return [...this.#byId.values()];
  }

  atPath(path: string): MemoryRecord | undefined {
    return this.#byPath.get(path);
  }

  get(memoryId: string): MemoryRecord {
    const memory = this.#byId.get(memoryId);
    if (!memory) throw notFound(`memory ${memoryId} not found in memory store ${this.storeId}`);
    return memory;
  }

  create(path: string, content: string, actor: VersionActor = OTHER_WRITER): MemoryRecord {
    checkPath(path);
    checkContent(content);
    this.#checkPathFree(path, undefined);
    return this.#insert(path, content, actor);
  }

  /**
   * Content and/or rename, checked in this order: request shape, path and content rules,
   * existence, precondition, path conflict. A precondition that fails while the memory already
   * holds exactly the requested content and path succeeds (that is how a retried,
   * already-applied update stays harmless), unless the environment says the service refuses it
   * (`alreadyAppliedUpdate`). A change to nothing writes no new version.
   */
  update(memoryId: string, change: MemoryChange, actor: VersionActor = OTHER_WRITER): MemoryRecord {
    if (change.content === undefined && change.path === undefined) {
      throw invalidRequest('an update needs at least one of content or path');
    }
    if (change.path !== undefined) checkPath(change.path);
    if (change.content !== undefined) checkContent(change.content);
    if (change.expectedSha256 !== undefined) checkSha('precondition.content_sha256', change.expectedSha256);
    const memory = this.get(memoryId);
    const content = change.content ?? memory.content;
    const path = change.path ?? memory.path;
    if (content === memory.content && path === memory.path) {
      if (this.env.alreadyAppliedUpdate() === 'precondition_failed') checkPrecondition(memory, change.expectedSha256);
      return memory;
    }
    checkPrecondition(memory, change.expectedSha256);
    if (path !== memory.path) this.#checkPathFree(path, memoryId);
    return this.#replace(memory, path, content, actor);
  }

  delete(memoryId: string, expectedSha256?: string, actor: VersionActor = OTHER_WRITER): MemoryRecord {
    if (expectedSha256 !== undefined) checkSha('expected_content_sha256', expectedSha256);
    const memory = this.get(memoryId);
    checkPrecondition(memory, expectedSha256);
    this.versions.record(memoryId, 'deleted', memory, actor);
    this.#byId.delete(memoryId);
    this.#byPath.delete(memory.path);
    return memory;
  }

  /**
   * Puts `content` at `path` with no rule checked: a path the service refuses, one overlapping
   * another memory, content over the limit. For tests of how the engine copes with a store it
   * cannot trust; the real service never holds such a memory. Overwrites the memory at exactly
   * `path` if there is one (no version when the content is the same).
   */
  plant(path: string, content: string, actor: VersionActor = OTHER_WRITER): MemoryRecord {
    const existing = this.#byPath.get(path);
    if (!existing) return this.#insert(path, content, actor);
    return existing.content === content ? existing : this.#replace(existing, path, content, actor);
  }

  /**
   * One page of the listing, sorted by path as the service sorts it: memories, and at `depth` > 0 the
   * roll-ups of deeper folders. Read live, page by page, as the service does.
   */
  list(request: ListRequest): { entries: ListEntry[]; nextPage: string | null } {
    const { pathPrefix } = request;
    if (pathPrefix !== undefined && !(pathPrefix.startsWith('/') && pathPrefix.endsWith('/'))) {
      throw invalidRequest(`path_prefix must start and end with /, not ${JSON.stringify(pathPrefix)}`);
    }
    const entries = listEntries(this.all(), { ...(pathPrefix !== undefined && { pathPrefix }), depth: request.depth });
    return pageAfter(entries, request.page, request.limit);
  }

  /** One page of the retained versions matching `query`, newest first. A malformed query is refused. */
  listVersions(query: VersionQuery, page: string | undefined, limit: number): { versions: VersionRecord[]; nextPage: string | null } {
    try {
      const filter: VersionFilter = {
        ...(query.createdAtGte !== undefined && { createdAtGte: parseInstant('created_at[gte]', query.createdAtGte) }),
        ...(query.createdAtLte !== undefined && { createdAtLte: parseInstant('created_at[lte]', query.createdAtLte) }),
        ...(query.memoryId !== undefined && { memoryId: query.memoryId }),
        ...(query.operation !== undefined && { operation: parseOperation('operation', query.operation) }),
      };
      return this.versions.page(filter, page, limit);
    } catch (err) {
      if (err instanceof VersionQueryError) throw invalidRequest(err.message);
      throw err;
    }
  }

  /** The retained version with this id; `not_found` when there is none (any more). */
  version(versionId: string): VersionRecord {
    return this.#existingVersion(versionId, this.versions.get(versionId));
  }

  /** Redacts a retained version (see `VersionLog.redact`); `not_found` when there is none. */
  redactVersion(versionId: string, actor: VersionActor = OTHER_WRITER): VersionRecord {
    return this.#existingVersion(versionId, this.versions.redact(versionId, actor));
  }

  #existingVersion(versionId: string, version: VersionRecord | undefined): VersionRecord {
    if (!version) throw notFound(`memory version ${versionId} not found in memory store ${this.storeId}`);
    return version;
  }

  #insert(path: string, content: string, actor: VersionActor): MemoryRecord {
    const now = this.env.now();
    const id = this.env.newId('mem');
    const memory: MemoryRecord = {
      id,
      path,
      ...contentFields(content),
      memory_version_id: this.versions.record(id, 'created', { path, content }, actor).id,
      created_at: now,
      updated_at: now,
    };
    this.#byId.set(id, memory);
    this.#byPath.set(path, memory);
    return memory;
  }

  #replace(memory: MemoryRecord, path: string, content: string, actor: VersionActor): MemoryRecord {
    const updated: MemoryRecord = {
      ...memory,
      path,
      ...contentFields(content),
      memory_version_id: this.versions.record(memory.id, 'modified', { path, content }, actor).id,
      updated_at: this.env.now(),
    };
    this.#byPath.delete(memory.path);
    this.#byPath.set(path, updated);
    this.#byId.set(memory.id, updated);
    return updated;
  }

  /** Refuses `path` when another memory holds it, an ancestor folder of it, or anything below it. */
  #checkPathFree(path: string, movingId: string | undefined): void {
    const blocker = this.#blockerOf(path, movingId);
    if (blocker) throw pathConflict(path, blocker.path, blocker.id);
  }

  #blockerOf(path: string, movingId: string | undefined): MemoryRecord | undefined {
    const exact = this.#byPath.get(path);
    if (exact && exact.id !== movingId) return exact;
    for (let cut = path.indexOf('/', 1); cut !== -1; cut = path.indexOf('/', cut + 1)) {
      const ancestor = this.#byPath.get(path.slice(0, cut));
      if (ancestor && ancestor.id !== movingId) return ancestor;
    }
    const folder = `${path}/`;
    for (const [other, memory] of this.#byPath) if (other.startsWith(folder) && memory.id !== movingId) return memory;
    return undefined;
  }
}

function contentFields(content: string): Pick<MemoryRecord, 'content' | 'content_sha256' | 'content_size_bytes'> {
  return { content, content_sha256: sha256Hex(content), content_size_bytes: utf8.encode(content).length };
}

function checkPath(path: string): void {
  const problem = memoryPathProblem(path);
  if (problem) throw invalidRequest(`path ${JSON.stringify(path)} ${problem}`);
}

function checkContent(content: string): void {
  if (LONE_SURROGATE.test(content)) throw invalidRequest('content is not valid UTF-8');
  const size = utf8.encode(content).length;
  if (size > MAX_MEMORY_BYTES) {
    throw invalidRequest(`content is ${size} bytes; a memory holds at most ${MAX_MEMORY_BYTES} bytes`);
  }
}

function checkSha(name: string, value: string): void {
  if (!SHA256_HEX.test(value)) throw invalidRequest(`${name} must be 64 lowercase hexadecimal characters`);
}

function checkPrecondition(memory: MemoryRecord, expected: string | undefined): void {
  if (expected !== undefined && expected !== memory.content_sha256) {
    throw preconditionFailed(`memory ${memory.id} does not have content_sha256 ${expected}`);
  }
}
