import { request as httpRequest } from 'node:http';
import { sha256Hex } from '@memory-mounter/core';
import { ManualClock, MemoryApiServer } from '@memory-mounter/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// The emulator at the HTTP level, with the headers the SDK sends. The SDK's own view of it is
// tested in packages/anthropic (the StoreClient contract and AnthropicStoreClient tests).

const STORE = 'memstore_1';
const SDK_HEADERS = {
  'x-api-key': 'test',
  'anthropic-version': '2026-10-21',
  'anthropic-beta': 'agent-memory-2026-07-22',
};

let server: MemoryApiServer;

beforeEach(async () => {
  server = new MemoryApiServer({ retryAfterSeconds: 2 });
  // The service answers 404 for a store it does not know: the tests' store exists, as if made in the Console.
  server.createStore(STORE);
  await server.start();
});
afterEach(async () => {
  await server.close();
});

interface Call {
  query?: Record<string, string | number>;
  body?: unknown;
  headers?: Record<string, string>;
}

async function call(method: string, path: string, { query, body, headers = SDK_HEADERS }: Call = {}) {
  const url = new URL(path, server.baseURL);
  for (const [key, value] of Object.entries(query ?? {})) url.searchParams.set(key, String(value));
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const memories = (store = STORE) => `/v1/memory_stores/${store}/memories`;
const versions = (store = STORE) => `/v1/memory_stores/${store}/memory_versions`;
const version = (id: string, store = STORE) => `${versions(store)}/${encodeURIComponent(id)}`;
const memory = (id: string, store = STORE) => `${memories(store)}/${encodeURIComponent(id)}`;

/** Every page of a listing (`memories()` or `versions()`), following `next_page`. */
async function listAll(
  query: Record<string, string | number>,
  path = memories(),
): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let pages = 0;
  let page: string | null = null;
  do {
    const res = await call('GET', path, { query: { ...query, ...(page && { page }) } });
    expect(res.status).toBe(200);
    items.push(...res.json.data);
    page = res.json.next_page;
    pages++;
  } while (page);
  return { items, pages };
}

describe('lifecycle', () => {
  it('listens on 127.0.0.1 on an ephemeral port and closes with keep-alive sockets open', async () => {
    const baseURL = server.baseURL;
    expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await call('GET', memories()); // leaves an idle keep-alive connection behind
    await server.close();
    expect(server.baseURL).toBe('');
    await expect(fetch(`${baseURL}${memories()}`, { headers: SDK_HEADERS })).rejects.toThrow();
  });

  it('closes while a request is in flight, after answering it', async () => {
    server.latencyMs = 100;
    const pending = call('GET', memories());
    await new Promise((resolve) => setTimeout(resolve, 20));
    await server.close();
    expect((await pending).status).toBe(200);
  });
});

describe('memories', () => {
  it('creates (basic view), retrieves (full view), updates, renames and deletes', async () => {
    const created = await call('POST', memories(), { body: { path: '/a.md', content: 'héllo' } });
    expect(created.status).toBe(200);
    expect(created.headers.get('request-id')).toMatch(/^req_/);
    expect(created.json).toMatchObject({
      type: 'memory',
      memory_store_id: STORE,
      path: '/a.md',
      content: null,
      content_sha256: sha256Hex('héllo'),
      content_size_bytes: 6,
    });
    expect(created.json.id).toMatch(/^mem_/);
    expect(created.json.memory_version_id).toMatch(/^memver_/);
    const id = created.json.id as string;

    expect((await call('GET', memory(id))).json.content).toBe('héllo');
    expect((await call('GET', memory(id), { query: { view: 'basic' } })).json.content).toBeNull();

    const updated = await call('POST', memory(id), {
      query: { view: 'full' },
      body: { content: 'v2', path: '/b.md', precondition: { type: 'content_sha256', content_sha256: sha256Hex('héllo') } },
    });
    expect(updated.json).toMatchObject({ id, path: '/b.md', content: 'v2' });
    expect(updated.json.memory_version_id).not.toBe(created.json.memory_version_id);

    const deleted = await call('DELETE', memory(id), { query: { expected_content_sha256: sha256Hex('v2') } });
    expect(deleted.json).toEqual({ type: 'memory_deleted', id });
    expect(server.snapshot(STORE)).toEqual({});
  });

  it('writes no new version for an update that changes nothing', async () => {
    const [seeded] = server.seed(STORE, { '/a.md': 'same' });
    const res = await call('POST', memory(seeded!.id), { body: { content: 'same', path: '/a.md' } });
    expect(res.json.memory_version_id).toBe(seeded!.memory_version_id);
  });

  it('answers a failed precondition with memory_precondition_failed_error, marked not retryable', async () => {
    const [seeded] = server.seed(STORE, { '/a.md': 'theirs' });
    const res = await call('POST', memory(seeded!.id), {
      body: { content: 'mine', precondition: { type: 'content_sha256', content_sha256: sha256Hex('base') } },
    });
    expect(res.status).toBe(409);
    expect(res.json).toMatchObject({ type: 'error', error: { type: 'memory_precondition_failed_error' } });
    expect(res.json.request_id).toBe(res.headers.get('request-id'));
    expect(res.headers.get('x-should-retry')).toBe('false');
    const del = await call('DELETE', memory(seeded!.id), { query: { expected_content_sha256: sha256Hex('base') } });
    expect(del.json.error.type).toBe('memory_precondition_failed_error');
  });

  it('answers a path conflict with the path and memory that blocked it', async () => {
    const [notes] = server.seed(STORE, { '/notes': 'n' });
    const res = await call('POST', memories(), { body: { path: '/notes/todo.md', content: '' } });
    expect(res.status).toBe(409);
    expect(res.json.error).toMatchObject({
      type: 'memory_path_conflict_error',
      conflicting_path: '/notes',
      conflicting_memory_id: notes!.id,
    });
  });

  it.each([
    ['a bad path', { path: '/a/../b', content: '' }],
    ['a line separator in the path', { path: '/a\u2028b', content: '' }],
    ['content over 102,400 bytes', { path: '/a', content: 'x'.repeat(102_401) }],
    ['a lone surrogate in the content', { path: '/a', content: 'x\ud800' }],
    ['no content', { path: '/a' }],
    ['an unknown field', { path: '/a', content: '', metadata: {} }],
    ['a body that is not JSON', '{nope'],
  ])('refuses a create with %s as invalid_request_error', async (_why, body) => {
    const res = await call('POST', memories(), { body });
    expect(res.status).toBe(400);
    expect(res.json.error.type).toBe('invalid_request_error');
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('refuses an update with neither content nor path, or a malformed precondition', async () => {
    const [seeded] = server.seed(STORE, { '/a.md': 'a' });
    expect((await call('POST', memory(seeded!.id), { body: {} })).status).toBe(400);
    const badSha = { content: 'b', precondition: { type: 'content_sha256', content_sha256: 'ABC' } };
    expect((await call('POST', memory(seeded!.id), { body: badSha })).status).toBe(400);
    const del = await call('DELETE', memory(seeded!.id), { query: { expected_content_sha256: 'nope' } });
    expect(del.status).toBe(400);
  });

  it('refuses a body over 1 MiB with 413 request_too_large', async () => {
    const res = await call('POST', memories(), { body: { path: '/a', content: 'x'.repeat(1_100_000) } });
    expect(res.status).toBe(413);
    expect(res.json.error.type).toBe('request_too_large');
  });

  it('answers 404 not_found_error for an unknown memory or route', async () => {
    const res = await call('GET', memory('mem_nope'));
    expect(res.status).toBe(404);
    expect(res.json.error.type).toBe('not_found_error');
    expect((await call('GET', '/v1/elsewhere')).status).toBe(404);
  });

  it('insists on an API key and a memory beta header', async () => {
    const noKey = await call('GET', memories(), { headers: { ...SDK_HEADERS, 'x-api-key': '' } });
    expect(noKey.json.error.type).toBe('authentication_error');
    const bearer = await call('GET', memories(), {
      headers: { 'anthropic-version': '2026-10-21', 'anthropic-beta': 'x,managed-agents-2026-04-01', authorization: 'Bearer t' },
    });
    expect(bearer.status).toBe(200);
    const noBeta = await call('GET', memories(), { headers: { ...SDK_HEADERS, 'anthropic-beta': 'other' } });
    expect(noBeta.status).toBe(400);
  });
});

describe('list', () => {
  beforeEach(() => {
    server.seed(STORE, {
      '/top.md': 't',
      '/notes/a.md': 'a',
      '/notes/deep/b.md': 'b',
      '/notes/deep/er/c.md': 'c',
      '/notes-archive/d.md': 'd',
    });
  });

  it('lists every memory below the prefix, sorted by path, content only in the full view', async () => {
    const basic = await call('GET', memories(), { query: { limit: 100 } });
    expect(basic.json.data.map((m: any) => m.path)).toEqual([
      '/notes-archive/d.md',
      '/notes/a.md',
      '/notes/deep/b.md',
      '/notes/deep/er/c.md',
      '/top.md',
    ]);
    expect(basic.json.data[0].content).toBeNull();
    expect(basic.json.next_page).toBeNull();
    const full = await call('GET', memories(), { query: { view: 'full', path_prefix: '/notes/' } });
    expect(full.json.data.map((m: any) => m.content)).toEqual(['a', 'b', 'c']);
  });

  it('rolls deeper memories up into memory_prefix items with depth', async () => {
    const one = await call('GET', memories(), { query: { depth: 1 } });
    expect(one.json.data).toEqual([
      { type: 'memory_prefix', path: '/notes-archive/' },
      { type: 'memory_prefix', path: '/notes/' },
      expect.objectContaining({ type: 'memory', path: '/top.md' }),
    ]);
    const two = await call('GET', memories(), { query: { depth: 2, path_prefix: '/notes/' } });
    expect(two.json.data.map((item: any) => [item.type, item.path])).toEqual([
      ['memory', '/notes/a.md'],
      ['memory', '/notes/deep/b.md'],
      ['memory_prefix', '/notes/deep/er/'],
    ]);
  });

  it('counts memory_prefix items toward the page limit', async () => {
    const { items, pages } = await listAll({ depth: 1, limit: 1 });
    expect(items.map((item) => item.path)).toEqual(['/notes-archive/', '/notes/', '/top.md']);
    expect(pages).toBe(3);
  });

  it('pages with an opaque cursor that survives deletes between pages', async () => {
    const first = await call('GET', memories(), { query: { limit: 2 } });
    expect(first.json.next_page).toMatch(/^page_/);
    server.deleteMemory(STORE, '/notes/a.md'); // on the page already read
    server.deleteMemory(STORE, '/notes/deep/er/c.md'); // on the next page
    const second = await call('GET', memories(), { query: { limit: 2, page: first.json.next_page } });
    expect(second.json.data.map((m: any) => m.path)).toEqual(['/notes/deep/b.md', '/top.md']);
    expect(second.json.next_page).toBeNull();
  });

  it('defaults to 20 a page and caps the full view at 20', async () => {
    server.seed('memstore_big', Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`/m${i}`, `${i}`])));
    const big = memories('memstore_big');
    expect((await call('GET', big)).json.data).toHaveLength(20);
    expect((await call('GET', big, { query: { limit: 100 } })).json.data).toHaveLength(45);
    expect((await call('GET', big, { query: { limit: 100, view: 'full' } })).json.data).toHaveLength(20);
  });

  it.each([
    ['limit 0', { limit: 0 }],
    ['limit 101', { limit: 101 }],
    ['a negative depth', { depth: -1 }],
    ['an unknown view', { view: 'everything' }],
    ['a prefix without a trailing slash', { path_prefix: '/notes' }],
    ['a cursor it never gave', { page: 'page_bogus' }],
  ])('refuses %s', async (_why, query) => {
    const res = await call('GET', memories(), { query });
    expect(res.status).toBe(400);
    expect(res.json.error.type).toBe('invalid_request_error');
  });
});

describe('test controls', () => {
  it('fails the next calls of a route with the service error body and retry headers', async () => {
    server.failNext('list', 529, 2);
    server.failNext('list', 429);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await call('GET', memories());
      statuses.push(res.status);
      if (res.status !== 200) {
        expect(res.headers.get('retry-after')).toBe('2');
        expect(res.headers.get('x-should-retry')).toBe('true');
        expect(res.json.request_id).toMatch(/^req_/);
      }
    }
    expect(statuses).toEqual([529, 529, 429, 200]);
    expect(server.requestCounts()).toMatchObject({ list: 4, create: 0 });
    expect(server.requests.map((r) => r.status)).toEqual([529, 529, 429, 200]);
  });

  it('fails every request of one store (of some routes) while its standing fault is set, and serves the others', async () => {
    server.createStore('memstore_2');
    server.failStore(STORE, 503);
    server.failStore('memstore_2', 429, { routes: ['create'] });
    expect((await call('GET', memories())).status).toBe(503);
    expect((await call('GET', memories())).status).toBe(503);
    expect((await call('GET', '/v1/memory_stores/memstore_2/memories')).status).toBe(200);
    const limited = await call('POST', '/v1/memory_stores/memstore_2/memories', { body: { path: '/a', content: 'x' } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    server.failStore(STORE, undefined);
    expect((await call('GET', memories())).status).toBe(200);
    expect([server.requestCountFor(STORE), server.requestCountFor('memstore_2')]).toEqual([3, 2]);
    expect(() => server.failStore(STORE, 200)).toThrow(RangeError);
  });

  it('changes nothing on a faulted write', async () => {
    server.failNext('create', 500);
    const res = await call('POST', memories(), { body: { path: '/a', content: 'x' } });
    expect(res.json.error.type).toBe('api_error');
    expect(server.snapshot(STORE)).toEqual({});
  });

  it('drops the connection on a disconnect fault', async () => {
    server.failNext('list', 'disconnect');
    const dropped = await new Promise<NodeJS.ErrnoException>((resolve) => {
      const req = httpRequest(`${server.baseURL}${memories()}`, { headers: SDK_HEADERS }, () => resolve(new Error('answered')));
      req.on('error', resolve);
      req.end();
    });
    expect(dropped.code).toBe('ECONNRESET');
    expect((await call('GET', memories())).status).toBe(200);
  });

  it('holds a request unanswered on a hang fault, until the server closes', async () => {
    server.failNext('list', 'hang');
    let answered = false;
    const dropped = new Promise<NodeJS.ErrnoException>((resolve) => {
      const req = httpRequest(`${server.baseURL}${memories()}`, { headers: SDK_HEADERS }, () => {
        answered = true;
        resolve(new Error('answered'));
      });
      req.on('error', resolve);
      req.end();
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(answered).toBe(false);
    expect(server.requests.map((r) => [r.route, r.status])).toEqual([['list', undefined]]);
    // The next request is answered as usual; close() then drops the held one.
    expect((await call('GET', memories())).status).toBe(200);
    await server.close();
    expect((await dropped).code).toBe('ECONNRESET');
  });

  it('an afterApplying fault carries the write out, then answers the status', async () => {
    server.failNext('create', { afterApplying: 503 });
    const created = await call('POST', memories(), { body: { path: '/a', content: 'x' } });
    expect(created.status).toBe(503);
    expect(created.json.error.type).toBe('api_error');
    expect(created.headers.get('x-should-retry')).toBe('true');
    expect(server.snapshot(STORE)).toEqual({ '/a': 'x' });

    // A refusal is lost the same way: the retried create meets the memory it made.
    server.failNext('create', { afterApplying: 503 });
    expect((await call('POST', memories(), { body: { path: '/a', content: 'y' } })).status).toBe(503);
    expect(server.snapshot(STORE)).toEqual({ '/a': 'x' });

    const id = server.memories(STORE)[0]!.id;
    server.failNext('update', { afterApplying: 500 });
    expect((await call('POST', memory(id), { body: { content: 'z' } })).status).toBe(500);
    server.failNext('delete', { afterApplying: 503 });
    expect(server.snapshot(STORE)).toEqual({ '/a': 'z' });
    expect((await call('DELETE', memory(id))).status).toBe(503);
    expect(server.snapshot(STORE)).toEqual({});
    expect(server.versions(STORE).map((v) => v.operation)).toEqual(['deleted', 'modified', 'created']);
  });

  it('failWritesAtRandom fails a seeded share of writes, some applied first, and never a read', async () => {
    const run = async (seed: number) => {
      const fresh = new MemoryApiServer({ retryAfterSeconds: 0.01 });
      const baseURL = await fresh.start();
      fresh.createStore(STORE);
      const plan = fresh.failWritesAtRandom({ seed, fraction: 0.5, appliedFraction: 0.5 })!;
      const outcomes: string[] = [];
      try {
        for (let i = 0; i < 40; i++) {
          const path = `/m${i}`;
          const res = await fetch(new URL(memories(), baseURL), {
            method: 'POST',
            headers: { ...SDK_HEADERS, 'content-type': 'application/json' },
            body: JSON.stringify({ path, content: `c${i}` }),
          });
          const landed = path in fresh.snapshot(STORE);
          outcomes.push(res.status === 200 ? 'ok' : `${res.status}:${landed ? 'applied' : 'not applied'}`);
          expect(res.status === 200 ? landed : true).toBe(true);
          expect((await fetch(new URL(memories(), baseURL), { headers: SDK_HEADERS })).status).toBe(200);
        }
      } finally {
        await fresh.close();
      }
      return { outcomes, counts: { ...plan.counts } };
    };
    const first = await run(7);
    expect(await run(7)).toEqual(first);
    expect((await run(8)).outcomes).not.toEqual(first.outcomes);
    const count = (o: string) => first.outcomes.filter((x) => x === o).length;
    expect(count('503:applied')).toBe(first.counts.applied);
    expect(count('503:not applied')).toBe(first.counts.notApplied);
    expect(first.counts.applied).toBeGreaterThan(0);
    expect(first.counts.notApplied).toBeGreaterThan(0);
    expect(count('ok')).toBeGreaterThan(0);

    server.failWritesAtRandom({ seed: 1, fraction: 1, appliedFraction: 0 });
    expect((await call('POST', memories(), { body: { path: '/b', content: 'x' } })).status).toBe(503);
    server.failWritesAtRandom(undefined);
    expect((await call('POST', memories(), { body: { path: '/b', content: 'x' } })).status).toBe(200);
  });

  it('refuses a fault that is not an error status', () => {
    expect(() => server.failNext('create', { afterApplying: 200 })).toThrow(RangeError);
    expect(() => server.failWritesAtRandom({ seed: 1, fraction: 1.5, appliedFraction: 0 })).toThrow(RangeError);
    expect(() => server.failWritesAtRandom({ seed: 1, fraction: 0.5, appliedFraction: 0, status: 200 })).toThrow(RangeError);

    expect(() => server.failNext('list', 200)).toThrow(RangeError);
    expect(() => server.failNext('list', 'stall' as 'hang')).toThrow(RangeError);
    expect(() => server.failNext('list', 503, 0)).toThrow(RangeError);
  });

  it('delays every answer by latencyMs', async () => {
    server.latencyMs = 60;
    const started = Date.now();
    await call('GET', memories());
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
  });

  it('keeps stores apart and lets another writer change them directly', async () => {
    server.seed('memstore_a', { '/x.md': 'a' });
    server.seed('memstore_b', { '/x.md': 'b' });
    server.writeMemory('memstore_a', '/x.md', 'a2');
    server.writeMemory('memstore_a', '/y.md', 'new');
    server.renameMemory('memstore_b', '/x.md', '/z.md');
    expect(server.snapshot('memstore_a')).toEqual({ '/x.md': 'a2', '/y.md': 'new' });
    expect(server.snapshot('memstore_b')).toEqual({ '/z.md': 'b' });
    server.deleteMemory('memstore_a', '/y.md');
    expect(server.snapshot('memstore_a')).toEqual({ '/x.md': 'a2' });
    expect(server.requestCount()).toBe(0);
    expect(() => server.seed('memstore_a', { '/x.md/under': 'no' })).toThrow(/overlaps/);
  });
});

describe('memory versions', () => {
  let clock: ManualClock;

  beforeEach(async () => {
    await server.close();
    clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
    server = new MemoryApiServer({ retryAfterSeconds: 2, now: clock.now });
    server.createStore(STORE);
    await server.start();
  });

  const allVersions = (query: Record<string, string | number> = {}) => listAll(query, versions());

  it('records each API write as a version in the wire shape, newest first, the memory pointing at its latest', async () => {
    const created = (await call('POST', memories(), { body: { path: '/a.md', content: 'one' } })).json;
    clock.advance(1_000);
    const updated = (await call('POST', memory(created.id), { body: { content: 'two' } })).json;
    clock.advance(1_000);
    await call('DELETE', memory(created.id));

    const listed = (await call('GET', versions())).json;
    expect(listed.next_page).toBeNull();
    expect(listed.data.map((v: any) => [v.operation, v.path, v.content_sha256, v.content_size_bytes, v.created_at])).toEqual([
      ['deleted', '/a.md', null, null, '2026-03-01T12:00:02.000Z'],
      ['modified', '/a.md', sha256Hex('two'), 3, '2026-03-01T12:00:01.000Z'],
      ['created', '/a.md', sha256Hex('one'), 3, '2026-03-01T12:00:00.000Z'],
    ]);
    expect(listed.data[2]).toEqual({
      type: 'memory_version',
      id: created.memory_version_id,
      memory_store_id: STORE,
      memory_id: created.id,
      operation: 'created',
      path: '/a.md',
      content: null,
      content_sha256: sha256Hex('one'),
      content_size_bytes: 3,
      created_at: '2026-03-01T12:00:00.000Z',
      created_by: { type: 'api_actor', api_key_id: 'apikey_emulated' },
      redacted_at: null,
      redacted_by: null,
    });
    expect(listed.data[1].id).toBe(updated.memory_version_id);
  });

  it('records the helpers\' writes too, as a user, and nothing for a write to nothing', () => {
    server.seed(STORE, { '/a.md': 'a' });
    server.writeMemory(STORE, '/a.md', 'a2');
    server.writeMemory(STORE, '/a.md', 'a2');
    server.renameMemory(STORE, '/a.md', '/b.md');
    server.deleteMemory(STORE, '/b.md');
    const history = server.versions(STORE);
    expect(history.map((v) => [v.operation, v.path])).toEqual([
      ['deleted', '/b.md'],
      ['modified', '/b.md'],
      ['modified', '/a.md'],
      ['created', '/a.md'],
    ]);
    expect(history[0]!.created_by).toEqual({ type: 'user_actor', user_id: 'user_emulated' });
    expect(server.requestCount()).toBe(0);
  });

  it('puts content in the full view only, never for a deleted version, and caps the full view at 20', async () => {
    server.seed(STORE, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`/m${i}`, `c${i}`])));
    server.deleteMemory(STORE, '/m0');
    expect((await call('GET', versions(), { query: { limit: 100 } })).json.data).toHaveLength(31);
    const full = await call('GET', versions(), { query: { view: 'full', limit: 100 } });
    expect(full.json.data).toHaveLength(20);
    expect(full.json.data[0]).toMatchObject({ operation: 'deleted', path: '/m0', content: null });
    expect(full.json.data[1].content).toBe('c29');
    expect((await call('GET', versions())).json.data).toHaveLength(20); // the default limit
  });

  it('retrieves one version, in the full view by default; 404 for an unknown id', async () => {
    const [m] = server.seed(STORE, { '/a.md': 'body' });
    const got = await call('GET', version(m!.memory_version_id));
    expect(got.json).toMatchObject({ type: 'memory_version', id: m!.memory_version_id, content: 'body' });
    expect((await call('GET', version(m!.memory_version_id), { query: { view: 'basic' } })).json.content).toBeNull();
    const missing = await call('GET', version('memver_nope'));
    expect(missing.status).toBe(404);
    expect(missing.json.error.type).toBe('not_found_error');
  });

  it('redacts through POST .../redact (no body) and through the helper, the first redacted_at kept', async () => {
    const [a, b] = server.seed(STORE, { '/a.md': 'a', '/b.md': 'b' });
    clock.advance(5_000);
    const res = await call('POST', `${version(a!.memory_version_id)}/redact`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: a!.memory_version_id,
      path: null,
      content: null,
      content_sha256: null,
      content_size_bytes: null,
      created_at: '2026-03-01T12:00:00.000Z',
      redacted_at: '2026-03-01T12:00:05.000Z',
      redacted_by: { type: 'api_actor', api_key_id: 'apikey_emulated' },
    });
    clock.advance(1_000);
    expect((await call('POST', `${version(a!.memory_version_id)}/redact`)).json.redacted_at).toBe('2026-03-01T12:00:05.000Z');
    expect(server.redactVersion(STORE, b!.memory_version_id).redacted_at).toBe('2026-03-01T12:00:06.000Z');
    expect((await call('GET', version(b!.memory_version_id))).json).toMatchObject({ path: null, content: null });
    expect(() => server.redactVersion(STORE, 'memver_nope')).toThrow(/memory version memver_nope not found/);
    expect(server.snapshot(STORE)).toEqual({ '/a.md': 'a', '/b.md': 'b' }); // the memories are untouched
  });

  it('compares created_at bounds as instants: any offset, fractions below a millisecond', async () => {
    server.seed(STORE, { '/a.md': 'a' }); // 12:00:00.000Z
    const count = async (query: Record<string, string>) => (await call('GET', versions(), { query })).json.data.length;
    expect(await count({ 'created_at[gte]': '2026-03-01T13:00:00+01:00' })).toBe(1);
    expect(await count({ 'created_at[lte]': '2026-03-01T11:59:59.999-00:00' })).toBe(0);
    expect(await count({ 'created_at[gte]': '2026-03-01T12:00:00.000001Z' })).toBe(0);
    expect(await count({ 'created_at[lte]': '2026-03-01T12:00:00.000000001Z' })).toBe(1);
    expect(await count({ 'created_at[gte]': '2026-03-01t12:00:00z' })).toBe(1);
  });

  it('pages newest first with a cursor that survives writes between pages', async () => {
    for (let i = 0; i < 5; i++) {
      server.seed(STORE, { [`/m${i}`]: `${i}` });
      clock.advance(i === 2 ? 0 : 10); // /m2 and /m3 tie
    }
    const first = await call('GET', versions(), { query: { limit: 2 } });
    expect(first.json.data.map((v: any) => v.path)).toEqual(['/m4', '/m3']);
    server.seed(STORE, { '/late': 'x' }); // newer than the cursor: not on a later page
    const second = await call('GET', versions(), { query: { limit: 2, page: first.json.next_page } });
    expect(second.json.data.map((v: any) => v.path)).toEqual(['/m2', '/m1']);
    const third = await call('GET', versions(), { query: { limit: 2, page: second.json.next_page } });
    expect(third.json.data.map((v: any) => v.path)).toEqual(['/m0']);
    expect(third.json.next_page).toBeNull();
  });

  it('follows pages when every version ties', async () => {
    server.seed(STORE, Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`/m${i}`, `${i}`])));
    const { items, pages } = await allVersions({ limit: 10 });
    expect(pages).toBe(5);
    expect(new Set(items.map((v) => v.id)).size).toBe(45);
  });

  it('forgets versions past the retention period for good, in listings and retrieve', async () => {
    const [old] = server.seed(STORE, { '/old.md': 'o' });
    clock.advance(60_000);
    server.seed(STORE, { '/new.md': 'n' });
    server.versionRetentionMs = 30_000;
    expect((await allVersions()).items.map((v) => v.path)).toEqual(['/new.md']);
    expect((await call('GET', version(old!.memory_version_id))).status).toBe(404);
    server.versionRetentionMs = undefined;
    expect((await allVersions()).items.map((v) => v.path)).toEqual(['/new.md']);
    expect(server.snapshot(STORE)).toEqual({ '/new.md': 'n', '/old.md': 'o' });
  });

  it('fails the version routes through failNext and counts them', async () => {
    const [m] = server.seed(STORE, { '/a.md': 'a' });
    server.failNext('list_versions', 403);
    server.failNext('retrieve_version', 404);
    server.failNext('redact_version', 'disconnect');
    const refused = await call('GET', versions());
    expect([refused.status, refused.json.error.type]).toEqual([403, 'permission_error']);
    expect((await call('GET', version(m!.memory_version_id))).status).toBe(404);
    await expect(call('POST', `${version(m!.memory_version_id)}/redact`)).rejects.toThrow();
    expect(server.versions(STORE)[0]!.redacted_at).toBeNull();
    expect(server.requestCounts()).toMatchObject({ list_versions: 1, retrieve_version: 1, redact_version: 1, list: 0 });
    expect(server.requests[0]).toMatchObject({ route: 'list_versions', storeId: STORE, status: 403 });
    expect(server.requests[1]).toMatchObject({ route: 'retrieve_version', versionId: m!.memory_version_id });
  });

  it.each([
    ['an unknown operation', { operation: 'renamed' }],
    ['a created_at that is not RFC 3339', { 'created_at[gte]': '2026-03-01' }],
    ['an impossible date', { 'created_at[lte]': '2026-02-30T00:00:00Z' }],
    ['limit 0', { limit: 0 }],
    ['limit 101', { limit: 101 }],
    ['an unknown view', { view: 'everything' }],
    ['a cursor it never gave', { page: 'page_bogus' }],
    ['an author filter it does not emulate', { api_key_id: 'apikey_1' }],
  ])('refuses a version listing with %s', async (_why, query) => {
    const res = await call('GET', versions(), { query });
    expect(res.status).toBe(400);
    expect(res.json.error.type).toBe('invalid_request_error');
  });
});

describe('what the service knows', () => {
  it('a store id it was never given is a 404 not_found_error, as on the service; a helper that names a store gives it', async () => {
    const listing = await call('GET', '/v1/memory_stores/memstore_unknown/memories');
    expect(listing.status).toBe(404);
    expect(listing.json.error).toMatchObject({ type: 'not_found_error', message: expect.stringContaining('memstore_unknown') });
    expect((await call('POST', '/v1/memory_stores/memstore_unknown/memories', { body: { path: '/a.md', content: 'a' } })).status).toBe(404);
    // Reading it back does not make it either.
    expect(server.snapshot('memstore_unknown')).toEqual({});
    expect(server.hasStore('memstore_unknown')).toBe(false);
    server.seed('memstore_seeded', {});
    expect((await call('GET', '/v1/memory_stores/memstore_seeded/memories')).json.data).toEqual([]);
  });

  it('unknownStores: create makes a store on first use instead', async () => {
    await server.close();
    server = new MemoryApiServer({ unknownStores: 'create' });
    await server.start();
    expect((await call('GET', '/v1/memory_stores/memstore_any/memories')).status).toBe(200);
    expect(server.hasStore('memstore_any')).toBe(true);
  });

  it('a session’s agent carries its skills, and each skill version resolves (latest too) and downloads as a tar of its files', async () => {
    const first = server.seedSkill('skill_1', { name: 'greeter', files: { 'SKILL.md': 'v1' } });
    const second = server.seedSkill('skill_1', { name: 'greeter', files: { 'SKILL.md': '# Greeter\n', 'bin/run.sh': 'echo hi\n' } });
    server.seedSession('sesn_1', { resources: [], skills: [{ type: 'custom', skill_id: 'skill_1', version: 'latest' }] });
    const headers = { ...SDK_HEADERS, 'anthropic-beta': 'managed-agents-2026-04-01' };
    const session = await call('GET', '/v1/sessions/sesn_1', { headers });
    expect(session.json.agent.skills).toEqual([{ type: 'custom', skill_id: 'skill_1', version: 'latest' }]);
    expect((await call('GET', '/v1/skills/skill_1/versions/latest', { headers })).json).toMatchObject({ type: 'skill_version', id: second, name: 'greeter' });
    expect((await call('GET', `/v1/skills/skill_1/versions/${first}`, { headers })).json).toMatchObject({ id: first });
    expect((await call('GET', '/v1/skills/skill_1/versions/skillver_nope', { headers })).status).toBe(404);
    const archive = Buffer.from(await (await fetch(new URL(`/v1/skills/skill_1/versions/${second}/content`, server.baseURL), { headers })).arrayBuffer());
    expect(tarMembers(archive)).toEqual([
      ['greeter/SKILL.md', '# Greeter\n'],
      ['greeter/bin/run.sh', 'echo hi\n'],
    ]);
  });
});

/** The (name, content) of each member of a ustar archive. */
function tarMembers(archive: Buffer): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let at = 0; at + 512 <= archive.length; ) {
    const header = archive.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) break;
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('ascii'), 8);
    out.push([name, archive.subarray(at + 512, at + 512 + size).toString('utf8')]);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
