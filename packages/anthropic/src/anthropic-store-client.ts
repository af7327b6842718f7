import type Anthropic from '@anthropic-ai/sdk';
import {
  LIST_PAGE_SIZE,
  LIST_PAGE_SIZE_WITH_CONTENT,
  StoreError,
  type StoreClient,
  type StoreMemory,
} from '@memory-mounter/core';
import { storeErrorFromSdk } from './store-error-mapping.js';

type MemoriesResource = Anthropic['beta']['memoryStores']['memories'];
type SdkMemory = Awaited<ReturnType<MemoriesResource['retrieve']>>;

export interface AnthropicStoreClientOptions {
  /**
   * The host's SDK client. Its retry policy (`maxRetries`, `timeout`) is the only retry: this
   * class never repeats a call, so a host that wants none passes `maxRetries: 0`.
   */
  client: Anthropic;
}

/**
 * The StoreClient over the real memory-store API, `client.beta.memoryStores.memories.*`.
 *
 * Every method throws only StoreError (see store-error-mapping.ts); the SDK error is its
 * `cause`. Listings ask for the largest page the service allows (100 memories, 20 with content)
 * and never pass `depth`, so the service sends no `memory_prefix` roll-ups; any that arrive
 * anyway are skipped.
 */
export class AnthropicStoreClient implements StoreClient {
  readonly #memories: MemoriesResource;

  constructor(options: AnthropicStoreClientOptions) {
    this.#memories = options.client.beta.memoryStores.memories;
  }

  async *list(
    storeId: string,
    opts: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } = {},
  ): AsyncIterable<StoreMemory> {
    const { withContent = false, pathPrefix, signal } = opts;
    const params = {
      view: withContent ? ('full' as const) : ('basic' as const),
      limit: withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE,
      // An empty prefix is the whole store; the service would refuse it as a prefix.
      ...(pathPrefix ? { path_prefix: pathPrefix } : {}),
    };
    // Pages are walked by hand, not with the SDK's `for await`, so that only the SDK's own calls
    // sit inside the error mapping and a consumer's error is never dressed up as a StoreError.
    let page = await this.#call('list', () => this.#memories.list(storeId, params, { signal }));
    for (;;) {
      for (const item of page.data) {
        // The SDK re-checks the signal before each page; this stops a long page mid-way too.
        throwIfAborted(signal, 'list');
        if (item.type !== 'memory') continue;
        yield toStoreMemory(item, withContent);
      }
      if (!page.hasNextPage()) return;
      const current = page;
      page = await this.#call('list', () => current.getNextPage());
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
  if (withContent) out.content = memory.content ?? null;
  return out;
}

function throwIfAborted(signal: AbortSignal | undefined, operation: string): void {
  if (!signal?.aborted) return;
  throw new StoreError('unavailable', `memory store ${operation} failed (unavailable): aborted`, {
    cause: signal.reason,
  });
}
