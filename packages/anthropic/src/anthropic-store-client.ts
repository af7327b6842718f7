import type Anthropic from '@anthropic-ai/sdk';
import {
  LIST_PAGE_SIZE,
  LIST_PAGE_SIZE_WITH_CONTENT,
  StoreError,
  type StoreClient,
  type StoreFolderEntry,
  type StoreListFolderOptions,
  type StoreListingOptions,
  type StoreListVersionsOptions,
  type StoreMemory,
  type StoreMemoryVersion,
} from '@memory-mounter/core';
import { storeErrorFromSdk } from './store-error-mapping.js';

type MemoriesResource = Anthropic['beta']['memoryStores']['memories'];
type VersionsResource = Anthropic['beta']['memoryStores']['memoryVersions'];
type SdkMemory = Awaited<ReturnType<MemoriesResource['retrieve']>>;
type SdkVersion = Awaited<ReturnType<VersionsResource['retrieve']>>;

/** The part of an SDK cursor page this class walks: its items, and the way to the next one. */
interface SdkPage<Item> {
  data: Item[];
  hasNextPage(): boolean;
  getNextPage(): Promise<SdkPage<Item>>;
}

export interface AnthropicStoreClientOptions {
  /**
   * The host's SDK client: its credentials, base URL, `timeout` and the rest are used as given,
   * except `maxRetries`, which is 0 for every call made here (see the class comment).
   */
  client: Anthropic;
}

/**
 * The StoreClient over the real memory-store API, `client.beta.memoryStores.memories.*` and
 * `client.beta.memoryStores.memoryVersions.list`.
 *
 * Every method throws only StoreError (its `kind` from `storeErrorFromSdk`); the SDK error is its
 * `cause`. Listings ask for the largest page the service allows (100 items, 20 with content).
 * `list` never passes `depth`, so the service sends no `memory_prefix` roll-ups (any that
 * arrive anyway are skipped); `listFolder` passes `depth=1` and yields them.
 *
 * One request per call (SPEC 6.6): every call, each page of a listing included, goes through a
 * copy of the host's client with the SDK's own retries off. The engine is the one owner of
 * retries: it repeats what is safe to repeat, within its deadlines, and never a `create`. Left
 * on, the SDK's retries (two by default) would run under the engine's, so a `create` the engine
 * sends once could be sent three times, and an outage would cost three requests per attempt.
 */
export class AnthropicStoreClient implements StoreClient {
  readonly #memories: MemoriesResource;
  readonly #versions: VersionsResource;

  constructor(options: AnthropicStoreClientOptions) {
    // A page's next page is fetched by the client that fetched it: this copy, retries off too.
    const client = options.client.withOptions({ maxRetries: 0 });
    this.#memories = client.beta.memoryStores.memories;
    this.#versions = client.beta.memoryStores.memoryVersions;
  }

  async *list(
    storeId: string,
    opts: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } & StoreListingOptions = {},
  ): AsyncIterable<StoreMemory> {
    const { withContent = false, pathPrefix, signal, onPage } = opts;
    const params = {
      view: withContent ? ('full' as const) : ('basic' as const),
      limit: withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE,
      // An empty prefix is the whole store; the service would refuse it as a prefix.
      ...(pathPrefix ? { path_prefix: pathPrefix } : {}),
    };
    for await (const item of this.#walk('list', signal, onPage, () => this.#memories.list(storeId, params, { signal }))) {
      if (item.type !== 'memory') continue;
      yield toStoreMemory(item, withContent);
    }
  }

  async get(storeId: string, memoryId: string, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    const memory = await this.#call('get', () =>
      this.#memories.retrieve(memoryId, { memory_store_id: storeId, view: 'full' }, { signal: opts.signal }),
    );
    return toStoreMemory(memory, true);
  }

  async create(
    storeId: string,
    input: { path: string; content: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    const memory = await this.#call('create', () =>
      this.#memories.create(
        storeId,
        { path: input.path, content: input.content, view: 'basic' },
        { signal: opts.signal },
      ),
    );
    return toStoreMemory(memory, false);
  }

  async update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    const params = {
      memory_store_id: storeId,
      view: 'basic' as const,
      ...(input.content !== undefined && { content: input.content }),
      ...(input.path !== undefined && { path: input.path }),
      // On the wire an update's precondition is a typed object, unlike delete's query parameter.
      ...(input.expected_content_sha256 !== undefined && {
        precondition: { type: 'content_sha256' as const, content_sha256: input.expected_content_sha256 },
      }),
    };
    const memory = await this.#call('update', () =>
      this.#memories.update(memoryId, params, { signal: opts.signal }),
    );
    return toStoreMemory(memory, false);
  }

  async delete(
    storeId: string,
    memoryId: string,
    opts: { expected_content_sha256?: string; signal?: AbortSignal } = {},
  ): Promise<void> {
    const params = {
      memory_store_id: storeId,
      ...(opts.expected_content_sha256 !== undefined && { expected_content_sha256: opts.expected_content_sha256 }),
    };
    await this.#call('delete', () => this.#memories.delete(memoryId, params, { signal: opts.signal }));
  }

  /**
   * `GET /v1/memory_stores/{id}/memory_versions` with the filters given: basic view (no
   * content), 100 a page, or with `withContent` the full view, 20 a page. The API documents no
   * order, and nothing here relies on one. `maxVersions` stops the walk: no page is asked for
   * once that many versions are yielded.
   */
  async *listVersions(storeId: string, opts: StoreListVersionsOptions = {}): AsyncIterable<StoreMemoryVersion> {
    const { signal, withContent = false, maxVersions = Infinity, onPage } = opts;
    if (maxVersions <= 0) return;
    const params = {
      view: withContent ? ('full' as const) : ('basic' as const),
      limit: withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE,
      ...(opts.createdAtGte !== undefined && { 'created_at[gte]': opts.createdAtGte }),
      ...(opts.createdAtLte !== undefined && { 'created_at[lte]': opts.createdAtLte }),
      ...(opts.memoryId !== undefined && { memory_id: opts.memoryId }),
      ...(opts.operation !== undefined && { operation: opts.operation }),
    };
    const first = () => this.#versions.list(storeId, params, { signal });
    let yielded = 0;
    for await (const version of this.#walk('listVersions', signal, onPage, first)) {
      yield toStoreVersion(version, withContent);
      // Returning here, before #walk asks for the next page, is what saves that request.
      if (++yielded >= maxVersions) return;
    }
  }

  /** The memories list with `depth=1`: one folder's memories and its sub-folders' `memory_prefix` roll-ups. */
  async *listFolder(storeId: string, opts: StoreListFolderOptions = {}): AsyncIterable<StoreFolderEntry> {
    const { withContent = false, pathPrefix, signal, onPage } = opts;
    const params = {
      view: withContent ? ('full' as const) : ('basic' as const),
      limit: withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE,
      depth: 1,
      // The root is the listing without a prefix; a prefix that is not a folder goes to the
      // service as given, which refuses it (rejected).
      ...(pathPrefix !== undefined && pathPrefix !== '' && pathPrefix !== '/' && { path_prefix: pathPrefix }),
    };
    const first = () => this.#memories.list(storeId, params, { signal });
    for await (const item of this.#walk('listFolder', signal, onPage, first)) {
      yield item.type === 'memory_prefix'
        ? { type: 'prefix', path: item.path }
        : { type: 'memory', memory: toStoreMemory(item, withContent) };
    }
  }

  /**
   * Every item of a paged listing. Pages are walked by hand, not with the SDK's `for await`, so
   * that only the SDK's own calls sit inside the error mapping and a consumer's error is never
   * dressed up as a StoreError. `onPage` is told of each page as it is requested: one request
   * each, the SDK's retries being off.
   */
  async *#walk<Item>(
    operation: string,
    signal: AbortSignal | undefined,
    onPage: (() => void) | undefined,
    firstPage: () => PromiseLike<SdkPage<Item>>,
  ): AsyncIterable<Item> {
    onPage?.();
    let page = await this.#call(operation, firstPage);
    for (;;) {
      for (const item of page.data) {
        // The SDK re-checks the signal before each page; this stops a long page mid-way too.
        throwIfAborted(signal, operation);
        yield item;
      }
      if (!page.hasNextPage()) return;
      const current = page;
      onPage?.();
      page = await this.#call(operation, () => current.getNextPage());
    }
  }

  /** Runs one SDK call; whatever it throws leaves as a StoreError. */
  async #call<T>(operation: string, request: () => PromiseLike<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw storeErrorFromSdk(err, operation);
    }
  }
}

/** The wire memory as a StoreMemory; `content` only when the caller asked for it. */
function toStoreMemory(memory: SdkMemory, withContent: boolean): StoreMemory {
  const out: StoreMemory = {
    id: memory.id,
    path: memory.path,
    content_sha256: memory.content_sha256,
    content_size_bytes: memory.content_size_bytes,
  };
  // Where the change feed starts after a listing, and which version it already holds.
  if (typeof memory.updated_at === 'string') out.updated_at = memory.updated_at;
  if (typeof memory.memory_version_id === 'string') out.memory_version_id = memory.memory_version_id;
  if (withContent) out.content = memory.content ?? null;
  return out;
}

function toStoreVersion(version: SdkVersion, withContent: boolean): StoreMemoryVersion {
  const out: StoreMemoryVersion = {
    id: version.id,
    memory_id: version.memory_id,
    operation: version.operation,
    // Optional in the SDK's type; absent is taken as the null the service documents.
    path: version.path ?? null,
    content_sha256: version.content_sha256 ?? null,
    created_at: version.created_at,
    redacted_at: version.redacted_at ?? null,
  };
  if (typeof version.content_size_bytes === 'number') out.content_size_bytes = version.content_size_bytes;
  if (withContent) out.content = version.content ?? null;
  return out;
}

function throwIfAborted(signal: AbortSignal | undefined, operation: string): void {
  if (!signal?.aborted) return;
  throw new StoreError('unavailable', `memory store ${operation} failed (unavailable): aborted`, {
    cause: signal.reason,
  });
}
