import { describe, expect, it } from 'vitest';
import { sha256Hex, type MemoryMounter, type StoreMemoryVersion } from '@memory-mounter/core';
import { neverAnsweringFeed, neverAnsweringList, STORE, useHarness, withoutChangeFeed, type Harness } from './harness.js';

/**
 * SPEC 6.2: every store call bounded by requestTimeout, every reconcile pass by syncTimeout, the
 * whole of finalize by finalSyncTimeout + 2 s; `unavailable` retried inside the window where a
 * repeat is safe; every local change that was not pushed named, with its reason.
 *
 * Real clock, small bounds. The stores here never answer *and* ignore their abort signal.
 */

const never = <T>() => new Promise<T>(() => undefined);

async function timed<T>(work: Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await work;
  return { result, ms: Date.now() - started };
}

/** A local edit of /a.md, a new /n.md and a deletion of /b.md: the three kinds of local change. */
async function changeLocally(h: Harness): Promise<void> {
  await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
  await h.write(`${h.notesDir}/n.md`, 'new here');
  await h.remove(`${h.notesDir}/b.md`);
}

function expectEveryChangeNamed(h: Harness, unpushed: { memoryStoreId: string; path: string; reason: string }[], why: RegExp): void {
  expect(unpushed.map((u) => [u.memoryStoreId, u.path])).toEqual([
    [STORE, '/a.md'],
    [STORE, '/b.md'],
    [STORE, '/n.md'],
  ]);
  expect(unpushed.map((u) => u.reason)).toEqual([
    expect.stringMatching(/^edited locally; not pushed: /),
    expect.stringMatching(/^deleted locally; not pushed: /),
    expect.stringMatching(/^new local file; not pushed: /),
  ]);
  for (const u of unpushed) expect(u.reason).toMatch(why);
  const warning = h.logger.warnings().find((w) => w.msg === 'finalize: local changes not pushed before the folder is removed');
  expect(warning?.fields).toMatchObject({ memory_store_id: STORE, paths: ['/a.md', '/b.md', '/n.md'] });
  expect(warning?.fields.unpushed).toEqual(unpushed.map(({ path, reason }) => ({ path, reason })));
}

/** Every request of every kind fails `unavailable` from now on (for this test's lifetime). */
function outage(h: Harness): void {
  for (const op of ['list', 'listVersions', 'get', 'create', 'update', 'delete'] as const) h.client.failNext(op, 'unavailable', 10_000);
}

describe('a store that never answers and ignores its signal', () => {
  const h = useHarness('memfs');

  it('reconcile returns within syncTimeout + 1.5 s; the stalled listing was abandoned and retried', async () => {
    const m = await h.mountNotes({ requestTimeout: 0.2, syncTimeout: 0.5 });
    // The listing is what is timed here: without the change feed, every pass lists.
    withoutChangeFeed(h.client);
    let lists = 0;
    h.client.list = () => {
      lists++;
      return neverAnsweringList();
    };
    const { result: report, ms } = await timed(m.reconcile({ force: true }));
    expect(ms).toBeLessThan(500 + 1_500);
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(lists).toBeGreaterThanOrEqual(2);
    expect(report!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
    const cut = h.logger.warnings().find((w) => w.msg === 'sync pass cut off by a time bound');
    expect(cut?.fields).toMatchObject({ memory_store_id: STORE, bound: 'syncTimeout (0.5 s) ran out' });
  });

  it('a push that never answers: cut off at syncTimeout, nothing lost, sent by the next pass', async () => {
    const m = await h.mountNotes({ requestTimeout: 0.2, syncTimeout: 0.5 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    const update = h.client.update.bind(h.client);
    h.client.update = () => never();
    const { result: report, ms } = await timed(m.reconcile({ force: true }));
    expect(ms).toBeLessThan(500 + 1_500);
    expect(report!.stores[0]!.cutOff).toEqual(['/a.md']);
    expect(report!.stores[0]!.errors).toMatchObject([{ path: '/a.md', operation: 'push', kind: 'unavailable' }]);
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha');
    h.client.update = update;
    const next = await m.reconcile({ force: true });
    expect(next!.stores[0]!.pushed).toEqual(['/a.md']);
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited');
  });

  it.each(['completed', 'aborted'] as const)(
    'finalize (%s) returns within finalSyncTimeout + 2 s and names every unpushed path',
    async (outcome) => {
      const m = await h.mountNotes({ finalSyncTimeout: 0.3 });
      await changeLocally(h);
      h.client.list = neverAnsweringList;
      h.client.listVersions = neverAnsweringFeed;
      const { result: report, ms } = await timed(m.finalize({ outcome }));
      expect(ms).toBeLessThan(300 + 2_000);
      expect(report.timedOut).toEqual({ sync: outcome === 'completed', flush: true });
      expectEveryChangeNamed(h, report.unpushed, /time bound/);
      expect(report.removed).toEqual([h.notesDir]);
    },
  );
});

describe.each(['memfs', 'node'] as const)('finalize while a reconcile pass is stuck (%s)', (disk) => {
  const h = useHarness(disk);

  it('stops the pass instead of waiting for it: both end within finalSyncTimeout + 2 s of the call', async () => {
    // syncTimeout and requestTimeout at their defaults (60 s, 30 s): only finalize can end the pass.
    const m = await h.mountNotes({ finalSyncTimeout: 0.3 });
    await changeLocally(h);
    h.client.list = neverAnsweringList;
    h.client.listVersions = neverAnsweringFeed;
    let reconciled = false;
    const stuck = m.reconcile({ force: true }).then((r) => {
      reconciled = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reconciled).toBe(false);
    const { result: report, ms } = await timed(m.finalize());
    expect(ms).toBeLessThan(300 + 2_000);
    expect(reconciled).toBe(true);
    expect((await stuck)!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
    expect(report.timedOut).toEqual({ sync: true, flush: true });
    expectEveryChangeNamed(h, report.unpushed, /time bound/);
    expect(await h.exists(h.notesDir)).toBe(false);
  });
});

describe('unavailable: retried inside the window where the store makes a repeat safe', () => {
  const h = useHarness('memfs');

  /** Records each update's input and each delete's precondition as the store receives them. */
  function recordWrites(): { updates: unknown[]; deletes: unknown[] } {
    const updates: unknown[] = [];
    const deletes: unknown[] = [];
    const update = h.client.update.bind(h.client);
    const del = h.client.delete.bind(h.client);
    h.client.update = (storeId, memoryId, input, opts) => {
      updates.push(input.expected_content_sha256);
      return update(storeId, memoryId, input, opts);
    };
    h.client.delete = (storeId, memoryId, opts) => {
      deletes.push(opts?.expected_content_sha256);
      return del(storeId, memoryId, opts);
    };
    return { updates, deletes };
  }

  it('a burst shorter than the window: one pass syncs everything; update and delete carry their precondition on every try', async () => {
    const m = await h.mountNotes({ syncTimeout: 10, deleteGracePeriod: 0 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    await h.remove(`${h.notesDir}/b.md`);
    h.client.writeMemory(STORE, '/d/c.md', 'gamma, remote edit');
    const { updates, deletes } = recordWrites();
    h.client.failNext('listVersions', 'unavailable', 2);
    h.client.failNext('get', 'unavailable', 2);
    h.client.failNext('update', 'unavailable', 3);
    h.client.failNext('delete', 'unavailable', 2);
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ status: 'synced', pushed: ['/a.md'], deletedRemote: ['/b.md'], pulled: ['/d/c.md'], errors: [] });
    expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha, edited', '/d/c.md': 'gamma, remote edit' });
    expect(await h.read(`${h.notesDir}/d/c.md`)).toBe('gamma, remote edit');
    expect(updates).toEqual(Array(4).fill(sha256Hex(new TextEncoder().encode('alpha'))));
    expect(deletes).toEqual(Array(3).fill(sha256Hex(new TextEncoder().encode('beta'))));
    // 2 failures, the one that answered (another writer wrote since the download's listing:
    // listed_while_written, so one listing), and the read that checks that listing at once.
    expect(h.client.count('listVersions')).toBe(4);
  });

  it('an update applied but answered unavailable: the retry finds it applied, nothing is lost or doubled', async () => {
    const m = await h.mountNotes({ syncTimeout: 10 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    h.client.failAfterApply('update');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ pushed: ['/a.md'], errors: [] });
    expect(h.client.count('update')).toBe(2);
    const next = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(next).toMatchObject({ pulled: [], pushed: [], conflicts: [] });
  });

  it('a create is never retried: its unknown outcome is settled at the next listing', async () => {
    const m = await h.mountNotes({ syncTimeout: 10 });
    await h.write(`${h.notesDir}/n.md`, 'new here');
    h.client.failAfterApply('create');
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(h.client.count('create')).toBe(1);
    expect(first.errors).toMatchObject([{ path: '/n.md', operation: 'push', kind: 'unavailable' }]);
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second).toMatchObject({ pulled: [], pushed: [], conflicts: [] });
    expect(h.client.count('create')).toBe(1);
    expect(h.client.snapshot(STORE)['/n.md']).toBe('new here');
  });

  it('finalize: two failed listings are retried and everything is pushed', async () => {
    const m = await h.mountNotes({ finalSyncTimeout: 10 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    await h.write(`${h.notesDir}/n.md`, 'new here');
    h.client.failNext('list', 'unavailable', 2);
    const report = await m.finalize();
    expect(report.unpushed).toEqual([]);
    expect(report.sync!.stores[0]!.pushed.sort()).toEqual(['/a.md', '/n.md']);
    expect(h.logger.warnings().filter((w) => w.msg.includes('not pushed'))).toEqual([]);
  });

  it('finalize: two listings that fail for good name every local change, never an empty list', async () => {
    const m = await h.mountNotes();
    await changeLocally(h);
    // The final sync's listing, then the flush's: its feed read is refused and it lists instead.
    h.client.failNext('list', 'unauthorized', 2);
    h.client.failNext('listVersions', 'unauthorized');
    const report = await m.finalize();
    expect(report.timedOut).toEqual({ sync: false, flush: false });
    expect(report.flush.stores[0]).toMatchObject({ status: 'failed' });
    expectEveryChangeNamed(h, report.unpushed, /unauthorized/);
  });

  it('a longer outage: reconcile ends at syncTimeout, finalize at finalSyncTimeout + 2 s, every path named', async () => {
    const m = await h.mountNotes({ syncTimeout: 0.5, finalSyncTimeout: 0.5 });
    await changeLocally(h);
    outage(h);
    const { result: sync, ms: syncMs } = await timed(m.reconcile({ force: true }));
    expect(syncMs).toBeLessThan(500 + 1_500);
    expect(sync!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
    // Retried, not given up on at the first failure (the feed read: the pass ends before its budget).
    expect(h.client.count('listVersions')).toBeGreaterThan(2);
    const { result: report, ms } = await timed(m.finalize());
    expect(ms).toBeLessThan(500 + 2_000);
    expectEveryChangeNamed(h, report.unpushed, /time bound/);
  });

  it('an outage that ends inside the window loses nothing', async () => {
    const m = await h.mountNotes({ syncTimeout: 5, deleteGracePeriod: 0 });
    await changeLocally(h);
    const listVersions = h.client.listVersions.bind(h.client);
    const down = Date.now() + 400;
    h.client.listVersions = async function* (storeId, opts): AsyncGenerator<StoreMemoryVersion> {
      if (Date.now() < down) {
        h.client.failNext('listVersions', 'unavailable');
      }
      yield* listVersions(storeId, opts);
    };
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ status: 'synced', errors: [], deletedRemote: ['/b.md'] });
    expect(report.pushed.sort()).toEqual(['/a.md', '/n.md']);
    expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha, edited', '/d/c.md': 'gamma', '/n.md': 'new here' });
  });
});

describe('unpushed names what a flush could not send for other reasons', () => {
  const h = useHarness('memfs');

  it('an aborted finalize of a wiped folder names the files made after the wipe', async () => {
    const m = await h.mountNotes();
    for (const path of ['/a.md', '/b.md', '/d/c.md']) await h.remove(`${h.notesDir}${path}`);
    await h.write(`${h.notesDir}/g/h.md`, 'made after the wipe');
    const report = await m.finalize({ outcome: 'aborted' });
    expect(report.flush.stores[0]).toMatchObject({ status: 'skipped', code: 'folder_wiped', reason: expect.stringMatching(/wiped/) });
    expect(report.unpushed).toEqual([
      { memoryStoreId: STORE, path: '/g/h.md', code: 'folder_wiped', reason: expect.stringMatching(/^new local file; not pushed: .*wiped/) },
    ]);
    expect(report.removed).toEqual([h.notesDir]);
  });
});

describe('reconcile and finalize keep their shapes', () => {
  const h = useHarness('memfs');

  it('concurrent reconcile calls share the bounded pass', async () => {
    const m: MemoryMounter = await h.mountNotes({ requestTimeout: 0.1, syncTimeout: 0.3 });
    h.client.list = neverAnsweringList;
    const [a, b] = await Promise.all([m.reconcile({ force: true }), m.reconcile({ force: true })]);
    expect(a).toBe(b);
  });
});
