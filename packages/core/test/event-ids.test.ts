import { describe, expect, it } from 'vitest';
import { sha256Hex, type MemoryMounter, type MounterEventName, type MounterEvents } from '@memory-mounter/core';
import { DISKS, STORE, useHarness, withoutChangeFeed, type Harness } from './harness.js';

/**
 * Every event of an ordinary pass names the memory (`memoryId`) and, where the store said, the
 * version (`versionId`) it is about: checked against what the store itself holds afterwards,
 * through real passes on both disks.
 */

const EVENTS: readonly MounterEventName[] = ['conflict', 'pulled', 'pushed', 'deleted', 'renamed', 'refused', 'progress'];
type Seen = { [E in MounterEventName]: MounterEvents[E][0][] };

function listen(m: MemoryMounter): Seen {
  const seen = Object.fromEntries(EVENTS.map((e) => [e, []])) as unknown as Seen;
  for (const event of EVENTS) m.on(event, (payload: unknown) => void (seen[event] as unknown[]).push(payload));
  return seen;
}

const sha = (text: string) => sha256Hex(new TextEncoder().encode(text));

/** The memory the store holds at `path` now: its id and the version that holds it. */
function held(h: Harness, path: string): { id: string; version: string } {
  const memory = h.client.memories(STORE).find((m) => m.path === path);
  if (!memory) throw new Error(`no memory at ${path}`);
  return { id: memory.id, version: memory.memory_version_id };
}

describe.each(DISKS)('memory and version ids on events, on %s', (disk) => {
  const h = useHarness(disk);

  it('pulled: the memory and the version written, with the content the change feed carried (no fetch)', async () => {
    const m = await h.mountNotes();
    // The first feed read after the download's listing checks that listing; from then on changes come by the feed.
    await m.reconcile({ force: true });
    const seen = listen(m);
    h.client.writeMemory(STORE, '/a.md', 'alpha, changed');
    h.client.writeMemory(STORE, '/new.md', 'new');
    const gets = h.client.count('get');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.read).toMatchObject({ kind: 'feed', changed: 2 });
    expect(h.client.count('get')).toBe(gets);
    const a = held(h, '/a.md');
    const added = held(h, '/new.md');
    expect(seen.pulled).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/a.md', reason: 'remote_change', sha: sha('alpha, changed'), memoryId: a.id, versionId: a.version }),
        expect.objectContaining({ path: '/new.md', reason: 'remote_change', memoryId: added.id, versionId: added.version }),
      ]),
    );
    expect(seen.pulled).toHaveLength(2);
    await m.finalize();
  });

  it('pulled by a pass that lists the store (no change feed): the version the fetch answered', async () => {
    withoutChangeFeed(h.client);
    const m = await h.mountNotes();
    const seen = listen(m);
    h.client.writeMemory(STORE, '/b.md', 'beta, changed');
    const gets = h.client.count('get');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.read).toMatchObject({ kind: 'listing', reason: 'no_feed' });
    expect(h.client.count('get')).toBe(gets + 1);
    const b = held(h, '/b.md');
    expect(seen.pulled).toEqual([expect.objectContaining({ path: '/b.md', memoryId: b.id, versionId: b.version })]);
    await m.finalize();
  });

  it('pushed: the memory the create or update answered with, and the version it made', async () => {
    const m = await h.mountNotes();
    const seen = listen(m);
    const before = held(h, '/a.md');
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    await h.write(`${h.notesDir}/made.md`, 'made here');
    await m.reconcile({ force: true });
    const a = held(h, '/a.md');
    const made = held(h, '/made.md');
    expect(a.id).toBe(before.id);
    expect(a.version).not.toBe(before.version);
    expect(seen.pushed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/a.md', sha: sha('alpha, edited'), memoryId: a.id, versionId: a.version }),
        expect.objectContaining({ path: '/made.md', sha: sha('made here'), memoryId: made.id, versionId: made.version }),
      ]),
    );
    expect(seen.pushed).toHaveLength(2);
    await m.finalize();
  });

  it('deleted: the memory deleted in the store (local side) and the one this pass deleted (remote side)', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 });
    const seen = listen(m);
    const a = held(h, '/a.md');
    const b = held(h, '/b.md');
    h.client.deleteMemory(STORE, '/a.md');
    await h.remove(`${h.notesDir}/b.md`);
    await m.reconcile({ force: true });
    expect(seen.deleted).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/a.md', side: 'local', memoryId: a.id }),
        expect.objectContaining({ path: '/b.md', side: 'remote', memoryId: b.id }),
      ]),
    );
    expect(seen.deleted).toHaveLength(2);
    await m.finalize();
  });

  it('renamed: a rename followed on disk and one sent to the store, each with the memory and the version at its new path', async () => {
    const m = await h.mountNotes();
    const seen = listen(m);
    const a = held(h, '/a.md');
    const b = held(h, '/b.md');
    h.client.renameMemory(STORE, '/a.md', '/moved/a.md');
    await h.fs.mkdir(`${h.notesDir}/elsewhere`, { recursive: true });
    await h.fs.rename(`${h.notesDir}/b.md`, `${h.notesDir}/elsewhere/b.md`);
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.renamed).toHaveLength(2);
    const movedA = held(h, '/moved/a.md');
    const movedB = held(h, '/elsewhere/b.md');
    expect([movedA.id, movedB.id]).toEqual([a.id, b.id]);
    expect(seen.renamed).toEqual(
      expect.arrayContaining([
        {
          memoryStoreId: STORE,
          path: '/moved/a.md',
          hostPath: `${h.notesDir}/moved/a.md`,
          from: '/a.md',
          side: 'local',
          sha: sha('alpha'),
          memoryId: a.id,
          versionId: movedA.version,
        },
        {
          memoryStoreId: STORE,
          path: '/elsewhere/b.md',
          hostPath: `${h.notesDir}/elsewhere/b.md`,
          from: '/b.md',
          side: 'remote',
          sha: sha('beta'),
          memoryId: b.id,
          versionId: movedB.version,
        },
      ]),
    );
    expect(seen.renamed).toHaveLength(2);
    // Nothing was transferred: a rename is its own event, not a pull, push or delete.
    expect([...seen.pulled, ...seen.pushed, ...seen.deleted]).toEqual([]);
    await m.finalize();
  });

  it('conflict: the memory and the version that win, on the conflict event and the pull that follows it', async () => {
    const m = await h.mountNotes();
    const seen = listen(m);
    await h.write(`${h.notesDir}/a.md`, 'mine');
    h.client.writeMemory(STORE, '/a.md', 'theirs');
    await m.reconcile({ force: true });
    const a = held(h, '/a.md');
    expect(seen.conflict).toEqual([expect.objectContaining({ path: '/a.md', storeSha: sha('theirs'), localSha: sha('mine'), memoryId: a.id, versionId: a.version })]);
    expect(seen.pulled).toEqual([expect.objectContaining({ path: '/a.md', reason: 'conflict', memoryId: a.id, versionId: a.version })]);
    await m.finalize();
  });

  it("conflict in finalize's push-only flush: the winner's memory and version too", async () => {
    const m = await h.mountNotes();
    await m.reconcile({ force: true }); // a read of the feed, so the flush knows the versions
    const seen = listen(m);
    await h.write(`${h.notesDir}/b.md`, 'mine');
    h.client.writeMemory(STORE, '/b.md', 'theirs');
    const b = held(h, '/b.md');
    const report = await m.finalize({ outcome: 'aborted' });
    expect(report.unpushed).toEqual([expect.objectContaining({ path: '/b.md', code: 'conflict', memoryId: b.id })]);
    expect(seen.conflict).toEqual([expect.objectContaining({ path: '/b.md', storeSha: sha('theirs'), memoryId: b.id, versionId: b.version })]);
  });

  it('pulled to restore a file deleted locally that changed in the store', async () => {
    const m = await h.mountNotes();
    const seen = listen(m);
    await h.remove(`${h.notesDir}/d/c.md`);
    h.client.writeMemory(STORE, '/d/c.md', 'gamma, changed');
    await m.reconcile({ force: true });
    const c = held(h, '/d/c.md');
    expect(seen.pulled).toEqual([expect.objectContaining({ path: '/d/c.md', reason: 'restore', memoryId: c.id, versionId: c.version })]);
    await m.finalize();
  });

  it('refused: the memory an edit would have updated (rejected by the store, or never sendable); none for a new file', async () => {
    const m = await h.mountNotes();
    const seen = listen(m);
    const a = held(h, '/a.md');
    const b = held(h, '/b.md');
    await h.write(`${h.notesDir}/a.md`, 'the store refuses this');
    h.client.failNext('update', 'rejected');
    await h.write(`${h.notesDir}/b.md`, new Uint8Array([0xff, 0xfe]));
    await h.write(`${h.notesDir}/new.md`, new Uint8Array([0xff, 0xfd]));
    await m.reconcile({ force: true });
    expect(seen.refused).toHaveLength(3);
    const byPath = new Map(seen.refused.map((e) => [e.path, e]));
    expect(byPath.get('/a.md')).toMatchObject({ code: 'rejected', memoryId: a.id });
    expect(byPath.get('/b.md')).toMatchObject({ code: 'not_utf8', memoryId: b.id });
    expect(byPath.get('/new.md')).toMatchObject({ code: 'not_utf8' });
    expect(byPath.get('/new.md')).not.toHaveProperty('memoryId');
    await m.finalize();
  });
});
