import Anthropic, { APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { StoreError, sha256Hex, type StoreErrorKind } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const STORE = 'memstore_test';
let server: MemoryApiServer;

beforeEach(async () => {
  // A tiny retry-after keeps the SDK's retries fast while still going through its header path.
  server = new MemoryApiServer({ retryAfterSeconds: 0.01 });
  // The store exists, as made in the Console: the emulator, like the service, 404s an unknown one.
  server.createStore(STORE);
  await server.start();
});
afterEach(async () => {
  await server.close();
});

function storeClient(options: { maxRetries?: number; timeout?: number; apiKey?: string } = {}): AnthropicStoreClient {
  const { maxRetries = 0, timeout, apiKey = 'test' } = options;
  const client = new Anthropic({ apiKey, baseURL: server.baseURL, maxRetries, ...(timeout && { timeout }) });
  return new AnthropicStoreClient({ client });
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

async function failure(promise: Promise<unknown>, kind: StoreErrorKind): Promise<StoreError> {
  const err = await promise.then(() => expect.fail('expected the call to fail'), (e: unknown) => e);
  expect(err).toBeInstanceOf(StoreError);
  expect((err as StoreError).kind).toBe(kind);
  return err as StoreError;
}

function seedMany(count: number): void {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`/m/${String(i).padStart(3, '0')}.md`] = `memory ${i}`;
  server.seed(STORE, files);
}

describe('AnthropicStoreClient listings', () => {
  it('asks for 100 memories a page without content and follows next_page', async () => {
    seedMany(250);
    const listed = await collect(storeClient().list(STORE));
    expect(listed).toHaveLength(250);
    const lists = server.requests.filter((r) => r.route === 'list');
    expect(lists).toHaveLength(3);
    expect(lists[0]!.query).toEqual({ view: 'basic', limit: '100' });
    expect(lists[1]!.query.page).toMatch(/^page_/);
  });

  it('asks for 20 memories a page with content', async () => {
    seedMany(45);
    const listed = await collect(storeClient().list(STORE, { withContent: true }));
    expect(listed.map((m) => m.content)).toContain('memory 44');
    const lists = server.requests.filter((r) => r.route === 'list');
    expect(lists).toHaveLength(3);
    expect(lists[0]!.query).toEqual({ view: 'full', limit: '20' });
  });

  it('passes pathPrefix as path_prefix', async () => {
    server.seed(STORE, { '/a/x.md': 'x', '/b/y.md': 'y' });
    const listed = await collect(storeClient().list(STORE, { pathPrefix: '/a/' }));
    expect(listed.map((m) => m.path)).toEqual(['/a/x.md']);
    expect(server.requests[0]!.query.path_prefix).toBe('/a/');
  });

  it('skips memory_prefix items should the service send any', async () => {
    const memory = { type: 'memory', id: 'mem_1', path: '/a.md', content_sha256: sha256Hex(''), content_size_bytes: 0 };
    const page = (data: unknown[], next?: unknown) => ({
      data,
      hasNextPage: () => next !== undefined,
      getNextPage: async () => next,
    });
    const last = page([{ type: 'memory_prefix', path: '/deep/' }, { ...memory, id: 'mem_2', path: '/b.md' }]);
    const first = page([memory, { type: 'memory_prefix', path: '/folder/' }], last);
    const fakeSdk = { beta: { memoryStores: { memories: { list: async () => first } } }, withOptions: () => fakeSdk };
    const client = new AnthropicStoreClient({ client: fakeSdk as unknown as Anthropic });
    expect((await collect(client.list(STORE))).map((m) => m.id)).toEqual(['mem_1', 'mem_2']);
  });
});

describe('AnthropicStoreClient errors through the wire', () => {
  it('maps an injected 503 to unavailable when the SDK may not retry', async () => {
    const [memory] = server.seed(STORE, { '/a.md': 'a' });
    server.failNext('retrieve', 503);
    const err = await failure(storeClient({ maxRetries: 0 }).get(STORE, memory!.id), 'unavailable');
    expect(err.status).toBe(503);
    expect(err.cause).toBeInstanceOf(APIError);
    expect((err.cause as APIError).requestID).toMatch(/^req_/);
    expect(server.requestCount('retrieve')).toBe(1);
  });

  it('never lets the SDK retry: with the SDK\'s default maxRetries, one injected 503 fails the call in one request', async () => {
    const [memory] = server.seed(STORE, { '/a.md': 'a' });
    server.failNext('retrieve', 503);
    const client = new AnthropicStoreClient({ client: new Anthropic({ apiKey: 'test', baseURL: server.baseURL }) });
    const err = await failure(client.get(STORE, memory!.id), 'unavailable');
    expect(err.status).toBe(503);
    expect(server.requestCount('retrieve')).toBe(1);
    expect((await client.get(STORE, memory!.id)).content).toBe('a');
  });

  it('does no retrying of its own either: with maxRetries 2, a 429 is one request, a later page too', async () => {
    seedMany(150);
    server.failNext('list', 429);
    const err = await failure(collect(storeClient({ maxRetries: 2 }).list(STORE)), 'unavailable');
    expect(err.status).toBe(429);
    expect(server.requestCount('list')).toBe(1);
    // The second page is fetched by the page's own client: the copy with retries off.
    server.resetRequests();
    const client = storeClient({ maxRetries: 2 });
    const walk = client.list(STORE)[Symbol.asyncIterator]();
    await walk.next();
    server.failNext('list', 503);
    const failed = await failure((async () => {
      for (;;) if ((await walk.next()).done) return;
    })(), 'unavailable');
    expect(failed.status).toBe(503);
    expect(server.requestCount('list')).toBe(2);
  });

  it('gets precondition_failed in one request: the service marks it not worth retrying', async () => {
    const [memory] = server.seed(STORE, { '/a.md': 'theirs' });
    const err = await failure(
      storeClient({ maxRetries: 2 }).update(STORE, memory!.id, {
        content: 'mine',
        expected_content_sha256: sha256Hex('base'),
      }),
      'precondition_failed',
    );
    expect(err.status).toBe(409);
    expect(server.requestCount('update')).toBe(1);
  });

  it.each([
    [400, 'rejected'],
    [401, 'unauthorized'],
    [403, 'unauthorized'],
    [404, 'not_found'],
    [408, 'unavailable'],
    [409, 'unavailable'],
    [412, 'precondition_failed'],
    [413, 'rejected'],
    [422, 'rejected'],
    [500, 'unavailable'],
    [529, 'unavailable'],
  ] as const)('maps an injected %i on create to %s', async (status, kind) => {
    server.failNext('create', status);
    const err = await failure(storeClient().create(STORE, { path: '/a.md', content: 'a' }), kind);
    expect(err.status).toBe(status);
    expect(server.snapshot(STORE)).toEqual({});
  });

  it('maps a dropped connection to unavailable, with no status', async () => {
    server.failNext('delete', 'disconnect');
    const [memory] = server.seed(STORE, { '/a.md': 'a' });
    const err = await failure(storeClient().delete(STORE, memory!.id), 'unavailable');
    expect(err.status).toBeUndefined();
  });

  it('maps a client timeout to unavailable', async () => {
    server.latencyMs = 500;
    const err = await failure(collect(storeClient({ timeout: 50 }).list(STORE)), 'unavailable');
    expect(err.cause).toBeInstanceOf(APIConnectionTimeoutError);
  });

  it('maps a refused API key to unauthorized', async () => {
    await server.close();
    server = new MemoryApiServer({ apiKey: 'the-right-key' });
    await server.start();
    const err = await failure(collect(storeClient({ apiKey: 'wrong' }).list(STORE)), 'unauthorized');
    expect(err.status).toBe(401);
  });
});

describe('AnthropicStoreClient abort signals', () => {
  it('sends nothing when the signal is already aborted', async () => {
    const signal = AbortSignal.abort();
    const err = await failure(storeClient().create(STORE, { path: '/a.md', content: 'a' }, { signal }), 'unavailable');
    expect(err.cause).toBeInstanceOf(APIUserAbortError);
    expect(server.requestCount()).toBe(0);
  });

  it('cuts a request in flight short', async () => {
    const [memory] = server.seed(STORE, { '/a.md': 'a' });
    server.latencyMs = 2_000;
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 20);
    const err = await failure(storeClient().get(STORE, memory!.id, { signal: controller.signal }), 'unavailable');
    expect(err.cause).toBeInstanceOf(APIUserAbortError);
    expect(Date.now() - started).toBeLessThan(1_000);
    server.latencyMs = 0;
  });

  it('stops a listing between pages', async () => {
    seedMany(250);
    const controller = new AbortController();
    const seen: string[] = [];
    const err = await failure(
      (async () => {
        for await (const memory of storeClient().list(STORE, { signal: controller.signal })) {
          seen.push(memory.path);
          controller.abort();
        }
      })(),
      'unavailable',
    );
    expect(seen).toHaveLength(1);
    expect(err).toBeInstanceOf(StoreError);
    expect(server.requestCount('list')).toBe(1);
  });

  it('passes the signal on updates and deletes too', async () => {
    const [memory] = server.seed(STORE, { '/a.md': 'a' });
    const signal = AbortSignal.abort();
    const client = storeClient();
    await failure(client.update(STORE, memory!.id, { content: 'b' }, { signal }), 'unavailable');
    await failure(client.delete(STORE, memory!.id, { signal }), 'unavailable');
    await failure(client.get(STORE, memory!.id, { signal }), 'unavailable');
    await failure(collect(client.list(STORE, { signal })), 'unavailable');
    expect(server.requestCount()).toBe(0);
    expect(server.snapshot(STORE)).toEqual({ '/a.md': 'a' });
  });
});

describe('AnthropicStoreClient listVersions', () => {
  it('asks for 100 versions a page in the basic view, with the filters on the wire, and follows next_page', async () => {
    seedMany(150);
    const listed = await collect(
      storeClient().listVersions(STORE, {
        createdAtGte: '2020-01-01T00:00:00Z',
        createdAtLte: '2100-01-01T00:00:00.123456+02:00',
        operation: 'created',
      }),
    );
    expect(listed).toHaveLength(150);
    const lists = server.requests.filter((r) => r.route === 'list_versions');
    expect(lists).toHaveLength(2);
    expect(lists[0]!.query).toEqual({
      view: 'basic',
      limit: '100',
      'created_at[gte]': '2020-01-01T00:00:00Z',
      'created_at[lte]': '2100-01-01T00:00:00.123456+02:00',
      operation: 'created',
    });
    // The SDK carries the filters onto the next page, beside the cursor.
    expect(lists[1]!.query).toMatchObject({ operation: 'created', page: expect.stringMatching(/^page_/) });
  });

  it('passes memoryId as memory_id', async () => {
    const [memory] = server.seed(STORE, { '/a.md': 'a', '/b.md': 'b' });
    const listed = await collect(storeClient().listVersions(STORE, { memoryId: memory!.id }));
    expect(listed.map((v) => v.memory_id)).toEqual([memory!.id]);
    expect(server.requests[0]!.query.memory_id).toBe(memory!.id);
  });

  it('keeps only the fields of StoreMemoryVersion, and no content unless asked', async () => {
    server.seed(STORE, { '/a.md': 'a' });
    const [version] = await collect(storeClient().listVersions(STORE));
    expect(Object.keys(version!).sort()).toEqual(
      ['content_sha256', 'content_size_bytes', 'created_at', 'id', 'memory_id', 'operation', 'path', 'redacted_at'].sort(),
    );
    const [full] = await collect(storeClient().listVersions(STORE, { withContent: true }));
    expect(full).toMatchObject({ content: 'a', content_size_bytes: 1 });
  });

  it('withContent asks for view=full, 20 a page; maxVersions asks for no page past the one holding the last', async () => {
    seedMany(50);
    const before = server.requestCount();
    expect(await collect(storeClient().listVersions(STORE, { withContent: true, maxVersions: 21 }))).toHaveLength(21);
    expect(server.requestCount() - before).toBe(2);
    const all = server.requestCount();
    expect(await collect(storeClient().listVersions(STORE, { withContent: true }))).toHaveLength(50);
    expect(server.requestCount() - all).toBe(3);
  });

  it.each([
    [401, 'unauthorized'],
    [403, 'unauthorized'],
    [404, 'not_found'],
    [429, 'unavailable'],
    [500, 'unavailable'],
    [400, 'rejected'],
  ] as const)('maps HTTP %i to %s, the status kept so 401, 403 and 404 stay apart', async (status, kind) => {
    server.failNext('list_versions', status);
    const err = await failure(collect(storeClient().listVersions(STORE)), kind);
    expect(err.status).toBe(status);
  });

  it('stops between pages when the signal aborts', async () => {
    seedMany(150);
    const controller = new AbortController();
    let seen = 0;
    await failure(
      (async () => {
        for await (const _ of storeClient().listVersions(STORE, { signal: controller.signal })) {
          seen++;
          controller.abort();
        }
      })(),
      'unavailable',
    );
    expect(seen).toBe(1);
    expect(server.requestCount('list_versions')).toBe(1);
  });
});

describe('AnthropicStoreClient listFolder', () => {
  it('asks for depth=1, 100 a page (20 with content), and yields memories and roll-ups', async () => {
    server.seed(STORE, { '/a/x.md': 'x', '/a/deep/y.md': 'y', '/top.md': 't' });
    const client = storeClient();
    const root = await collect(client.listFolder(STORE));
    expect(root.map((e) => (e.type === 'prefix' ? e.path : e.memory.path))).toEqual(['/a/', '/top.md']);
    await collect(client.listFolder(STORE, { pathPrefix: '/a/', withContent: true }));
    const lists = server.requests.filter((r) => r.route === 'list');
    expect(lists.map((r) => r.query)).toEqual([
      { view: 'basic', limit: '100', depth: '1' },
      { view: 'full', limit: '20', depth: '1', path_prefix: '/a/' },
    ]);
  });

  it('sends no path_prefix for the root given as /', async () => {
    await collect(storeClient().listFolder(STORE, { pathPrefix: '/' }));
    expect(server.requests[0]!.query).not.toHaveProperty('path_prefix');
  });

  it.each([
    [401, 'unauthorized'],
    [403, 'unauthorized'],
    [404, 'not_found'],
  ] as const)('maps HTTP %i to %s, the status kept', async (status, kind) => {
    server.failNext('list', status);
    const err = await failure(collect(storeClient().listFolder(STORE)), kind);
    expect(err.status).toBe(status);
  });
});
