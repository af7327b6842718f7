import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryLifecycleError, type StoreMemory, type StoreMemoryVersion } from '@memory-mounter/core';
import { FaultyFileSystem } from '@memory-mounter/testing';
import { DISKS, neverAnsweringList, notesResource, SEED, STORE, useHarness, type Harness } from './harness.js';

/** SPEC 4.5: the final sync, the flush, their time bounds, and the removal of what was created. */


const FOREIGN_MARKER = `${JSON.stringify({ memory_store_id: 'memstore_someone_else' })}\n`;

describe.each(DISKS)('finalize on %s', (disk) => {
  const h = useHarness(disk);
  let dir: string;
  let marker: string;
  beforeEach(() => {
    dir = h.notesDir;
    marker = h.markerPath;
  });

  /**
   * Runs `fn` just before the `nth` (1-based) read of the store from now on (a listing or a
   * change-feed read): after that pass's scan, before its plan.
   */
  function beforeRead(nth: number, fn: () => Promise<void>): void {
    const list = h.client.list.bind(h.client);
    const listVersions = h.client.listVersions.bind(h.client);
    let calls = 0;
    h.client.list = async function* (storeId, opts): AsyncGenerator<StoreMemory> {
      if (++calls === nth) await fn();
      yield* list(storeId, opts);
    };
    h.client.listVersions = async function* (storeId, opts): AsyncGenerator<StoreMemoryVersion> {
      if (++calls === nth) await fn();
      yield* listVersions(storeId, opts);
    };
  }

  describe('completed', () => {
    it('waives the deletion grace period: a file deleted just before finalize is deleted remotely', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 30 });
      await h.remove(`${dir}/a.md`);
      // At this moment a normal sync still holds the delete back...
      const sync = await m.reconcile({ force: true });
      expect(sync!.stores[0]!.pendingDeletions).toEqual(['/a.md']);
      expect(h.client.count('delete')).toBe(0);
      // ...the final sync, at the same clock, sends it.
      const report = await m.finalize();
      expect(report.outcome).toBe('completed');
      expect(report.sync!.stores[0]!.deletedRemote).toEqual(['/a.md']);
      expect(h.client.count('delete')).toBe(1);
      expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'beta', '/d/c.md': 'gamma' });
      expect(report.timedOut).toEqual({ sync: false, flush: false });
    });

    it('keeps the per-pass delete cap: 10 of 12 files deleted, 8 deletes sent', async () => {
      const seed = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`/m${String(i).padStart(2, '0')}.md`, `memory ${i}`]));
      const m = await h.mountNotes({ deleteGracePeriod: 30 }, seed);
      const doomed = Object.keys(seed).slice(0, 10);
      for (const path of doomed) await h.remove(`${dir}${path}`);
      const report = await m.finalize();
      expect(h.client.count('delete')).toBe(8);
      expect(report.sync!.stores[0]!.deletedRemote).toHaveLength(8);
      expect(report.sync!.stores[0]!.pendingDeletions).toHaveLength(2);
      expect(Object.keys(h.client.snapshot(STORE))).toHaveLength(4);
    });

    it('keeps the re-check: a marker gone between the listing and the delete stops it (and the folder is left)', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 30 });
      await h.remove(`${dir}/a.md`);
      beforeRead(1, () => h.remove(marker));
      const report = await m.finalize();
      expect(h.client.count('delete')).toBe(0);
      expect(h.client.snapshot(STORE)).toEqual(SEED);
      expect(report.sync!.stores[0]!.deletedRemote).toEqual([]);
      expect(report.sync!.stores[0]!.pendingDeletions).toContain('/a.md');
      expect(report.leftInPlace.map((l) => l.path)).toContain(dir);
      expect(await h.read(`${dir}/b.md`)).toBe('beta');
    });

    it('keeps the re-check: a file back between the listing and the delete is not deleted', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 30 });
      await h.remove(`${dir}/a.md`);
      beforeRead(1, () => h.write(`${dir}/a.md`, 'alpha'));
      const report = await m.finalize();
      expect(h.client.count('delete')).toBe(0);
      expect(h.client.snapshot(STORE)).toEqual(SEED);
      expect(report.sync!.stores[0]!.skippedPaths.map((s) => s.path)).toContain('/a.md');
    });

    it('is a full sync: pushes local edits and pulls remote ones', async () => {
      const m = await h.mountNotes();
      await h.write(`${dir}/a.md`, 'alpha, edited at the end');
      await h.write(`${dir}/n.md`, 'new at the end');
      h.client.writeMemory(STORE, '/b.md', 'beta, edited remotely');
      const report = await m.finalize();
      expect([...report.sync!.stores[0]!.pushed].sort()).toEqual(['/a.md', '/n.md']);
      expect(report.sync!.stores[0]!.pulled).toEqual(['/b.md']);
      expect(h.client.snapshot(STORE)).toEqual({
        '/a.md': 'alpha, edited at the end',
        '/b.md': 'beta, edited remotely',
        '/d/c.md': 'gamma',
        '/n.md': 'new at the end',
      });
      expect(report.flush.stores[0]!.pushed).toEqual([]);
    });

    it('the flush pushes a file still changed after the final sync', async () => {
      const m = await h.mountNotes();
      await h.write(`${dir}/n.md`, 'new, unsent');
      // A create is never retried within a pass, so the final sync leaves it to the flush.
      h.client.failNext('create', 'unavailable');
      const report = await m.finalize();
      expect(report.sync!.stores[0]!.errors).toMatchObject([{ path: '/n.md', kind: 'unavailable' }]);
      expect(report.flush.stores[0]!.pushed).toEqual(['/n.md']);
      expect(h.client.snapshot(STORE)['/n.md']).toBe('new, unsent');
      expect(report.unpushed).toEqual([]);
    });

    it('a create that meets 503 in the sync and in the flush (neither applied) is sent again after a fresh read: pushed, folder removed', async () => {
      const m = await h.mountNotes();
      await h.write(`${dir}/n.md`, 'new, unsent');
      h.client.failNext('create', 'unavailable', 2);
      const report = await m.finalize();
      expect(h.client.count('create')).toBe(3);
      expect(h.client.snapshot(STORE)['/n.md']).toBe('new, unsent');
      expect(report.flush.stores[0]!.pushed).toEqual(['/n.md']);
      expect(report.unpushed).toEqual([]);
      expect(await h.exists(dir)).toBe(false);
    });

    it('a create the flush landed but got no answer for is settled by the read before any resend: one memory, not two', async () => {
      const m = await h.mountNotes();
      await h.write(`${dir}/n.md`, 'new, unsent');
      h.client.failNext('create', 'unavailable');
      h.client.failAfterApply('create');
      const report = await m.finalize();
      expect(h.client.count('create')).toBe(2);
      expect(Object.entries(h.client.snapshot(STORE)).filter(([, text]) => text === 'new, unsent').map(([path]) => path)).toEqual(['/n.md']);
      expect(report.unpushed).toEqual([]);
      expect(await h.exists(dir)).toBe(false);
    });

    it('a create that landed without an answer, its memory deleted by another writer before finalize: the final sync does not send it again (B48)', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0 });
      await m.reconcile({ force: true });
      await h.write(`${dir}/n.md`, 'a new note');
      h.client.failAfterApply('create');
      const first = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(first.errors).toMatchObject([{ path: '/n.md', kind: 'unavailable' }]);
      // A millisecond later: two versions of one memory at one instant are a tie for the feed.
      await new Promise((resolve) => setTimeout(resolve, 5));
      h.client.deleteMemory(STORE, '/n.md');
      const report = await m.finalize();
      expect(h.client.count('create')).toBe(1);
      expect(h.client.snapshot(STORE)['/n.md']).toBeUndefined();
      expect(report.unpushed).toEqual([]);
    });

    it('an update the flush is told changed (a spurious precondition answer) is decided again from a fresh listing: pushed, folder removed', async () => {
      const m = await h.mountNotes();
      await h.write(`${dir}/a.md`, 'alpha, edited at the end');
      // The final sync's update and the flush's both answered "changed"; the store still holds 'alpha'.
      h.client.failNext('update', 'precondition_failed', 2);
      const report = await m.finalize();
      expect(h.client.count('update')).toBe(3);
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited at the end');
      expect(report.unpushed).toEqual([]);
      expect(await h.exists(dir)).toBe(false);
    });

    it('a memory another writer changes between the flush\'s read and its update: the edit is a conflict handed over, not a failed push', async () => {
      const m = await h.mountNotes({ conflictCopies: true });
      const conflicts: { path: string; localContent: Uint8Array }[] = [];
      m.on('conflict', (e) => conflicts.push(e));
      await h.write(`${dir}/a.md`, 'alpha, edited at the end');
      h.client.failNext('update', 'precondition_failed');
      // The flush's update: another writer's edit lands just before it.
      const update = h.client.update.bind(h.client);
      let updates = 0;
      h.client.update = async (...args) => {
        if (++updates === 2) h.client.writeMemory(STORE, '/a.md', 'alpha, edited by another writer');
        return update(...args);
      };
      const report = await m.finalize();
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited by another writer');
      expect(conflicts.map((c) => [c.path, new TextDecoder().decode(c.localContent)])).toEqual([['/a.md', 'alpha, edited at the end']]);
      expect(report.flush.stores[0]!.conflicts).toEqual(['/a.md']);
      expect(report.unpushed.filter((u) => u.code === 'push_failed')).toEqual([]);
    });

    it('a create the store keeps answering 503: resent with growing waits until the window ends, then named unpushed', async () => {
      const m = await h.mountNotes({ finalSyncTimeout: 1 });
      await h.write(`${dir}/n.md`, 'new, unsent');
      h.client.failNext('create', 'unavailable', 1_000);
      const started = Date.now();
      const report = await m.finalize();
      // One second of doubling waits from 200 ms (full jitter) holds a handful of sends, not a flood.
      expect(h.client.count('create')).toBeGreaterThanOrEqual(3);
      expect(h.client.count('create')).toBeLessThan(40);
      expect(Date.now() - started).toBeLessThan(1_000 + 2_000 + 1_000);
      expect(report.unpushed).toMatchObject([{ memoryStoreId: STORE, path: '/n.md' }]);
    });
  });

  describe('aborted', () => {
    it('push-only: local edits pushed; remote edits not pulled; local deletions not sent', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0 });
      await h.write(`${dir}/a.md`, 'alpha, edited');
      await h.write(`${dir}/n.md`, 'new');
      await h.remove(`${dir}/b.md`);
      h.client.writeMemory(STORE, '/d/c.md', 'gamma, edited remotely');
      h.client.writeMemory(STORE, '/r.md', 'new remotely');
      const gets = h.client.count('get');

      const report = await m.finalize({ outcome: 'aborted' });
      expect(report.outcome).toBe('aborted');
      expect(report.sync).toBeNull();
      expect([...report.flush.stores[0]!.pushed].sort()).toEqual(['/a.md', '/n.md']);
      expect(report.flush.stores[0]).toMatchObject({ pulled: [], deletedRemote: [], deletedLocal: [] });
      expect(h.client.count('get')).toBe(gets);
      expect(h.client.count('delete')).toBe(0);
      expect(h.client.snapshot(STORE)).toEqual({
        '/a.md': 'alpha, edited',
        '/b.md': 'beta',
        '/d/c.md': 'gamma, edited remotely',
        '/n.md': 'new',
        '/r.md': 'new remotely',
      });
      expect(report.removed).toEqual([dir]);
      expect(await h.exists(dir)).toBe(false);
    });

    it('does not re-download a wiped folder, nor delete anything', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0 });
      await h.remove(dir);
      const gets = h.client.count('get');
      const report = await m.finalize({ outcome: 'aborted' });
      expect(report.flush.stores[0]!.status).toBe('skipped');
      expect(h.client.count('get')).toBe(gets);
      expect(h.client.count('delete')).toBe(0);
      expect(await h.exists(dir)).toBe(false);
    });
  });

  describe('removal of what this mounter created', () => {
    it('removes the store folder and leaves memoryRoot', async () => {
      const m = await h.mountNotes();
      const report = await m.finalize();
      expect(report.removed).toEqual([dir]);
      expect(report.leftInPlace).toEqual([]);
      expect(await h.exists(dir)).toBe(false);
      expect(await h.exists(h.memoryRoot)).toBe(true);
    });

    it('removes every store folder', async () => {
      h.client.seed(STORE, SEED);
      h.client.seed('memstore_other', { '/x.md': 'x' });
      const m = h.mounter();
      await m.materialize([notesResource(), { type: 'memory_store', memory_store_id: 'memstore_other', name: 'Other' }]);
      const report = await m.finalize();
      expect([...report.removed].sort()).toEqual([`${h.memoryRoot}/notes`, `${h.memoryRoot}/other`]);
      expect(await h.fs.readdir(h.memoryRoot)).toEqual([]);
    });

    it('a nested mount: the store folder, then the folders it created above it', async () => {
      const m = await h.mountNotes({}, SEED, { mount_path: '/mnt/memory/team/notes' });
      expect(await h.read(`${h.memoryRoot}/team/notes/a.md`)).toBe('alpha');
      const report = await m.finalize();
      expect(report.removed).toEqual([`${h.memoryRoot}/team/notes`, `${h.memoryRoot}/team`]);
      expect(await h.exists(`${h.memoryRoot}/team`)).toBe(false);
      expect(await h.exists(h.memoryRoot)).toBe(true);
    });

    it('a nested mount under a folder that already existed: that folder is not removed', async () => {
      await h.fs.mkdir(`${h.memoryRoot}/team`);
      const m = await h.mountNotes({}, SEED, { mount_path: '/mnt/memory/team/notes' });
      const report = await m.finalize();
      expect(report.removed).toEqual([`${h.memoryRoot}/team/notes`]);
      expect(await h.exists(`${h.memoryRoot}/team`)).toBe(true);
    });

    it('an in-between folder that now holds something else is left, with its content', async () => {
      const m = await h.mountNotes({}, SEED, { mount_path: '/mnt/memory/team/notes' });
      await h.write(`${h.memoryRoot}/team/other/keep.md`, 'not ours');
      const report = await m.finalize();
      expect(report.removed).toEqual([`${h.memoryRoot}/team/notes`]);
      expect(report.leftInPlace.map((l) => l.path)).toEqual([`${h.memoryRoot}/team`]);
      expect(await h.read(`${h.memoryRoot}/team/other/keep.md`)).toBe('not ours');
    });

    it.each(['completed', 'aborted'] as const)(
      '%s: a folder failing the marker check at removal is left in place, with a warning',
      async (outcome) => {
        const m = await h.mountNotes();
        // The last read before removal: the flush's feed read for `aborted`. For `completed` the
        // flush reads nothing (it reuses the final sync's listing), so the marker is replaced
        // during the final sync and the flush's own scan already finds it foreign.
        beforeRead(1, () => h.write(marker, FOREIGN_MARKER));
        const report = await m.finalize({ outcome });
        expect(report.removed).toEqual([]);
        expect(report.leftInPlace).toMatchObject([{ path: dir, reason: expect.stringMatching(/marker/) }]);
        expect(await h.read(`${dir}/a.md`)).toBe('alpha');
        expect(await h.read(marker)).toBe(FOREIGN_MARKER);
        const warning = h.logger.warnings().find((w) => w.fields.path === dir && /left in place/.test(w.msg));
        expect(warning?.fields.memory_store_id).toBe(STORE);
      },
    );

    it('a folder that cannot be removed is reported left in place; finalize does not throw', async () => {
      const fs = new FaultyFileSystem(h.fs);
      const m = await h.mountNotes({ fileSystem: fs });
      fs.fail('rm', dir, 'EBUSY');
      const report = await m.finalize();
      expect(report.removed).toEqual([]);
      expect(report.leftInPlace).toMatchObject([{ path: dir, reason: expect.stringMatching(/EBUSY/) }]);
    });
  });

  describe('bounded by finalSyncTimeout', () => {
    it('a slow store: both phases cut at the bound, finalize resolves and says so, folders still removed', async () => {
      const m = await h.mountNotes({ finalSyncTimeout: 0.2 });
      await h.write(`${dir}/a.md`, 'alpha, never sent');
      h.client.latencyMs = 60_000;
      const started = Date.now();
      const report = await m.finalize();
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(report.timedOut).toEqual({ sync: true, flush: true });
      expect(report.sync!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
      expect(report.flush.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha');
      expect(report.removed).toEqual([dir]);
    }, 20_000);

    it('aborted: the flush alone is bounded', async () => {
      const m = await h.mountNotes({ finalSyncTimeout: 0.2 });
      h.client.latencyMs = 60_000;
      const started = Date.now();
      const report = await m.finalize({ outcome: 'aborted' });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(report.timedOut).toEqual({ sync: false, flush: true });
      expect(report.flush.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
    }, 20_000);

    it('cut off mid-transfer: the paths not sent are listed in cutOff', async () => {
      const m = await h.mountNotes({ finalSyncTimeout: 0.2 });
      await h.write(`${dir}/a.md`, 'alpha, edited');
      await h.write(`${dir}/b.md`, 'beta, edited');
      await h.write(`${dir}/n.md`, 'new');
      // The listing is quick; every write from here on takes a minute.
      const update = h.client.update.bind(h.client);
      const create = h.client.create.bind(h.client);
      h.client.update = (...args) => {
        h.client.latencyMs = 60_000;
        return update(...args);
      };
      h.client.create = (...args) => {
        h.client.latencyMs = 60_000;
        return create(...args);
      };
      const started = Date.now();
      const report = await m.finalize();
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(report.timedOut.sync).toBe(true);
      expect([...report.sync!.stores[0]!.cutOff].sort()).toEqual(['/a.md', '/b.md', '/n.md']);
      expect(report.sync!.stores[0]!.pushed).toEqual([]);
      expect(h.client.snapshot(STORE)).toEqual(SEED);
    }, 20_000);

    it('a client that ignores the abort signal: finalize still resolves in bounded time', async () => {
      const m = await h.mountNotes({ finalSyncTimeout: 0.2 });
      h.client.list = neverAnsweringList;
      const started = Date.now();
      const report = await m.finalize();
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(report.timedOut).toEqual({ sync: true, flush: true });
      expect(report.sync!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/cut off/) });
      expect(report.flush.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/cut off/) });
      expect(report.removed).toEqual([dir]);
    }, 20_000);
  });

  describe('never throws for sync problems', () => {
    // An unavailable store is retried up to the deadline: time-bounds.test.ts has those cases.
    const failures: [string, (h: Harness, fs: FaultyFileSystem, dir: string) => Promise<void> | void][] = [
      // The feed too: an aborted finalize's flush reads it, and its refusal leads to a listing.
      ['the store does not know the store id', (h) => (h.client.failNext('listVersions', 'not_found', 10), h.client.failNext('list', 'not_found', 10))],
      ['the token is refused', (h) => (h.client.failNext('listVersions', 'unauthorized', 10), h.client.failNext('list', 'unauthorized', 10))],
      [
        'every push is rejected',
        async (h, _fs, dir) => {
          await h.write(`${dir}/a.md`, 'refused');
          h.client.failNext('update', 'rejected', 10);
        },
      ],
      [
        'every pull fails',
        (h) => {
          h.client.writeMemory(STORE, '/a.md', 'remote edit');
          h.client.failNext('get', 'not_found', 10);
        },
      ],
      [
        'the client throws something that is not a StoreError',
        (h) => {
          h.client.list = () => {
            throw new TypeError('client bug');
          };
          h.client.listVersions = () => {
            throw new TypeError('client bug');
          };
        },
      ],
      // Once: the final pass reads the folder again a moment later (issue 18 item 3), and the
      // removal that follows must still list the folder to empty it. Nothing failed is reported.
      ['the disk fails once', (_h, fs, dir) => fs.fail('readdir', dir, 'EIO', 1)],
    ];

    describe.each(['completed', 'aborted'] as const)('%s', (outcome) => {
      it.each(failures)('%s', async (label, inject) => {
        const fs = new FaultyFileSystem(h.fs);
        const m = await h.mountNotes({ fileSystem: fs });
        await inject(h, fs, dir);
        const report = await m.finalize({ outcome });
        expect(report.outcome).toBe(outcome);
        expect(report.timedOut).toEqual({ sync: false, flush: false });
        // The problem is in the report (a push-only flush never pulls, so an aborted one cannot meet a pull failure).
        const stores = [report.sync, report.flush].flatMap((s) => s?.stores ?? []);
        const seen = stores.some((s) => s.status === 'failed' || s.errors.length > 0 || s.refused.length > 0);
        expect(seen).toBe(label !== 'the disk fails once' && (outcome === 'completed' || label !== 'every pull fails'));
        expect(report.removed).toEqual([dir]);
      });
    });
  });

  describe('lifecycle', () => {
    it('a second finalize throws MemoryLifecycleError and touches nothing', async () => {
      const m = await h.mountNotes();
      await m.finalize();
      const requests = h.client.requests.length;
      await expect(m.finalize()).rejects.toBeInstanceOf(MemoryLifecycleError);
      await expect(m.finalize({ outcome: 'aborted' })).rejects.toBeInstanceOf(MemoryLifecycleError);
      expect(h.client.requests.length).toBe(requests);
    });

    it('a second finalize while the first is running throws', async () => {
      const m = await h.mountNotes();
      const first = m.finalize();
      await expect(m.finalize()).rejects.toBeInstanceOf(MemoryLifecycleError);
      await expect(first).resolves.toMatchObject({ outcome: 'completed' });
    });

    it.each(['completed', 'aborted'] as const)('reconcile after finalize (%s) rejects with MemoryLifecycleError', async (outcome) => {
      const m = await h.mountNotes();
      await m.finalize({ outcome });
      h.clock.advance(3600);
      await expect(m.reconcile()).rejects.toBeInstanceOf(MemoryLifecycleError);
      await expect(m.reconcile({ force: true })).rejects.toBeInstanceOf(MemoryLifecycleError);
    });
  });
});
