import { describe, expect, it } from 'vitest';
import { InMemoryStoreClient, ManualClock } from '@memory-mounter/testing';
import { StoreError, type StoreMemory, type StoreSyncReport, type SyncReport } from '@memory-mounter/core';
import { DISKS, notesResource, STORE, useHarness, withoutChangeFeed, type Harness } from './harness.js';
import { LISTING_CHAIN_MAX } from '../src/decide/feed-fold.js';

/**
 * Issue 18 item 2 (SPEC 6.6): a memory absent from one listing is deleted locally only when
 * corroborated. A paged full listing can miss a memory while another writer deletes or renames;
 * the engine used to delete the file as a remote deletion, and since no later version names that
 * memory, the change feed never brought it back (only finalize's full listing did).
 */

/**
 * Makes `client`'s content-free listings pass through `edit`, each listing with its own count of
 * memories yielded so far: `edit` returns false to drop a memory from that listing (as a service
 * paging by offset does when another writer deletes before the cursor), and may act on the store
 * between two memories (another writer acting while the listing is under way). Listings with
 * content (the download) are left alone. The client keeps its folder walk off, so that every full
 * listing is the one paged walk edited here.
 */
function editListings(client: InMemoryStoreClient, edit: (memory: StoreMemory, index: number) => boolean): void {
  const list = client.list.bind(client);
  Object.assign(client, {
    listFolder: undefined,
    list: (storeId: string, opts: Parameters<InMemoryStoreClient['list']>[1] = {}): AsyncIterable<StoreMemory> => {
      const inner = list(storeId, opts);
      if (opts.withContent) return inner;
      return (async function* () {
        let index = 0;
        for await (const memory of inner) if (edit(memory, index++)) yield memory;
      })();
    },
  });
}

/** The one store's report of a pass. */
const only = (report: SyncReport | null): StoreSyncReport => report!.stores[0]!;
const ops = (client: InMemoryStoreClient, from: number) => client.requests.slice(from).map((r) => r.op);
const codes = (store: StoreSyncReport, code: string) => store.skippedPaths.filter((s) => s.code === code).map((s) => s.path).sort();

describe.each(DISKS)('a memory absent from one listing on %s', (kind) => {
  const h: Harness = useHarness(kind);
  const file = (path: string) => h.read(`${h.notesDir}${path}`);

  it.each(['read_write', 'read_only'] as const)(
    '%s: a listing that skips one memory while another writer deletes one deletes only the deleted one; the next pass, whose feed read shows that writer, lists once more and needs nothing back',
    async (access) => {
      // Every second pass lists in full: pass 1 reads the feed, pass 2 lists, pass 3 reads the feed.
      const m = await h.mountNotes({ fullListingEvery: 2 }, undefined, { access });
      let listings = 0;
      editListings(h.client, (memory, index) => {
        if (index === 0) listings++;
        // Another writer's deletion of /a.md moved the page under the cursor: /b.md is skipped.
        return !(listings === 1 && memory.path === '/b.md');
      });
      expect(only(await m.reconcile({ force: true })).deletedLocal).toEqual([]);
      h.client.deleteMemory(STORE, '/a.md');
      const before = h.client.requests.length;
      const listed = only(await m.reconcile({ force: true }));
      expect(listings).toBe(1);
      // /a.md: the store said not_found when asked, so it goes. /b.md: the store still holds it.
      expect(listed.deletedLocal).toEqual(['/a.md']);
      expect(codes(listed, 'absence_unconfirmed')).toEqual(['/b.md']);
      expect(ops(h.client, before).filter((op) => op === 'get')).toHaveLength(2);
      expect(await file('/a.md')).toBeNull();
      expect(await file('/b.md')).toBe('beta');

      // Pass 3: no version names /b.md, but the feed shows the other writer's deletion of /a.md
      // in the window of pass 2's listing, which does not account for it: that listing may have
      // missed memories (it did), so this pass lists again (feed-fold.ts,
      // `listed_while_written`), and checks that listing at once with one feed read: nothing
      // was written while it paged, so it stands. Nothing has to come back: /b.md never left.
      const fed = h.client.requests.length;
      const after = only(await m.reconcile({ force: true }));
      expect(ops(h.client, fed)).toEqual(['listVersions', 'list', 'listVersions']);
      expect(after).toMatchObject({ status: 'synced', deletedLocal: [], pulled: [], skippedPaths: [] });
      expect(await file('/b.md')).toBe('beta');
      expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'beta', '/d/c.md': 'gamma' });
      // And the view holds it again: an edit by another writer arrives through the feed alone
      // (pass 4), with no doubt that calls for a listing (the listing of pass 3 was checked in pass 3).
      h.client.writeMemory(STORE, '/b.md', 'beta, edited elsewhere');
      h.clock.advance(1);
      const fedAgain = h.client.requests.length;
      const edited = only(await m.reconcile({ force: true }));
      expect(ops(h.client, fedAgain)).not.toContain('list');
      expect(edited.pulled).toEqual(['/b.md']);
      expect(await file('/b.md')).toBe('beta, edited elsewhere');
      await m.finalize();
    },
  );

  it('a memory renamed by another writer while the listing pages is absent at both paths: nothing is deleted, and the next pass follows the rename', async () => {
    withoutChangeFeed(h.client);
    // Two pages: /m000 ... /m099, then /m100 ... /m119.
    const seed = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`/m${String(i).padStart(3, '0')}.md`, `note ${i}`]));
    const m = await h.mountNotes({}, seed);
    let armed = true;
    editListings(h.client, (_memory, index) => {
      if (index === 99 && armed) {
        // Between the two pages, from the page not yet read to a name the first page already passed.
        armed = false;
        h.client.renameMemory(STORE, '/m110.md', '/a000.md');
      }
      return true;
    });
    const missed = only(await m.reconcile({ force: true }));
    expect(armed).toBe(false);
    expect(missed.deletedLocal).toEqual([]);
    expect(codes(missed, 'absence_unconfirmed')).toEqual(['/m110.md']);
    expect(missed.skippedPaths.find((s) => s.path === '/m110.md')?.reason).toContain('/a000.md');
    expect(await file('/m110.md')).toBe('note 110');

    const before = h.client.requests.length;
    const followed = only(await m.reconcile({ force: true }));
    expect(followed.renamed).toEqual([{ from: '/m110.md', to: '/a000.md', side: 'local' }]);
    expect(followed).toMatchObject({ deletedLocal: [], pulled: [] });
    expect(ops(h.client, before).filter((op) => op === 'get')).toEqual([]);
    expect(await file('/a000.md')).toBe('note 110');
    expect(await file('/m110.md')).toBeNull();
    await m.finalize();
  });

  it('more than 8 memories missing from one listing: no get for each, nothing deleted; the next pass lists again (even with the feed) and they are all there', async () => {
    const seed = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`/n${String(i).padStart(2, '0')}.md`, `note ${i}`]));
    const m = await h.mountNotes({ fullListingEvery: 2 }, seed);
    let listings = 0;
    editListings(h.client, (memory, index) => {
      if (index === 0) listings++;
      // One listing loses ten memories (a page lost in a store's paging, say).
      return !(listings === 1 && memory.path < '/n10.md');
    });
    await m.reconcile({ force: true }); // the feed
    const before = h.client.requests.length;
    const short = only(await m.reconcile({ force: true }));
    expect(listings).toBe(1);
    expect(short.deletedLocal).toEqual([]);
    expect(codes(short, 'absence_unconfirmed')).toHaveLength(10);
    expect(ops(h.client, before)).not.toContain('get');
    // Next pass: the feed would be due, but the kept absences call for a listing.
    const relisted = h.client.requests.length;
    const again = only(await m.reconcile({ force: true }));
    expect(listings).toBe(2);
    expect(ops(h.client, relisted)).toContain('list');
    expect(again).toMatchObject({ deletedLocal: [], pulled: [], skippedPaths: [] });
    for (let i = 0; i < 12; i++) expect(await file(`/n${String(i).padStart(2, '0')}.md`)).toBe(`note ${i}`);
    await m.finalize();
  });

  it('more than 8 memories really deleted where no feed tells: the second listing confirms, and the files go then', async () => {
    withoutChangeFeed(h.client);
    const seed = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`/n${String(i).padStart(2, '0')}.md`, `note ${i}`]));
    const m = await h.mountNotes({}, seed);
    for (let i = 0; i < 10; i++) h.client.deleteMemory(STORE, `/n${String(i).padStart(2, '0')}.md`);
    const first = only(await m.reconcile({ force: true }));
    expect(first.deletedLocal).toEqual([]);
    expect(codes(first, 'absence_unconfirmed')).toHaveLength(10);
    const second = only(await m.reconcile({ force: true }));
    expect(second.deletedLocal).toHaveLength(10);
    expect(await file('/n00.md')).toBeNull();
    expect(await file('/n11.md')).toBe('note 11');
    await m.finalize();
  });

  it('a deletion the feed reports is corroborated: the file goes in that pass, with no get', async () => {
    const m = await h.mountNotes();
    // The first read after the download also checks its listing (feed-fold.ts, `listed_while_written`): made here with nothing new.
    await m.reconcile({ force: true });
    h.client.deleteMemory(STORE, '/b.md');
    h.clock.advance(1);
    const before = h.client.requests.length;
    const report = only(await m.reconcile({ force: true }));
    expect(ops(h.client, before)).toEqual(['listVersions']);
    expect(report.deletedLocal).toEqual(['/b.md']);
    expect(await file('/b.md')).toBeNull();
    await m.finalize();
  });

  it('a get that fails deletes nothing: the file stays, the next pass lists again, and the second listing\'s miss is asked about again before the delete (B47)', async () => {
    withoutChangeFeed(h.client);
    const m = await h.mountNotes();
    h.client.deleteMemory(STORE, '/b.md');
    // A kind the engine does not retry: the pass ends with it.
    h.client.failNext('get', 'unauthorized');
    const failed = only(await m.reconcile({ force: true }));
    expect(failed.deletedLocal).toEqual([]);
    expect(failed.errors).toMatchObject([{ path: '/b.md', operation: 'delete_local', kind: 'unauthorized' }]);
    expect(await file('/b.md')).toBe('beta');
    const before = h.client.requests.length;
    const settled = only(await m.reconcile({ force: true }));
    expect(settled.deletedLocal).toEqual(['/b.md']);
    expect(ops(h.client, before).filter((op) => op === 'get')).toHaveLength(1);
    await m.finalize();
  });
});

/**
 * B28: the listing made because the first read after another listing found another writer
 * acting (`listed_while_written`) can itself miss a memory while that writer acts. It is checked
 * at once, in the same pass, by one feed read, up to LISTING_CHAIN_MAX listings in a row
 * (feed-fold.ts).
 */
describe.each(DISKS)('a listing made to check another, itself written during, on %s', (kind) => {
  const h: Harness = useHarness(kind);
  const file = (path: string) => h.read(`${h.notesDir}${path}`);
  const reads = (from: number) => ops(h.client, from).filter((op) => op === 'list' || op === 'listVersions');

  it('it misses the memory the first read found while another writer writes: the check at once lists again, and that memory is pulled in the same pass (it stayed out until the listing cadence)', async () => {
    const m = await h.mountNotes();
    let listings = 0;
    editListings(h.client, (memory, index) => {
      // The first page is read: the other writer's /w.md is not in it, and /new.md falls out.
      if (index === 0 && ++listings === 1) h.client.writeMemory(STORE, '/w.md', 'written while listed');
      return !(listings === 1 && memory.path === '/new.md');
    });
    // After the download another writer creates /new.md: the first read finds a version the
    // download's listing does not account for, and the pass lists.
    h.clock.advance(1);
    h.client.writeMemory(STORE, '/new.md', 'new elsewhere');
    const before = h.client.requests.length;
    const report = only(await m.reconcile({ force: true }));
    expect(reads(before)).toEqual(['listVersions', 'list', 'listVersions', 'list', 'listVersions']);
    expect(listings).toBe(2);
    expect(report.pulled.sort()).toEqual(['/new.md', '/w.md']);
    expect(await file('/new.md')).toBe('new elsewhere');
    // The chain ended with a read folded: the next pass is one feed read.
    const next = h.client.requests.length;
    await m.reconcile({ force: true });
    expect(ops(h.client, next)).toEqual(['listVersions']);
    await m.finalize();
  });

  it('the check read made at once fails: the next pass checks that listing first, lists again, and the memory it missed is pulled then', async () => {
    const m = await h.mountNotes({ requestTimeout: 0.2 });
    let listings = 0;
    editListings(h.client, (memory, index) => {
      if (index === 0 && ++listings === 1) h.client.writeMemory(STORE, '/w.md', 'written while listed');
      return !(listings === 1 && memory.path === '/new.md');
    });
    const listVersions = h.client.listVersions.bind(h.client);
    let pass = 1;
    h.client.listVersions = (storeId, opts) => {
      // Pass 1's check read, after its listing, fails (and its retries, for the feed's budget).
      if (pass === 1 && listings > 0) throw new StoreError('unavailable', 'injected 503', { status: 503 });
      return listVersions(storeId, opts);
    };
    h.clock.advance(1);
    h.client.writeMemory(STORE, '/new.md', 'new elsewhere');
    const first = only(await m.reconcile({ force: true }));
    console.log('DBG1', JSON.stringify(ops(h.client, 0)), JSON.stringify(first));
    expect(listings).toBe(1);
    expect(first.pulled).toEqual([]);
    pass = 2;
    const next = h.client.requests.length;
    const second = only(await m.reconcile({ force: true }));
    expect(reads(next)).toEqual(['listVersions', 'list', 'listVersions']);
    expect(listings).toBe(2);
    expect(second.pulled.sort()).toEqual(['/new.md', '/w.md']);
    expect(await file('/new.md')).toBe('new elsewhere');
    await m.finalize();
  });

  it(`written during every listing: the pass lists ${LISTING_CHAIN_MAX} times in a row and no more; the next pass reads the feed alone and pulls the last write`, async () => {
    const m = await h.mountNotes();
    let listings = 0;
    editListings(h.client, (_memory, index) => {
      if (index === 0) {
        listings++;
        h.client.writeMemory(STORE, `/w${listings}.md`, `written while listing ${listings} paged`);
      }
      return true;
    });
    h.clock.advance(1);
    h.client.writeMemory(STORE, '/new.md', 'new elsewhere');
    const before = h.client.requests.length;
    const first = only(await m.reconcile({ force: true }));
    expect(reads(before)).toEqual(['listVersions', 'list', 'listVersions', 'list', 'listVersions', 'list']);
    expect(listings).toBe(LISTING_CHAIN_MAX);
    expect(first.pulled.sort()).toEqual(['/new.md', '/w1.md', '/w2.md']);
    // The last listing of the chain is not checked: the next read folds the write it did not see.
    const next = h.client.requests.length;
    const second = only(await m.reconcile({ force: true }));
    expect(reads(next)).toEqual(['listVersions']);
    expect(second.pulled).toEqual([`/w${LISTING_CHAIN_MAX}.md`]);
    expect(listings).toBe(LISTING_CHAIN_MAX);
    await m.finalize();
  });
});

/**
 * B50: a listing whose check waits for the next pass's first read, and a fetch in between. The
 * listing showed /n.md as it was before another writer changed it while the listing paged, and
 * missed /z.md, there all along. The pass pulled /n.md with a `get`, which showed the newer
 * state, and learned it: the next read then found /n.md's version known, so nothing called the
 * listing into doubt, and /z.md (whose version was long past the feed's window) stayed out of the
 * view until the listing cadence. The fetch now keeps that contradiction for the check
 * (feed-fold.ts `listingContradicted`). The store's clock is a ManualClock: the versions of
 * /z.md fall out of the feed's window only when it moves.
 */
describe.each(DISKS)('a fetch after an unchecked listing shows another writer acted while it paged, on %s', (kind) => {
  const h: Harness = useHarness(kind);
  const file = (path: string) => h.read(`${h.notesDir}${path}`);
  let storeClock: ManualClock;
  let client: InMemoryStoreClient;
  const reads = (from: number) => ops(client, from).filter((op) => op === 'list' || op === 'listVersions');
  /** An empty store: the download's listing gives the feed no start, so the first pass lists. */
  const mountEmpty = async () => {
    storeClock = new ManualClock();
    client = new InMemoryStoreClient({ now: storeClock.now });
    const m = h.mounter({ storeClient: client });
    await m.materialize([notesResource()]);
    return m;
  };

  it('the next pass checks the listing, lists again, and pulls the memory it missed', async () => {
    const m = await mountEmpty();
    client.writeMemory(STORE, '/z.md', 'there all along');
    storeClock.advance(120_000);
    client.writeMemory(STORE, '/n.md', 'first');
    let listings = 0;
    editListings(client, (memory, index) => {
      if (index === 0) listings++;
      if (listings !== 1) return true;
      // The walk has read /n.md as 'first' already: the other writer changes it (a moment
      // later, not at the first write's instant, which would be a tie of its own), the pages
      // shift, and /z.md falls out.
      if (memory.path === '/n.md') {
        storeClock.advance(1);
        client.writeMemory(STORE, '/n.md', 'second');
      }
      return memory.path !== '/z.md';
    });
    const first = only(await m.reconcile({ force: true }));
    expect(listings).toBe(1);
    expect(first.pulled).toEqual(['/n.md']);
    expect(await file('/n.md')).toBe('second');
    expect(await file('/z.md')).toBeNull();

    const before = client.requests.length;
    const second = only(await m.reconcile({ force: true }));
    // The read in doubt, the listing, and that listing's check at once (it was made for this doubt).
    expect(reads(before)).toEqual(['listVersions', 'list', 'listVersions']);
    expect(second).toMatchObject({ status: 'synced', pulled: ['/z.md'], conflicts: [], errors: [] });
    expect(await file('/z.md')).toBe('there all along');
    // The chain ended with a read folded: the feed alone from then on.
    const next = client.requests.length;
    await m.reconcile({ force: true });
    expect(reads(next)).toEqual(['listVersions']);
    await m.finalize();
  });

  it('a fetch that shows the memory as the listing did calls nothing into doubt', async () => {
    const m = await mountEmpty();
    storeClock.advance(120_000);
    client.writeMemory(STORE, '/n.md', 'only');
    expect(only(await m.reconcile({ force: true })).pulled).toEqual(['/n.md']);
    storeClock.advance(1);
    const before = client.requests.length;
    await m.reconcile({ force: true });
    expect(reads(before)).toEqual(['listVersions']);
    await m.finalize();
  });
});
