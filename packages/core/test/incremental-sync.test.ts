import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InMemoryStoreClient, ManualClock } from '@memory-mounter/testing';
import { parseRecord, recordFileName, sha256Hex, StoreError, type MemoryMounter, type MemoryMounterOptions, type StoreMemoryVersion } from '@memory-mounter/core';
import { FEED_OVERLAP_MS } from '../src/decide/feed-fold.js';
import { DEFAULT_TRANSFER_CONCURRENCY } from '../src/model/limits.js';
import { fanOutPays } from '../src/remote/store-listing.js';
import { notesResource, STORE, useHarness, withoutChangeFeed, type Harness } from './harness.js';

/**
 * SPEC 6.4, issue 9 items 1, 3 and 4 through the mounter: what each pass asks the store, and
 * that the change feed never makes the mount differ from what a full listing would have made.
 * The store's clock is a ManualClock (it stands still unless moved: versions tie on purpose);
 * the host's monotonic clock is faked where a test needs time to pass on it.
 */

/** `n` memories of ~1 kB in `folders` folders: /f00/n0000.md ... */
function manyMemories(n: number, folders: number): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`/f${String(i % folders).padStart(2, '0')}/n${String(i).padStart(4, '0')}.md`, `note ${i}\n${'x'.repeat(1_000)}`]),
  );
}

const ops = (client: InMemoryStoreClient, from: number) => client.requests.slice(from).map((r) => r.op);

describe('incremental sync through the change feed', () => {
  const h = useHarness('memfs');
  let clock: ManualClock;
  let client: InMemoryStoreClient;

  beforeEach(() => {
    clock = new ManualClock();
    client = new InMemoryStoreClient({ now: clock.now });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  async function mount(seed: Record<string, string>, options: Partial<MemoryMounterOptions> = {}): Promise<MemoryMounter> {
    client.seed(STORE, seed);
    clock.advance(1_000);
    const m = h.mounter({ storeClient: client, ...options });
    await m.materialize([notesResource()]);
    return m;
  }

  /** Time passes on both clocks: the store's and the host's monotonic one (faked). */
  function wait(ms: number): void {
    clock.advance(ms);
    vi.advanceTimersByTime(ms);
  }

  const file = (path: string) => h.read(`${h.notesDir}${path}`);

  it('an idle pass is one request (one feed page) at 2,000 memories, pass after pass', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const m = await mount(manyMemories(2_000, 40));
    // The first read after the download starts before the store's newest write, less the
    // overlap: it meets the memories written within that moment again (here, all of them).
    await m.reconcile({ force: true });
    wait(FEED_OVERLAP_MS + 1_000);
    await m.reconcile({ force: true });
    for (let pass = 0; pass < 3; pass++) {
      const before = client.requests.length;
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(ops(client, before)).toEqual(['listVersions']);
      expect(report).toMatchObject({ status: 'synced', pulled: [], pushed: [], errors: [] });
      wait(15_000);
    }
  });

  // Found by the model fuzz (feed cases): the crash-recovery record's client wrapped the host's
  // without its optional methods, so with a stateDir every pass listed in full and every
  // download walked one listing.
  it('with a stateDir (crash-recovery records) too: the download fans out by folder and an idle pass is one feed read', async () => {
    await h.fs.mkdir('/host/state', { recursive: true });
    const m = await mount({ '/a.md': 'alpha', '/d/c.md': 'gamma' }, { stateDir: '/host/state' });
    expect(client.requests.filter((r) => r.depth === 1).length).toBeGreaterThan(0);
    await m.reconcile({ force: true });
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(client, before)).toEqual(['listVersions']);
    expect(report).toMatchObject({ status: 'synced', errors: [] });
  });

  // Before issue 21 the record learned memory paths from the store's answers (a client wrapper)
  // and named an update's path by its memory id: a memory the feed brought with its content (never
  // listed, never fetched) had no path there, so the push of its edit went out unrecorded.
  it('with a stateDir: the edit of a memory the feed brought (never listed nor fetched) is in the record before its push goes out', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const stateDir = '/host/state';
    await h.fs.mkdir(stateDir, { recursive: true });
    const m = await mount({ '/a.md': 'alpha' }, { stateDir });
    await m.reconcile({ force: true });
    wait(FEED_OVERLAP_MS + 1_000);
    await m.reconcile({ force: true });
    client.writeMemory(STORE, '/n.md', 'from the feed');
    const before = client.requests.length;
    expect((await m.reconcile({ force: true }))!.stores[0]!.pulled).toEqual(['/n.md']);
    expect(ops(client, before)).toEqual(['listVersions']);
    await h.write(`${h.notesDir}/n.md`, 'edited here');
    let atPush: Record<string, string> | undefined;
    const update = client.update.bind(client);
    client.update = async (...args) => {
      const parsed = parseRecord(await h.fs.readFile(`${stateDir}/${recordFileName(h.notesDir)}`));
      if (!parsed.ok) throw new Error(parsed.reason);
      atPush = parsed.record.unsettled_writes;
      return update(...args);
    };
    expect((await m.reconcile({ force: true }))!.stores[0]!).toMatchObject({ pushed: ['/n.md'], errors: [] });
    expect(atPush).toEqual({ '/n.md': sha256Hex(new TextEncoder().encode('edited here')) });
    await m.finalize();
  });

  it('a store written over time: the first pass after the download is one request too', async () => {
    client.seed(STORE, manyMemories(500, 10));
    clock.advance(3_600_000);
    const m = await mount({ '/latest.md': 'written an hour later' });
    const before = client.requests.length;
    await m.reconcile({ force: true });
    expect(ops(client, before)).toEqual(['listVersions']);
  });

  it('a remote change costs one feed page, its content with it; a rename and a delete none more', async () => {
    const m = await mount({ '/a.md': 'alpha', '/b.md': 'beta', '/d/c.md': 'gamma' });
    // The first read after the download also checks its listing (feed-fold.ts, `listed_while_written`): made here with nothing new.
    await m.reconcile({ force: true });
    clock.advance(1_000);
    client.writeMemory(STORE, '/a.md', 'alpha 2');
    client.renameMemory(STORE, '/b.md', '/e/b.md');
    client.deleteMemory(STORE, '/d/c.md');
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    // The changed memory's content came with the feed (the full view); the renamed one is moved
    // on disk, not fetched again.
    expect(client.requests.slice(before)).toMatchObject([{ op: 'listVersions', withContent: true }]);
    expect(report.pulled).toEqual(['/a.md']);
    expect(report.renamed).toEqual([{ from: '/b.md', to: '/e/b.md', side: 'local' }]);
    expect(report.deletedLocal).toEqual(['/d/c.md']);
    expect(await file('/b.md')).toBeNull();
    expect(await file('/a.md')).toBe('alpha 2');
    expect(await file('/e/b.md')).toBe('beta');
    expect(await file('/d/c.md')).toBeNull();
  });

  it("the engine's own writes come back through the feed as known: the next pass transfers nothing", async () => {
    const m = await mount({ '/a.md': 'alpha' });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    await h.write(`${h.notesDir}/n.md`, 'new');
    clock.advance(1_000);
    expect((await m.reconcile({ force: true }))!.stores[0]!.pushed.sort()).toEqual(['/a.md', '/n.md']);
    clock.advance(1_000);
    const before = client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(client, before)).toEqual(['listVersions']);
    expect(report).toMatchObject({ pulled: [], pushed: [], conflicts: [] });
  });

  describe('feed faults: any doubt is one full listing, then the feed again', () => {
    // Found by the model fuzz (seed 4242 run 436): a spurious not_found on an update made the
    // view forget a memory that was still there; no version ever came to say otherwise, so every
    // feed pass re-created it and failed path_conflict, until the next full listing (100 passes).
    it('a write the store contradicts (a spurious not_found, then path_conflict): the next pass lists in full and the edit lands', async () => {
      const m = await mount({ '/b.md': 'beta' });
      clock.advance(1_000);
      client.failNext('update', 'not_found');
      await h.write(`${h.notesDir}/b.md`, 'beta, edited');
      const first = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(first.errors.map((e) => e.kind)).toEqual(['path_conflict']);
      clock.advance(1_000);
      const before = client.requests.length;
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(ops(client, before)).toEqual(['list', 'update']);
      expect(report).toMatchObject({ pushed: ['/b.md'], errors: [] });
      expect(client.snapshot(STORE)['/b.md']).toBe('beta, edited');
      // The listing restored the view: the feed again.
      const next = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, next)).toEqual(['listVersions']);
    });

    it('two versions of one memory at one instant (the store clock stood still): a full listing, then the feed', async () => {
      const m = await mount({ '/a.md': 'alpha' });
      clock.advance(1_000);
      client.writeMemory(STORE, '/a.md', 'first');
      client.writeMemory(STORE, '/a.md', 'second'); // same instant
      const before = client.requests.length;
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      // The feed's content rides through the listing its doubt called for: matched by sha.
      expect(ops(client, before)).toEqual(['listVersions', 'list']);
      expect(report.pulled).toEqual(['/a.md']);
      expect(await file('/a.md')).toBe('second');
      // The tied versions are still within the overlap: they are known now, and cause no second listing.
      const next = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, next)).toEqual(['listVersions']);
    });

    it('versions read in any order, some twice: folded by time and id, no listing needed', async () => {
      const m = await mount({ '/a.md': 'alpha', '/b.md': 'beta' });
      // The first read after the download also checks its listing (feed-fold.ts, `listed_while_written`): made here with nothing new.
      await m.reconcile({ force: true });
      const listVersions = client.listVersions.bind(client);
      client.listVersions = async function* (storeId, opts): AsyncGenerator<StoreMemoryVersion> {
        const all: StoreMemoryVersion[] = [];
        for await (const version of listVersions(storeId, opts)) all.push(version);
        // Oldest first, then each again: the opposite of the emulator's order, with duplicates.
        yield* [...all].reverse();
        yield* all;
      };
      for (const [i, content] of ['one', 'two', 'three'].entries()) {
        clock.advance(10 * (i + 1));
        client.writeMemory(STORE, '/a.md', content);
      }
      client.renameMemory(STORE, '/b.md', '/c.md');
      clock.advance(5);
      client.writeMemory(STORE, '/c.md', 'beta 2');
      const before = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, before).filter((op) => op === 'list')).toEqual([]);
      expect(await file('/a.md')).toBe('three');
      expect(await file('/c.md')).toBe('beta 2');
      expect(await file('/b.md')).toBeNull();
    });

    it('a redacted version: one full listing; the redacted version, still in the overlap, causes no other', async () => {
      const m = await mount({ '/a.md': 'alpha' });
      clock.advance(1_000);
      client.writeMemory(STORE, '/a.md', 'secret');
      clock.advance(10);
      client.writeMemory(STORE, '/a.md', 'redacted and replaced');
      client.redactVersion(STORE, client.versions(STORE).find((v) => v.content === 'secret')!.id);
      const before = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, before).filter((op) => op === 'list')).toEqual(['list']);
      expect(await file('/a.md')).toBe('redacted and replaced');
      const next = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, next)).toEqual(['listVersions']);
    });

    it("a gap (a memory's creation past the store's retention): a full listing finds it", async () => {
      const m = await mount({ '/a.md': 'alpha' });
      client.versionRetentionMs = 1_000;
      client.writeMemory(STORE, '/new.md', 'created');
      clock.advance(2_000); // its 'created' version is gone now
      client.writeMemory(STORE, '/new.md', 'modified');
      const before = client.requests.length;
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(ops(client, before)).toEqual(['listVersions', 'list']);
      expect(report.pulled).toEqual(['/new.md']);
      expect(await file('/new.md')).toBe('modified');
    });

    it.each([
      ['404', 'not_found', 404],
      ['401', 'unauthorized', 401],
      ['403', 'unauthorized', 403],
    ] as const)('%s from the feed: full listings for the rest of the session, said once at info level', async (_label, kind, status) => {
      const m = await mount({ '/a.md': 'alpha' });
      const listVersions = client.listVersions.bind(client);
      let asked = 0;
      client.listVersions = (storeId, opts) => {
        asked++;
        if (asked === 1) throw new StoreError(kind, `injected ${status}`, { status });
        return listVersions(storeId, opts);
      };
      for (let pass = 0; pass < 3; pass++) {
        clock.advance(1_000);
        client.writeMemory(STORE, '/a.md', `alpha ${pass}`);
        const before = client.requests.length;
        await m.reconcile({ force: true });
        expect(ops(client, before)).toEqual(['list', 'get']);
        expect(await file('/a.md')).toBe(`alpha ${pass}`);
      }
      expect(asked).toBe(1);
      const lines = h.logger.lines.filter((l) => /change feed not available/.test(l.msg));
      expect(lines).toMatchObject([{ level: 'info', fields: { memory_store_id: STORE, status, kind } }]);
    });

    it('a feed that fails for a whole pass: that pass lists in full, the next reads the feed again', async () => {
      const m = await mount({ '/a.md': 'alpha' }, { requestTimeout: 0.2 });
      const listVersions = client.listVersions.bind(client);
      let down = true;
      client.listVersions = (storeId, opts) => {
        if (down) throw new StoreError('unavailable', 'injected 503', { status: 503 });
        return listVersions(storeId, opts);
      };
      clock.advance(1_000);
      client.writeMemory(STORE, '/a.md', 'alpha 2');
      const before = client.requests.length;
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(ops(client, before)).toEqual(['list', 'get']);
      expect(report).toMatchObject({ status: 'synced', pulled: ['/a.md'] });
      down = false;
      // The first read after that listing checks it: nothing was written since, so it stands.
      const check = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, check)).toEqual(['listVersions']);
      clock.advance(1_000);
      client.writeMemory(STORE, '/a.md', 'alpha 3');
      const next = client.requests.length;
      await m.reconcile({ force: true });
      expect(ops(client, next)).toEqual(['listVersions']);
      expect(await file('/a.md')).toBe('alpha 3');
      expect(h.logger.lines.filter((l) => /change feed not available/.test(l.msg))).toEqual([]);
    });
  });

  describe('the feed-built view is judged like a listing', () => {
    it('a write of unknown outcome is settled by the feed: no second create, no conflict', async () => {
      const m = await mount({ '/a.md': 'alpha' });
      await h.write(`${h.notesDir}/n.md`, 'new');
      client.failAfterApply('create');
      const first = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(first.errors).toMatchObject([{ path: '/n.md', kind: 'unavailable' }]);
      clock.advance(1_000);
      const before = client.requests.length;
      const second = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(ops(client, before)).toEqual(['listVersions']);
      expect(second).toMatchObject({ pulled: [], pushed: [], conflicts: [], errors: [] });
      expect(client.count('create')).toBe(1);
    });

    it('a remote path the mount must not hold, met in the feed, is skipped with one warning and never written', async () => {
      const m = await mount({ '/a.md': 'alpha' });
      // The first read after the download also checks its listing (feed-fold.ts, `listed_while_written`): made here with nothing new.
      await m.reconcile({ force: true });
      clock.advance(1_000);
      client.writeMemory(STORE, '/.anthropic-memory-store', 'not a marker');
      const before = client.requests.length;
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(ops(client, before)).toEqual(['listVersions']);
      expect(report.skippedPaths).toContainEqual({ path: '/.anthropic-memory-store', code: 'remote_bad_path', reason: expect.stringMatching(/marker/) });
      expect(JSON.parse((await file('/.anthropic-memory-store'))!)).toEqual({ memory_store_id: STORE });
    });
  });

  describe('a full listing at least every fullListingEvery passes or fullListingInterval seconds', () => {
    it('fullListingEvery: 3 lists every third pass', async () => {
      const m = await mount({ '/a.md': 'alpha' }, { fullListingEvery: 3 });
      const reads: string[] = [];
      for (let pass = 0; pass < 6; pass++) {
        const before = client.requests.length;
        await m.reconcile({ force: true });
        reads.push(...ops(client, before));
      }
      // The download was the first listing.
      expect(reads).toEqual(['listVersions', 'listVersions', 'list', 'listVersions', 'listVersions', 'list']);
    });

    it('fullListingInterval: a pass that comes that long after the last listing lists', async () => {
      const m = await mount({ '/a.md': 'alpha' }, { fullListingInterval: 60 });
      const read = async () => {
        const before = client.requests.length;
        await m.reconcile({ force: true });
        return ops(client, before);
      };
      h.clock.advance(59);
      expect(await read()).toEqual(['listVersions']);
      h.clock.advance(1);
      expect(await read()).toEqual(['list']);
      expect(await read()).toEqual(['listVersions']);
    });

    it('a client without the change feed lists every pass', async () => {
      const m = await mount({ '/a.md': 'alpha' });
      withoutChangeFeed(client);
      const before = client.requests.length;
      await m.reconcile({ force: true });
      await m.reconcile({ force: true });
      expect(ops(client, before)).toEqual(['list', 'list']);
    });
  });
});

describe('finalize reads each store once', () => {
  const h = useHarness('memfs');

  async function changed(n: number): Promise<MemoryMounter> {
    const m = await mountMany(h, manyMemories(250, 5));
    const paths = Object.keys(h.client.snapshot(STORE)).slice(0, n);
    for (const path of paths) await h.write(`${h.notesDir}${path}`, `edited ${path}`);
    await h.write(`${h.notesDir}/brand-new.md`, 'new at the end');
    return m;
  }

  it('completed: one listing (the final sync, always in full), no feed read; the flush reuses it and pushes nothing twice', async () => {
    const m = await changed(50);
    const before = h.client.requests.length;
    const report = await m.finalize();
    const asked = ops(h.client, before);
    // 251 memories: one listing of 3 pages, then 51 writes, and nothing else.
    expect(asked.filter((op) => op === 'list')).toHaveLength(3);
    expect(asked.filter((op) => op === 'listVersions')).toHaveLength(0);
    expect(asked.filter((op) => op === 'update')).toHaveLength(50);
    expect(asked.filter((op) => op === 'create')).toHaveLength(1);
    expect(asked).toHaveLength(3 + 51);
    expect(report.sync!.stores[0]!.pushed).toHaveLength(51);
    expect(report.flush.stores[0]).toMatchObject({ status: 'synced', pushed: [], conflicts: [], errors: [] });
    expect(report.unpushed).toEqual([]);
  });

  it('the flush after a final sync that pushed a file: an edit made meanwhile is pushed as an update of the memory just created', async () => {
    const m = await mountMany(h, { '/a.md': 'alpha' });
    await h.write(`${h.notesDir}/n.md`, 'v1');
    // Between the final sync's push and the flush's scan, the agent writes n.md again.
    const create = h.client.create.bind(h.client);
    h.client.create = async (storeId, input, opts) => {
      const created = await create(storeId, input, opts);
      await h.write(`${h.notesDir}/n.md`, 'v2');
      return created;
    };
    const before = h.client.requests.length;
    const report = await m.finalize();
    expect(report.flush.stores[0]!.pushed).toEqual(['/n.md']);
    expect(h.client.snapshot(STORE)['/n.md']).toBe('v2');
    expect(ops(h.client, before).filter((op) => op === 'list' || op === 'listVersions')).toEqual(['list']);
    expect(ops(h.client, before).filter((op) => op === 'create')).toEqual(['create']);
    expect(report.unpushed).toEqual([]);
  });

  it('aborted: one feed read and no listing', async () => {
    const m = await changed(10);
    const before = h.client.requests.length;
    const report = await m.finalize({ outcome: 'aborted' });
    const asked = ops(h.client, before);
    // One read of 3 pages: the 250 memories seeded just before the download are still within
    // the overlap of the store's newest write, so the feed lists their versions again.
    expect(asked.filter((op) => op === 'listVersions' || op === 'list')).toEqual(['listVersions', 'listVersions', 'listVersions']);
    expect(report.flush.stores[0]!.pushed).toHaveLength(11);
  });

  it('a final sync whose listing failed: the flush reads the store itself (no stale reuse)', async () => {
    const m = await changed(5);
    h.client.failNext('list', 'unauthorized');
    const report = await m.finalize();
    expect(report.sync!.stores[0]!.status).toBe('failed');
    expect(report.flush.stores[0]!.pushed).toHaveLength(6);
    expect(report.unpushed).toEqual([]);
  });
});

describe('a full listing fans out by folder when that pays', () => {
  const h = useHarness('memfs');

  it('the final sync of 400 memories in 8 folders: the root and each folder at once, and the view is whole', async () => {
    const m = await mountMany(h, manyMemories(400, 8));
    // Meanwhile in the store: one memory changed, one deleted, one created in a new folder.
    h.client.writeMemory(STORE, '/f03/n0003.md', 'changed in the store');
    h.client.deleteMemory(STORE, '/f05/n0005.md');
    h.client.writeMemory(STORE, '/g/new.md', 'created in the store');
    await h.write(`${h.notesDir}/f01/n0001.md`, 'edited here');
    const before = h.client.requests.length;
    const report = await m.finalize();
    const lists = h.client.requests.slice(before).filter((r) => r.op === 'list');
    // The root one level deep (one page: 8 roll-ups, and the new folder), then each folder.
    expect(lists.filter((r) => r.depth === 1).map((r) => r.path)).toEqual([undefined]);
    expect(lists.filter((r) => r.depth === undefined).map((r) => r.path).sort()).toEqual([
      '/f00/', '/f01/', '/f02/', '/f03/', '/f04/', '/f05/', '/f06/', '/f07/', '/g/',
    ]);
    expect(report.sync!.stores[0]).toMatchObject({ status: 'synced', pushed: ['/f01/n0001.md'], errors: [] });
    expect([...report.sync!.stores[0]!.pulled].sort()).toEqual(['/f03/n0003.md', '/g/new.md']);
    expect(report.sync!.stores[0]!.deletedLocal).toEqual(['/f05/n0005.md']);
    expect(report.sync!.stores[0]!.deletedRemote).toEqual([]);
    expect(report.unpushed).toEqual([]);
    expect(h.client.snapshot(STORE)['/f01/n0001.md']).toBe('edited here');
    expect(Object.keys(h.client.snapshot(STORE))).toHaveLength(400);
  });

  it('its folder listings hold slots of the session pool: never more in flight than transferConcurrency', async () => {
    const m = await h.mountNotes({ transferConcurrency: 3 }, manyMemories(400, 8));
    h.client.latencyMs = 5;
    let inFlight = 0;
    let peak = 0;
    const list = h.client.list.bind(h.client);
    h.client.list = async function* (storeId, opts) {
      inFlight++;
      peak = Math.max(peak, inFlight);
      try {
        yield* list(storeId, opts);
      } finally {
        inFlight--;
      }
    };
    const before = h.client.requests.length;
    const report = await m.finalize();
    expect(h.client.requests.slice(before).filter((r) => r.op === 'list' && r.depth === undefined)).toHaveLength(8);
    expect(peak).toBe(3);
    expect(report.sync!.stores[0]).toMatchObject({ status: 'synced', errors: [] });
  });

  it('pays for many pages in a few folders, not for one page or for many small folders', () => {
    const paths = (n: number, folders: number, under = '') =>
      Object.keys(manyMemories(n, folders)).map((p) => `${under}${p}`);
    expect(fanOutPays(paths(2_000, 40))).toBe(true); // 2 round trips, 41 requests, against 20 pages
    expect(fanOutPays(paths(10_000, 40))).toBe(true); // 1 + 3 round trips against 100
    expect(fanOutPays(paths(2_000, 40, '/memories'))).toBe(true); // a lone top folder is descended
    expect(fanOutPays(paths(100, 10))).toBe(false); // one page already
    expect(fanOutPays([])).toBe(false); // nothing known: walk
    expect(fanOutPays(paths(251, 5))).toBe(false); // 2 round trips against 3: not worth it
    expect(fanOutPays(paths(2_000, 100))).toBe(false); // 2 round trips, but 101 requests against 20
    expect(fanOutPays(paths(2_000, 1))).toBe(false); // one folder: no fan-out to be had
  });
});

describe('parallel materialize', () => {
  const h = useHarness('memfs');

  /** Wraps `client.list` to record the largest number of listings walked at once. */
  function peakListings(client: InMemoryStoreClient): { peak: number } {
    const seen = { peak: 0 };
    let inFlight = 0;
    const list = client.list.bind(client);
    client.list = async function* (storeId, opts) {
      inFlight++;
      seen.peak = Math.max(seen.peak, inFlight);
      try {
        yield* list(storeId, opts);
      } finally {
        inFlight--;
      }
    };
    return seen;
  }

  it('lists the root one level deep, then each folder whole, in parallel, with content', async () => {
    h.client.seed(STORE, { ...manyMemories(400, 40), '/top.md': 'at the root' });
    h.client.latencyMs = 5;
    const seen = peakListings(h.client);
    await h.mounter().materialize([notesResource()]);
    const lists = h.client.requests.filter((r) => r.op === 'list');
    // The root: 40 roll-ups and one memory, 20 rows a page with content.
    expect(lists.filter((r) => r.depth === 1).map((r) => r.path)).toEqual([undefined, undefined, undefined]);
    const folders = lists.filter((r) => r.depth === undefined);
    // Then each folder once (10 memories: one page), as many at a time as the default pool has slots.
    expect(folders.map((r) => r.path).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `/f${String(i).padStart(2, '0')}/`));
    expect(seen.peak).toBe(DEFAULT_TRANSFER_CONCURRENCY);
    expect(h.client.count('get')).toBe(0);
    expect(await h.read(`${h.notesDir}/f07/n0007.md`)).toMatch(/^note 7\n/);
    expect(await h.read(`${h.notesDir}/top.md`)).toBe('at the root');
  });

  it('one pool for the whole session: two stores together never exceed transferConcurrency', async () => {
    h.client.seed(STORE, manyMemories(100, 20));
    h.client.seed('memstore_other', manyMemories(100, 20));
    h.client.latencyMs = 5;
    const seen = peakListings(h.client);
    await h.mounter({ transferConcurrency: 6 }).materialize([notesResource(), { type: 'memory_store', memory_store_id: 'memstore_other', name: 'Other' }]);
    expect(seen.peak).toBe(6);
    expect(h.client.requests.filter((r) => r.op === 'list' && r.depth === undefined)).toHaveLength(40);
  });

  it('a root that holds a single folder is descended: its sub-folders fan out', async () => {
    h.client.seed(STORE, Object.fromEntries(Object.entries(manyMemories(60, 6)).map(([path, content]) => [`/memories${path}`, content])));
    await h.mounter().materialize([notesResource()]);
    const lists = h.client.requests.filter((r) => r.op === 'list');
    expect(lists.filter((r) => r.depth === 1).map((r) => r.path)).toEqual([undefined, '/memories/']);
    expect(lists.filter((r) => r.depth === undefined)).toHaveLength(6);
    expect(Object.keys(h.client.snapshot(STORE))).toHaveLength(60);
    expect(await h.read(`${h.notesDir}/memories/f03/n0003.md`)).toMatch(/^note 3\n/);
  });

  it('without listFolder: one listing with content, page after page, as before', async () => {
    h.client.seed(STORE, manyMemories(100, 10));
    Object.assign(h.client, { listFolder: undefined });
    await h.mounter().materialize([notesResource()]);
    const lists = h.client.requests.filter((r) => r.op === 'list');
    expect(lists).toHaveLength(5); // 100 memories, 20 a page
    expect(lists.every((r) => r.depth === undefined && r.path === undefined)).toBe(true);
  });

  it('a roll-up that is not a sub-folder of the folder listed: the download falls back to one plain listing', async () => {
    h.client.seed(STORE, manyMemories(10, 2));
    const listFolder = h.client.listFolder.bind(h.client);
    h.client.listFolder = async function* (storeId, opts) {
      yield* listFolder(storeId, opts);
      yield { type: 'prefix', path: '/../' };
    };
    await h.mounter().materialize([notesResource()]);
    const plain = h.client.requests.filter((r) => r.op === 'list' && r.depth === undefined);
    expect(plain.map((r) => r.path)).toEqual([undefined]);
    expect(await h.read(`${h.notesDir}/f01/n0001.md`)).toMatch(/^note 1\n/);
  });
});

async function mountMany(h: Harness, seed: Record<string, string>): Promise<MemoryMounter> {
  return h.mountNotes({}, seed);
}
