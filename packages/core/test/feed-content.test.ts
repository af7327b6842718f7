import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InMemoryStoreClient, ManualClock } from '@memory-mounter/testing';
import type { MemoryMounter, StoreMemoryVersion } from '@memory-mounter/core';
import { FEED_CONTENT_MAX_VERSIONS } from '../src/remote/remote-view.js';
import { MAX_MEMORY_BYTES } from '../src/model/limits.js';
import { sha256Hex } from '../src/model/sha256.js';
import { encodeUtf8 } from '../src/model/utf8.js';
import { DISKS, notesResource, STORE, useHarness } from './harness.js';

/**
 * Issue 24 item 1: changed memories arrive with the feed read (the full view) when few versions
 * are new, so k remote changes cost ⌈k / 20⌉ feed pages and no fetch; a larger burst is read
 * again in basic pages, and only what the content read did not carry is fetched. Content is
 * taken only where it hashes to its version's sha and is within the size limit.
 */

const ops = (client: InMemoryStoreClient, from: number) => client.requests.slice(from).map((r) => (r.withContent ? `${r.op}+content` : r.op));

describe.each(DISKS)('remote changes with the feed read (%s)', (disk) => {
  const h = useHarness(disk);
  let clock: ManualClock;
  let client: InMemoryStoreClient;

  beforeEach(() => {
    clock = new ManualClock();
    client = new InMemoryStoreClient({ now: clock.now });
    vi.useFakeTimers({ toFake: ['performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Time passes on both clocks: the store's and the host's monotonic one (faked). */
  function wait(ms: number): void {
    clock.advance(ms);
    vi.advanceTimersByTime(ms);
  }

  async function mount(seed: Record<string, string>): Promise<MemoryMounter> {
    client.seed(STORE, seed);
    wait(10_000);
    const m = h.mounter({ storeClient: client });
    await m.materialize([notesResource()]);
    // Past the download's overlap: the feed from here on holds only what the test writes.
    await m.reconcile({ force: true });
    wait(10_000);
    await m.reconcile({ force: true });
    wait(10_000);
    return m;
  }

  const notes = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`/f${i % 4}/n${i}.md`, `note ${i}`]));
  const file = (path: string) => h.read(`${h.notesDir}${path}`);

  it('20 remote changes: one feed page with content, no fetch', async () => {
    const m = await mount(notes(40));
    for (let i = 0; i < 20; i++) {
      clock.advance(1);
      client.writeMemory(STORE, `/f${i % 4}/n${i}.md`, `note ${i}, edited`);
    }
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(client, before)).toEqual(['listVersions+content']);
    expect(report.pulled).toHaveLength(20);
    for (let i = 0; i < 20; i++) expect(await file(`/f${i % 4}/n${i}.md`)).toBe(`note ${i}, edited`);
  });

  it('20 remote and 20 local changes: one feed page and 20 writes; the next idle pass one request', async () => {
    const m = await mount(notes(40));
    for (let i = 0; i < 20; i++) {
      clock.advance(1);
      client.writeMemory(STORE, `/f${i % 4}/n${i}.md`, `remote ${i}`);
      await h.write(`${h.notesDir}/f${(20 + i) % 4}/n${20 + i}.md`, `local ${20 + i}`);
    }
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(client, before).sort()).toEqual(['listVersions+content', ...Array(20).fill('update')]);
    expect(report.pulled).toHaveLength(20);
    expect(report.pushed).toHaveLength(20);
    wait(10_000);
    const next = client.requests.length;
    await m.reconcile({ force: true });
    expect(client.requests.length - next).toBe(1);
  });

  it(`a burst of more than ${FEED_CONTENT_MAX_VERSIONS} versions: read again in basic pages, and what the content read missed read with content`, async () => {
    const k = FEED_CONTENT_MAX_VERSIONS + 30;
    const m = await mount(notes(k));
    for (let i = 0; i < k; i++) {
      clock.advance(1);
      client.writeMemory(STORE, `/f${i % 4}/n${i}.md`, `note ${i}, edited`);
    }
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    // 6 pages of 20 (the 101st version says there are more), then the basic walk (2 pages of 100),
    // then the 30 versions the content read did not reach (newest first), again with content.
    const contentPages = Math.ceil((FEED_CONTENT_MAX_VERSIONS + 1) / 20);
    const rest = k - (FEED_CONTENT_MAX_VERSIONS + 1);
    expect(ops(client, before)).toEqual([
      ...Array(contentPages).fill('listVersions+content'),
      ...Array(Math.ceil(k / 100)).fill('listVersions'),
      ...Array(Math.ceil(rest / 20)).fill('listVersions+content'),
    ]);
    expect(report.pulled).toHaveLength(k);
    for (let i = 0; i < k; i++) expect(await file(`/f${i % 4}/n${i}.md`)).toBe(`note ${i}, edited`);
  });

  it('after many writes of its own, the next read is basic from the start: their versions would carry content for nothing', async () => {
    const m = await mount(notes(FEED_CONTENT_MAX_VERSIONS));
    for (let i = 0; i < FEED_CONTENT_MAX_VERSIONS; i++) await h.write(`${h.notesDir}/f${i % 4}/n${i}.md`, `local ${i}`);
    wait(1_000);
    expect((await m.reconcile({ force: true }))!.stores[0]!.pushed).toHaveLength(FEED_CONTENT_MAX_VERSIONS);
    clock.advance(1);
    client.writeMemory(STORE, '/f0/n0.md', 'remote');
    const before = client.requests.length;
    await m.reconcile({ force: true });
    expect(ops(client, before).sort()).toEqual(['get', 'listVersions', 'listVersions']);
    expect(await file('/f0/n0.md')).toBe('remote');
  });

  it('content that does not hash to its version sha is not written: the memory is fetched', async () => {
    const m = await mount({ '/a.md': 'alpha', '/b.md': 'beta' });
    const listVersions = client.listVersions.bind(client);
    client.listVersions = async function* (storeId, opts): AsyncGenerator<StoreMemoryVersion> {
      for await (const version of listVersions(storeId, opts)) {
        yield typeof version.content === 'string' && version.path === '/a.md' ? { ...version, content: 'forged' } : version;
      }
    };
    clock.advance(1);
    client.writeMemory(STORE, '/a.md', 'alpha 2');
    client.writeMemory(STORE, '/b.md', 'beta 2');
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(client, before).sort()).toEqual(['get', 'listVersions+content']);
    expect(client.requests.slice(before).find((r) => r.op === 'get')?.memoryId).toBe(client.memories(STORE).find((r) => r.path === '/a.md')!.id);
    expect(report).toMatchObject({ errors: [] });
    expect(await file('/a.md')).toBe('alpha 2');
    expect(await file('/b.md')).toBe('beta 2');
  });

  it('over the size limit: not carried, fetched and refused as before (remote_too_large)', async () => {
    // The emulator refuses such content, as the service does; a store that holds one anyway is
    // stood in for by rewriting what the feed and the fetch answer.
    const m = await mount({ '/a.md': 'alpha' });
    const big = 'x'.repeat(MAX_MEMORY_BYTES + 1);
    const bigSha = sha256Hex(encodeUtf8(big));
    const listVersions = client.listVersions.bind(client);
    client.listVersions = async function* (storeId, opts): AsyncGenerator<StoreMemoryVersion> {
      for await (const version of listVersions(storeId, opts)) {
        yield version.path === '/a.md' && version.content_sha256 !== null && version.operation === 'modified'
          ? { ...version, content_sha256: bigSha, content_size_bytes: big.length, ...(opts?.withContent && { content: big }) }
          : version;
      }
    };
    const get = client.get.bind(client);
    client.get = async (storeId, memoryId, opts) => ({ ...(await get(storeId, memoryId, opts)), content: big, content_sha256: bigSha });
    clock.advance(1);
    client.writeMemory(STORE, '/a.md', 'alpha 2');
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(client, before).sort()).toEqual(['get', 'listVersions+content']);
    expect(report.skippedPaths).toMatchObject([{ path: '/a.md', code: 'remote_too_large' }]);
    expect(await file('/a.md')).toBe('alpha');
  });

  it('a client that ignores withContent: every pull is fetched, as before', async () => {
    const m = await mount({ '/a.md': 'alpha' });
    const listVersions = client.listVersions.bind(client);
    client.listVersions = (storeId, opts) => listVersions(storeId, { ...opts, withContent: false });
    clock.advance(1);
    client.writeMemory(STORE, '/a.md', 'alpha 2');
    const before = client.requests.length;
    await m.reconcile({ force: true });
    expect(ops(client, before).sort()).toEqual(['get', 'listVersions']);
    expect(await file('/a.md')).toBe('alpha 2');
  });
});
