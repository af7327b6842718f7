import { MAX_MEMORY_BYTES, memoryPathProblem, sha256Hex } from '@memory-mounter/core';
import { VersionLog, type VersionActor, type VersionClock } from '../memory-versions.js';
import { invalidRequest, notFound, pathConflict, preconditionFailed } from './api-error.js';

/** One memory as the emulator holds it: the wire fields, content always present. */
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
 * by every store of one server.
 */
export interface StoreEnvironment extends VersionClock {
  newId(prefix: 'mem'): string;
  /** RFC 3339; the same instant as `nowMs()`. */
  now(): string;
}

/** The author the emulator records for a change made through HTTP. */
export const API_ACTOR: VersionActor = { type: 'api_actor', api_key_id: 'apikey_emulated' };
/** The author it records for a change made through a test helper ("another writer"). */
export const OTHER_WRITER: VersionActor = { type: 'user_actor', user_id: 'user_emulated' };

export interface MemoryChange {
  content?: string;
  path?: string;
  /** The update's `precondition.content_sha256`, or the delete's `expected_content_sha256`. */
  expectedSha256?: string;
}

// A lone surrogate has no UTF-8 form, so its sha and size would be undefined.
const LONE_SURROGATE = /\p{Cs}/u;
const utf8 = new TextEncoder();

/**
 * The memories of one store and the service's rules for changing them. No HTTP here: every
 * refusal is an ApiError carrying the status and error type the service would send.
 *
 * Invariants: `byPath` and `byId` hold the same records; no two paths are equal or overlap
 * (one an ancestor folder of the other), as the service guarantees. Every change that succeeds
 * records exactly one version in `versions`, and a memory's `memory_version_id` is its latest.
 */
export class MemoryStore {
  readonly #byId = new Map<string, MemoryRecord>();
  readonly #byPath = new Map<string, MemoryRecord>();
  /**
   * The store's memory versions (its `memory_versions` endpoints); tests read them through
   * `MemoryApiServer.versions`.
   */
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
    this.#byId.set(memory.id, memory);
    this.#byPath.set(path, memory);
    return memory;
  }

  /**
   * Content and/or rename, checked in this order: request shape, existence, precondition,
   * path conflict. A precondition that fails while the memory already holds
   * exactly the requested content and path succeeds: that is how a retried, already-applied
   * update stays harmless. A change to nothing writes no new version.
   */
  update(memoryId: string, change: MemoryChange, actor: VersionActor = OTHER_WRITER): MemoryRecord {
    if (change.content === undefined && change.path === undefined) {
      throw invalidRequest('an update needs at least one of content or path');
    }
    if (change.path !== undefined) checkPath(change.path);
    if (change.content !== undefined) checkContent(change.content);
    const memory = this.get(memoryId);
    const content = change.content ?? memory.content;
    const path = change.path ?? memory.path;
    const unchanged = content === memory.content && path === memory.path;
    if (unchanged) return memory;
    if (change.expectedSha256 !== undefined && change.expectedSha256 !== memory.content_sha256) {
      throw preconditionFailed(`memory ${memoryId} does not have content_sha256 ${change.expectedSha256}`);
    }
    if (path !== memory.path) this.#checkPathFree(path, memoryId);

    const updated: MemoryRecord = {
      ...memory,
      path,
      ...contentFields(content),
      memory_version_id: this.versions.record(memoryId, 'modified', { path, content }, actor).id,
      updated_at: this.env.now(),
    };
    this.#byPath.delete(memory.path);
    this.#byPath.set(path, updated);
    this.#byId.set(memoryId, updated);
    return updated;
  }

  delete(memoryId: string, expectedSha256?: string, actor: VersionActor = OTHER_WRITER): MemoryRecord {
    const memory = this.get(memoryId);
    if (expectedSha256 !== undefined && expectedSha256 !== memory.content_sha256) {
      throw preconditionFailed(`memory ${memoryId} does not have content_sha256 ${expectedSha256}`);
    }
    this.versions.record(memoryId, 'deleted', memory, actor);
    this.#byId.delete(memoryId);
    this.#byPath.delete(memory.path);
    return memory;
  }

  /** Refuses `path` when another memory holds it, an ancestor folder of it, or anything below it. */
  #checkPathFree(path: string, movingId: string | undefined): void {
    const blocker = this.#blockerOf(path);
    if (blocker && blocker.id !== movingId) throw pathConflict(path, blocker.path, blocker.id);
  }

  #blockerOf(path: string): MemoryRecord | undefined {
    const exact = this.#byPath.get(path);
    if (exact) return exact;
    for (let cut = path.indexOf('/', 1); cut !== -1; cut = path.indexOf('/', cut + 1)) {
      const ancestor = this.#byPath.get(path.slice(0, cut));
      if (ancestor) return ancestor;
    }
    const folder = `${path}/`;
    for (const [other, memory] of this.#byPath) if (other.startsWith(folder)) return memory;
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
