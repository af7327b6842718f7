import { describe, expect, it } from 'vitest';
import type { MounterEvents } from '@memory-mounter/core';
import { DISKS, STORE, useHarness } from './harness.js';

/**
 * What a host learns without filling gaps by hand: materialize's downloads as `pulled` events
 * with their memory ids, how each pass read the store, and the writes of unknown outcome.
 */

for (const kind of DISKS) {
  describe(`what a host sees (${kind})`, () => {
    const h = useHarness(kind);

    it('materialize tells one pulled event per memory downloaded, with its memory and version ids, in path order', async () => {
      h.client.seed(STORE, { '/b.md': 'beta', '/a.md': 'alpha', '/d/c.md': 'gamma' });
      const mounter = h.mounter();
      const pulled: MounterEvents['pulled'][0][] = [];
      mounter.on('pulled', (e) => void pulled.push(e));
      await mounter.materialize([{ type: 'memory_store', memory_store_id: STORE, name: 'Notes' }]);
      const ids = new Map(h.client.memories(STORE).map((m) => [m.path, m]));
      expect(pulled).toEqual(
        ['/a.md', '/b.md', '/d/c.md'].map((path) => ({
          memoryStoreId: STORE,
          path,
          hostPath: `${h.notesDir}${path}`,
          sha: ids.get(path)!.content_sha256,
          reason: 'download',
          memoryId: ids.get(path)!.id,
          versionId: ids.get(path)!.memory_version_id,
        })),
      );
      await mounter.finalize();
    });

    it('a materialize that fails tells no pulled event', async () => {
      h.client.seed(STORE, { '/a.md': 'alpha' });
      h.client.failNext('list', 'unauthorized', 100);
      const mounter = h.mounter();
      let pulled = 0;
      mounter.on('pulled', () => void pulled++);
      await expect(mounter.materialize([{ type: 'memory_store', memory_store_id: STORE, name: 'Notes' }])).rejects.toThrow();
      expect(pulled).toBe(0);
    });

    it("each pass report says how the store was read and why: a full listing on request, the feed when idle", async () => {
      const mounter = await h.mountNotes({ fullListingEvery: 100 });
      const first = await mounter.reconcile({ force: true });
      const second = await mounter.reconcile({ force: true });
      const reads = [first!.stores[0]!.read, second!.stores[0]!.read];
      // The first pass after the download may read the feed (the download gave it a start) or list.
      for (const read of reads) expect(['feed', 'listing']).toContain(read?.kind);
      // Idle: the feed, nothing changed (it re-reads a short overlap, so `versions` may count old ones).
      expect(second!.stores[0]!.read).toMatchObject({ kind: 'feed', changed: 0 });
      const final = await mounter.finalize();
      expect(final.sync!.stores[0]!.read).toMatchObject({ kind: 'listing', reason: 'requested', memories: 3 });
    });

    it('status() lists a write of unknown outcome until a listing settles it', async () => {
      const mounter = await h.mountNotes({ fullListingEvery: 1 });
      expect(mounter.status()[0]!.unknownWrites).toEqual([]);
      await h.write(`${h.notesDir}/z.md`, 'zeta');
      await h.write(`${h.notesDir}/n.md`, 'nu');
      // Applied in the store, answered `unavailable`: the mounter cannot know it landed.
      h.client.failAfterApply('create', 2);
      await mounter.reconcile({ force: true });
      const unknown = mounter.status()[0]!.unknownWrites;
      expect(unknown.map((w) => w.path)).toEqual(['/n.md', '/z.md']);
      const shas = new Map(h.client.memories(STORE).map((m) => [m.path, m.content_sha256]));
      expect(unknown).toEqual([
        { path: '/n.md', sha: shas.get('/n.md') },
        { path: '/z.md', sha: shas.get('/z.md') },
      ]);
      // The next pass lists the store: both are found there, holding what was sent.
      await mounter.reconcile({ force: true });
      expect(mounter.status()[0]!.unknownWrites).toEqual([]);
      await mounter.finalize();
    });
  });
}
