import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MemoryMounter, type StoreClient } from '@memory-mounter/core';
import { MemfsFileSystem, MemoryApiServer, type RouteName } from '@memory-mounter/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * Issue 18 item 7 (SPEC 6.6): the engine is the one owner of retries. Through the real SDK, its
 * `maxRetries` left at the default (2), against the emulator answering 503: every call the engine
 * makes is exactly one HTTP request, so what the server counts per route is what the engine
 * attempted, and a `create` the engine sends once reaches the service once.
 */

const ROOT = '/mnt/memory';
const STORE = 'memstore_notes';
const DIR = `${ROOT}/notes`;
const encoder = new TextEncoder();

type Counted = 'list' | 'listVersions' | 'get' | 'create' | 'update' | 'delete';
const ROUTE: Record<Counted, RouteName> = {
  list: 'list',
  listVersions: 'list_versions',
  get: 'retrieve',
  create: 'create',
  update: 'update',
  delete: 'delete',
};

/**
 * `inner`, counting the calls the engine makes on it: the engine's retrier sits above this, so
 * each count is the engine's attempts. A listing counts its pages (each is one request).
 */
function counting(inner: AnthropicStoreClient): { client: StoreClient; attempts: Record<Counted, number> } {
  const attempts: Record<Counted, number> = { list: 0, listVersions: 0, get: 0, create: 0, update: 0, delete: 0 };
  const pages = <T>(op: Counted, walk: AsyncIterable<T>): AsyncIterable<T> => ({
    async *[Symbol.asyncIterator]() {
      attempts[op]++;
      // Walked by hand: a listing's pages past the first (100 memories) are requests too; the stores here fit in one.
      yield* walk;
    },
  });
  const client: StoreClient = {
    list: (storeId, opts) => pages('list', inner.list(storeId, opts)),
    listVersions: (storeId, opts) => pages('listVersions', inner.listVersions(storeId, opts)),
    get: (...args) => (attempts.get++, inner.get(...args)),
    create: (...args) => (attempts.create++, inner.create(...args)),
    update: (...args) => (attempts.update++, inner.update(...args)),
    delete: (...args) => (attempts.delete++, inner.delete(...args)),
  };
  return { client, attempts };
}

let server: MemoryApiServer;
let fs: MemfsFileSystem;

beforeEach(async () => {
  // A short retry-after: were the SDK to retry, it would do so at once rather than slow the test.
  server = new MemoryApiServer({ retryAfterSeconds: 0.01 });
  await server.start();
  fs = new MemfsFileSystem({ [ROOT]: null });
});
afterEach(async () => {
  await server.close();
});

async function mounted(): Promise<{ mounter: MemoryMounter; attempts: Record<Counted, number> }> {
  server.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta' });
  // maxRetries not given: the SDK's default, as a host would leave it.
  const sdk = new Anthropic({ apiKey: 'test', baseURL: server.baseURL });
  const { client, attempts } = counting(new AnthropicStoreClient({ client: sdk }));
  const mounter = new MemoryMounter({
    storeClient: client,
    fileSystem: fs,
    memoryRoot: ROOT,
    syncTimeout: 10,
    deleteGracePeriod: 0,
    newFileSettle: 0, // a test writes, then syncs: nothing is mid-write
  });
  await mounter.materialize([{ type: 'memory_store', memory_store_id: STORE, name: 'notes' }]);
  return { mounter, attempts };
}

/** What the server received per route, beside what the engine attempted, for the routes counted. */
function requestsAndAttempts(attempts: Record<Counted, number>): { requests: Record<Counted, number>; attempts: Record<Counted, number> } {
  const requests = Object.fromEntries(
    (Object.keys(ROUTE) as Counted[]).map((op) => [op, server.requestCount(ROUTE[op])]),
  ) as Record<Counted, number>;
  return { requests, attempts: { ...attempts } };
}

describe('one owner of retries: the SDK never retries under the engine', () => {
  it('a burst of 503s on every kind of call: each engine attempt is exactly one HTTP request', async () => {
    const { mounter, attempts } = await mounted();
    await fs.writeFile(`${DIR}/a.md`, encoder.encode('alpha, edited'));
    await fs.rm(`${DIR}/b.md`);
    server.resetRequests();
    for (const op of Object.keys(attempts) as Counted[]) attempts[op] = 0;
    for (const route of ['list', 'list_versions', 'update', 'delete'] as const) server.failNext(route, 503, 3);
    const report = (await mounter.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ status: 'synced', pushed: ['/a.md'], deletedRemote: ['/b.md'], errors: [] });
    const seen = requestsAndAttempts(attempts);
    expect(seen.requests).toEqual(seen.attempts);
    // The engine's own policy: three 503s, then the answer.
    expect(seen.requests.update).toBe(4);
    expect(seen.requests.delete).toBe(4);
    await mounter.finalize();
  });

  it('a create answered 503 is sent once: the engine never repeats it, and neither does the SDK', async () => {
    const { mounter, attempts } = await mounted();
    await fs.writeFile(`${DIR}/n.md`, encoder.encode('new here'));
    server.failNext('create', 503);
    const first = (await mounter.reconcile({ force: true }))!.stores[0]!;
    expect(first.errors).toMatchObject([{ path: '/n.md', operation: 'push', kind: 'unavailable' }]);
    expect(server.requestCount('create')).toBe(1);
    expect(attempts.create).toBe(1);
    expect(server.snapshot(STORE)['/n.md']).toBeUndefined();
    // The next pass finds the store without it and creates it: the second create in all.
    const second = (await mounter.reconcile({ force: true }))!.stores[0]!;
    expect(second).toMatchObject({ pushed: ['/n.md'], errors: [] });
    expect(server.requestCount('create')).toBe(2);
    expect(server.snapshot(STORE)['/n.md']).toBe('new here');
    await mounter.finalize();
  });
});
