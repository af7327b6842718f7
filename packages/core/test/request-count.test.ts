import { describe, expect, it } from 'vitest';
import type { InMemoryStoreClient, StoreRequest } from '@memory-mounter/testing';
import type { MemoryMounter, StoreClient, StoreRequests } from '@memory-mounter/core';
import { DISKS, STORE, useHarness, withoutChangeFeed } from './harness.js';

/**
 * Each store's pass report says what the pass cost in store requests (`requests`): checked
 * against the store client's own request log (one entry per request it received, a listing's
 * pages each), through real passes on both disks.
 */

const WRITE_OPS = new Set(['create', 'update', 'delete']);

/** The requests `client` logged for STORE from entry `from` on, as a report would count them (retries aside). */
function logged(client: InMemoryStoreClient, from: number): Omit<StoreRequests, 'retries'> {
  const sent = client.requests.slice(from).filter((r: StoreRequest) => r.storeId === STORE);
  const writes = sent.filter((r) => WRITE_OPS.has(r.op)).length;
  return { total: sent.length, reads: sent.length - writes, writes };
}

/** A forced pass of the only store: its report's `requests`, and what the client logged meanwhile. */
async function pass(m: MemoryMounter, client: InMemoryStoreClient): Promise<{ counted: StoreRequests; log: Omit<StoreRequests, 'retries'> }> {
  const from = client.requests.length;
  const report = await m.reconcile({ force: true });
  return { counted: report!.stores[0]!.requests, log: logged(client, from) };
}

describe.each(DISKS)('requests per pass per store, on %s', (disk) => {
  const h = useHarness(disk);

  it('the materialize download: status() says what it cost', async () => {
    const m = h.mounter();
    h.client.seed(STORE, Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`/n${i}.md`, `${i}`])));
    await m.materialize([{ type: 'memory_store', memory_store_id: STORE, name: 'Notes' }]);
    // 45 memories with content, 20 a page: three listing requests and nothing else.
    expect(logged(h.client, 0)).toEqual({ total: 3, reads: 3, writes: 0 });
    expect(m.status()[0]!.lastRequests).toEqual({ total: 3, reads: 3, writes: 0, retries: 0 });
    await m.finalize();
  });

  it('an idle pass costs one request (one page of the change feed)', async () => {
    const m = await h.mountNotes();
    await m.reconcile({ force: true }); // the first read after the download checks its listing
    const idle = await pass(m, h.client);
    expect(idle.log).toEqual({ total: 1, reads: 1, writes: 0 });
    expect(idle.counted).toEqual({ ...idle.log, retries: 0 });
    expect(m.status()[0]!.lastRequests).toEqual(idle.counted);
    await m.finalize();
  });

  it.each([3, 25])('a pass with %i remote changes counts every page of the feed that brought them', async (k) => {
    const m = await h.mountNotes();
    await m.reconcile({ force: true });
    for (let i = 0; i < k; i++) h.client.writeMemory(STORE, `/remote/${i}.md`, `remote ${i}`);
    const changed = await pass(m, h.client);
    expect(changed.counted).toEqual({ ...changed.log, retries: 0 });
    // 20 versions with content a page: ⌈k / 20⌉ pages, the content carried, nothing fetched.
    expect(changed.counted.total).toBe(Math.ceil(k / 20));
    await m.finalize();
  });

  it('a pass with local changes counts its writes beside its reads', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 });
    await m.reconcile({ force: true });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    await h.write(`${h.notesDir}/new.md`, 'new');
    await h.remove(`${h.notesDir}/b.md`);
    const local = await pass(m, h.client);
    expect(local.log).toEqual({ total: 4, reads: 1, writes: 3 });
    expect(local.counted).toEqual({ ...local.log, retries: 0 });
    await m.finalize();
  });

  it('a retried write counts each attempt, the repeat as a retry', async () => {
    const m = await h.mountNotes();
    await m.reconcile({ force: true });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    h.client.failNext('update', 'unavailable');
    const retried = await pass(m, h.client);
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited');
    expect(retried.log).toEqual({ total: 3, reads: 1, writes: 2 });
    expect(retried.counted).toEqual({ ...retried.log, retries: 1 });
    // The pass's log line says it too.
    expect(h.logger.lines.filter((l) => l.msg === 'store synced').at(-1)?.fields).toMatchObject({ requests: 3, retries: 1 });
    await m.finalize();
  });

  it('a full listing of many pages counts each page, and a listing tried again counts both walks', async () => {
    withoutChangeFeed(h.client);
    const m = await h.mountNotes({}, Object.fromEntries(Array.from({ length: 230 }, (_, i) => [`/n${i}.md`, `${i}`])));
    const listed = await pass(m, h.client);
    // 230 memories without content, 100 a page.
    expect(listed.log).toEqual({ total: 3, reads: 3, writes: 0 });
    expect(listed.counted).toEqual({ ...listed.log, retries: 0 });
    h.client.failNext('list', 'unavailable');
    const again = await pass(m, h.client);
    // The failed walk's first page, then a whole walk again.
    expect(again.log).toEqual({ total: 4, reads: 4, writes: 0 });
    expect(again.counted).toEqual({ ...again.log, retries: 3 });
    await m.finalize();
  });

  it('a client that never says when it requests a page has its pages counted as the service pages them', async () => {
    // The same client, with every listing's `onPage` withheld from it.
    const inner = h.client;
    const silent: StoreClient = {
      list: (id, opts) => inner.list(id, { ...opts, onPage: undefined }),
      get: (...args) => inner.get(...args),
      create: (...args) => inner.create(...args),
      update: (...args) => inner.update(...args),
      delete: (...args) => inner.delete(...args),
      listVersions: (id, opts) => inner.listVersions(id, { ...opts, onPage: undefined }),
    };
    const m = await h.mountNotes({ storeClient: silent }, Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`/n${i}.md`, `${i}`])));
    expect(m.status()[0]!.lastRequests).toEqual({ total: 3, reads: 3, writes: 0, retries: 0 });
    await m.reconcile({ force: true });
    const idle = await pass(m, inner);
    expect(idle.counted).toEqual({ total: 1, reads: 1, writes: 0, retries: 0 });
    for (let i = 0; i < 25; i++) inner.writeMemory(STORE, `/remote/${i}.md`, `remote ${i}`);
    const changed = await pass(m, inner);
    // A basic page of the feed (45 versions of the download are known ahead), then the 25 new
    // ones again with content: 2 pages of 20.
    expect(changed.log).toEqual({ total: 3, reads: 3, writes: 0 });
    expect(changed.counted).toEqual({ ...changed.log, retries: 0 });
    await m.finalize();
  });
});
