import { randomBytes } from 'node:crypto';
import { MemoryStore, OTHER_WRITER, type AlreadyAppliedUpdate, type MemoryRecord, type StoreEnvironment } from './memory-store.js';
import type { VersionRecord } from './memory-versions.js';

export interface MemoryServiceOptions {
  /**
   * Clock for `created_at`/`updated_at` and each memory version's `created_at`, in ms; default
   * `Date.now`. A `ManualClock`'s `now` lets a test stop it (versions that tie) or move it back.
   */
  now?: () => number;
  /** Initial `versionRetentionMs`. */
  versionRetentionMs?: number;
  /** Initial `alreadyAppliedUpdate`. */
  alreadyAppliedUpdate?: AlreadyAppliedUpdate;
}


/**
 * The modelled service: its stores (each a `MemoryStore`, created empty on first use) and the
 * test helpers that act on them directly, as another writer would. Both fakes extend it, so they
 * share one set of helpers with one meaning: `InMemoryStoreClient` answers as a StoreClient,
 * `MemoryApiServer` over HTTP, and what a helper does to a store is the same on either.
 *
 * Helpers apply the service's rules (a bad path, an overlap, content over the limit throw a
 * `ServiceRefusal`), except `plantMemory`, which exists to break them. They bypass each fake's
 * transport: no request is logged, no latency, no injected fault. Every record they return is
 * a snapshot: a later change to the store does not show in it, nor does mutating it change the
 * store.
 */
export class MemoryService {
  /**
   * How long a memory version is kept, in ms of the clock: an older one is gone from the change
   * feed, for good. `undefined` (the default) keeps every one.
   */
  versionRetentionMs: number | undefined;
  /** See `AlreadyAppliedUpdate`. Default `'succeeds'`. Settable between calls. */
  alreadyAppliedUpdate: AlreadyAppliedUpdate;

  readonly #stores = new Map<string, MemoryStore>();
  /** Fresh ids and timestamps, shared by every store. */
  protected readonly env: StoreEnvironment;

  constructor(options: MemoryServiceOptions = {}) {
    this.versionRetentionMs = options.versionRetentionMs;
    this.alreadyAppliedUpdate = options.alreadyAppliedUpdate ?? 'succeeds';
    const now = options.now ?? Date.now;
    this.env = {
      newId: randomId,
      now: () => new Date(now()).toISOString(),
      nowMs: now,
      retentionMs: () => this.versionRetentionMs,
      alreadyAppliedUpdate: () => this.alreadyAppliedUpdate,
    };
  }

  /** The store with this id, created empty if it does not exist yet. */
  store(storeId: string): MemoryStore {
    let store = this.#stores.get(storeId);
    if (!store) {
      store = new MemoryStore(storeId, this.env);
      this.#stores.set(storeId, store);
    }
    return store;
  }

  /** Whether a store with this id exists (a helper or a request made it). */
  hasStore(storeId: string): boolean {
    return this.#stores.has(storeId);
  }

  /** Makes an empty store with this id, as creating one in the Console would; a no-op when it exists. */
  createStore(storeId: string): MemoryStore {
    return this.store(storeId);
  }

  /** Creates one memory per entry, by the service's rules (a bad path or an overlap throws). */
  seed(storeId: string, files: Record<string, string>): MemoryRecord[] {
    const store = this.store(storeId);
    return Object.entries(files).map(([path, content]) => ({ ...store.create(path, content) }));
  }

  /**
   * Another writer sets `path` to `content`: an update when a memory is there (its id kept; no
   * version when the content is the same), else a create.
   */
  writeMemory(storeId: string, path: string, content: string): MemoryRecord {
    const store = this.store(storeId);
    const existing = store.atPath(path);
    return { ...(existing ? store.update(existing.id, { content }) : store.create(path, content)) };
  }

  /** Another writer renames the memory at `from` to `to`; the id and content stay. Throws when `from` is absent. */
  renameMemory(storeId: string, from: string, to: string): MemoryRecord {
    const store = this.store(storeId);
    return { ...store.update(this.#idAt(store, from), { path: to }) };
  }

  /** Another writer deletes the memory at `path`. Throws when it is absent. */
  deleteMemory(storeId: string, path: string): MemoryRecord {
    const store = this.store(storeId);
    return { ...store.delete(this.#idAt(store, path)) };
  }

  /**
   * Puts a memory the service would refuse: a bad path, one overlapping another memory, content
   * over the limit (see `MemoryStore.plant`). For tests of a store the engine cannot trust.
   */
  plantMemory(storeId: string, path: string, content: string): MemoryRecord {
    return { ...this.store(storeId).plant(path, content) };
  }

  /** `{ path: content }` of every memory in the store, sorted by path. */
  snapshot(storeId: string): Record<string, string> {
    return Object.fromEntries(this.memories(storeId).map((memory) => [memory.path, memory.content]));
  }

  /** Every memory of the store, sorted by path. */
  memories(storeId: string): MemoryRecord[] {
    // Reading does not make the store: an unknown one stays unknown (the emulator 404s it).
    const store = this.#stores.get(storeId);
    if (!store) return [];
    // Code-unit order, like a byte-wise sort for the ASCII paths tests use.
    return store
      .all()
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      .map((memory) => ({ ...memory }));
  }

  /** Every retained version of the store, newest first (content kept). */
  versions(storeId: string): VersionRecord[] {
    return this.#stores.get(storeId)?.versions.all() ?? [];
  }

  /**
   * Redacts a version as a user would in the Console: its path, content, size and sha become
   * `null` and `redacted_at` is set. Throws when the store has no such version (any more).
   */
  redactVersion(storeId: string, versionId: string): VersionRecord {
    return this.store(storeId).redactVersion(versionId, OTHER_WRITER);
  }

  #idAt(store: MemoryStore, path: string): string {
    const memory = store.atPath(path);
    if (!memory) throw new Error(`no memory at ${path} in store ${store.storeId}`);
    return memory.id;
  }
}

export function randomId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
