import { describe, expect, it } from 'vitest';
import { FaultyFileSystem } from '@memory-mounter/testing';
import type { ConflictEvent } from '@memory-mounter/core';
import { DISKS, STORE, useHarness } from './harness.js';

/**
 * SPEC 6.6: a conflict whose loser cannot be handed over or copied is not resolved that pass.
 * The loser is the agent's bytes at a path the store's version is about to replace: with
 * `conflictCopies` the copy must exist before the file is replaced, and a push-only flush (which
 * replaces nothing, and after which the folder may be removed) still hands the loser over.
 */
const COPY = /\.conflict-\d{8}T\d{9}Z/;

describe.each(DISKS)('the loser of a conflict on %s', (kind) => {
  const h = useHarness(kind);
  const dir = () => h.notesDir;

  /** Both writes a conflict copy can be made by, failed with ENOSPC `times` times each. */
  const diskFull = (faulty: FaultyFileSystem, times: number) => {
    faulty.failMatching('writeFile', COPY, 'ENOSPC', times);
    faulty.failMatching('writeFileExclusive', COPY, 'ENOSPC', times);
  };

  it('a conflict copy that cannot be written: the file is kept, nothing pulled, the path named; warned once; resolved once the copy can be written', async () => {
    const faulty = new FaultyFileSystem(h.fs);
    const m = await h.mountNotes({ conflictCopies: true, fileSystem: faulty });
    const events: ConflictEvent[] = [];
    m.on('conflict', (e) => events.push(e));
    await h.write(`${dir()}/a.md`, 'mine');
    h.client.writeMemory(STORE, '/a.md', 'theirs');

    diskFull(faulty, 2);
    for (let pass = 0; pass < 2; pass++) {
      const report = await m.reconcile({ force: true });
      const store = report!.stores[0]!;
      expect(store.skippedPaths).toContainEqual(expect.objectContaining({ path: '/a.md', code: 'conflict_copy_failed' }));
      expect(store.pulled).toEqual([]);
      expect(store.conflicts).toEqual([]);
      expect(await h.read(`${dir()}/a.md`)).toBe('mine');
      expect(events).toEqual([]);
    }
    const warned = h.logger.warnings().filter((l) => l.fields.path === '/a.md' && /conflict copy/.test(l.msg));
    expect(warned).toHaveLength(1);

    // The disk has room again: the next pass decides the same conflict and resolves it.
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.conflicts).toEqual(['/a.md']);
    expect(await h.read(`${dir()}/a.md`)).toBe('theirs');
    expect(events).toHaveLength(1);
    expect(events[0]!.copyPath).toMatch(COPY);
    expect(await h.read(events[0]!.copyPath!)).toBe('mine');
    expect(new TextDecoder().decode(events[0]!.localContent)).toBe('mine');
    await m.finalize();
  });

  it('finalize aborted: the flush pulls nothing, and still hands the loser to conflict listeners (and the copy)', async () => {
    const m = await h.mountNotes({ conflictCopies: true, keepUnpushed: true });
    const events: ConflictEvent[] = [];
    m.on('conflict', (e) => events.push(e));
    await h.write(`${dir()}/a.md`, 'mine');
    h.client.writeMemory(STORE, '/a.md', 'theirs');
    const storeSha = h.client.memories(STORE).find((mem) => mem.path === '/a.md')!.content_sha256;

    const report = await m.finalize({ outcome: 'aborted' });
    expect(report.flush.stores[0]!.conflicts).toEqual(['/a.md']);
    expect(report.flush.stores[0]!.pulled).toEqual([]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ memoryStoreId: STORE, path: '/a.md', hostPath: `${dir()}/a.md`, storeSha });
    expect(new TextDecoder().decode(events[0]!.localContent)).toBe('mine');
    // Kept (the conflict is unpushed), so the file and its copy are still there to see.
    expect(await h.read(`${dir()}/a.md`)).toBe('mine');
    expect(events[0]!.copyPath).toMatch(COPY);
    expect(await h.read(events[0]!.copyPath!)).toBe('mine');
    expect(h.client.snapshot(STORE)['/a.md']).toBe('theirs');
  });

  it('finalize aborted without conflictCopies: the listener gets the bytes, and the folder goes as before', async () => {
    const m = await h.mountNotes();
    const events: ConflictEvent[] = [];
    m.on('conflict', (e) => events.push(e));
    await h.write(`${dir()}/d/c.md`, 'mine');
    h.client.writeMemory(STORE, '/d/c.md', 'theirs');
    const report = await m.finalize({ outcome: 'aborted' });
    expect(report.flush.stores[0]!.conflicts).toEqual(['/d/c.md']);
    expect(events.map((e) => [e.path, new TextDecoder().decode(e.localContent), e.copyPath])).toEqual([['/d/c.md', 'mine', null]]);
  });
});
