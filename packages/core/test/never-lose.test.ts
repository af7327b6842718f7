import { symlink, utimes } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { MemfsFileSystem } from '@memory-mounter/testing';
import { DISKS, notesResource, STORE, useHarness } from './harness.js';

/**
 * Issue 13's operator findings 5-9, each as it was met: the sequence that lost or stranded
 * something, and what must happen instead.
 */
describe.each(DISKS)('never lose, never strand, on %s', (disk) => {
  const h = useHarness(disk);

  it('5: an empty folder left by a remote delete does not block a memory created at its path (remote rename /d/c.md -> /d)', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha', '/d/c.md': 'gamma' });
    const c = h.client.memories(STORE).find((x) => x.path === '/d/c.md')!;
    await h.client.delete(STORE, c.id);
    h.client.writeMemory(STORE, '/d', 'now a file where the folder was');
    await m.reconcile({ force: true });
    const second = await m.reconcile({ force: true });
    expect(await h.read(`${h.notesDir}/d`)).toBe('now a file where the folder was');
    expect(second!.stores[0]!.skippedPaths.filter((s) => s.path === '/d')).toEqual([]);
  });

  it('5: a folder that still holds a file is never removed to make room', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha' });
    await h.write(`${h.notesDir}/d/keep.md`, 'the agent keeps this');
    h.client.writeMemory(STORE, '/d', 'a memory named like the folder');
    await m.reconcile({ force: true });
    expect(await h.read(`${h.notesDir}/d/keep.md`)).toBe('the agent keeps this');
  });

  it('6: an aborted finalize with the marker deleted and no files left removes the (empty) folder', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha' });
    await h.remove(`${h.notesDir}/a.md`);
    await h.remove(h.markerPath);
    const report = await m.finalize({ outcome: 'aborted' });
    expect(report.removed).toEqual([h.notesDir]);
    expect(await h.exists(h.notesDir)).toBe(false);
    // And the next session on this host mounts the same store at the same path.
    await h.mounter().materialize([notesResource()]);
  });

  it('7: a read-only store whose files are removed one per pass is not taken for a wiped folder', async () => {
    const seed = { '/a.md': 'a', '/b.md': 'b', '/c.md': 'c' };
    const m = await h.mountNotes({}, seed, { access: 'read_only' });
    const statuses: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      await h.remove(`${h.notesDir}/${name}.md`);
      statuses.push((await m.reconcile({ force: true }))!.stores[0]!.status);
    }
    expect(statuses).toEqual(['synced', 'synced', 'synced']);
    expect(await h.exists(`${h.notesDir}/a.md`)).toBe(false);
  });

  it('8: a re-download whose listing fails leaves no baseline behind: nothing is later deleted from the store', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, { '/only.md': 'the one memory' });
    // The agent empties the folder, marker included: the next pass re-creates the marker and
    // re-downloads, and that listing fails once (retries are cut short by a tight pass bound).
    await h.remove(`${h.notesDir}/only.md`);
    await h.remove(h.markerPath);
    h.client.failNext('list', 'rejected');
    const failed = await m.reconcile({ force: true });
    expect(failed!.stores[0]!.status).toBe('failed');
    h.clock.advance(3600);
    await m.reconcile({ force: true });
    await m.reconcile({ force: true });
    await m.finalize();
    expect(h.client.snapshot(STORE)).toEqual({ '/only.md': 'the one memory' });
    expect(h.client.count('delete')).toBe(0);
  });

  it('a wipe that leaves a symlink where a memory was is re-downloaded, never read as the agent deleting the rest (fuzz seed 781353849)', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, { '/a.md': 'alpha', '/b.md': 'beta', '/c.md': 'gamma' });
    for (const name of ['a', 'b', 'c']) await h.remove(`${h.notesDir}/${name}.md`);
    if (h.fs instanceof MemfsFileSystem) h.fs.vol.symlinkSync('/elsewhere', `${h.notesDir}/a.md`);
    else await symlink('/elsewhere', `${h.notesDir}/a.md`);
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.status).toBe('redownloaded');
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    expect(Object.keys(h.client.snapshot(STORE)).sort()).toEqual(['/a.md', '/b.md', '/c.md']);
  });

  it('B13: a file the agent writes at a memory\'s place while a removed folder is re-downloaded is pushed, not lost to the engine\'s own earlier push', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha', '/b.md': 'beta' });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited and pushed');
    await m.reconcile({ force: true });
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited and pushed');
    // The agent removes the folder; the next pass re-creates it and re-downloads. While the
    // download reads the store, the agent writes a.md again in the new folder.
    await h.fs.rm(h.notesDir, { recursive: true });
    let armed = true;
    const during = async () => {
      if (!armed) return;
      armed = false;
      await h.write(`${h.notesDir}/a.md`, 'written during the re-download');
    };
    for (const op of ['list', 'listFolder'] as const) {
      const original = h.client[op].bind(h.client) as (...args: unknown[]) => AsyncIterable<unknown>;
      Object.assign(h.client, {
        [op]: (...args: unknown[]) =>
          (async function* () {
            await during();
            yield* original(...args);
          })(),
      });
    }
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.status).toBe('redownloaded');
    expect(armed).toBe(false);
    const next = await m.reconcile({ force: true });
    expect(next!.stores[0]!.conflicts).toEqual([]);
    expect(next!.stores[0]!.pushed).toEqual(['/a.md']);
    expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'written during the re-download', '/b.md': 'beta' });
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('written during the re-download');
  });

  it('9: a new file written less than a second ago is left for the next pass, and pushed at finalize', async () => {
    const m = await h.mountNotes({ newFileSettle: 1 });
    await h.write(`${h.notesDir}/fresh.md`, 'half of what the agent means to write');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.pushed).toEqual([]);
    expect(report!.stores[0]!.skippedPaths).toContainEqual({ path: '/fresh.md', code: 'settling', reason: expect.stringMatching(/left for the next pass/) });
    // Settled: the next pass pushes it.
    await settle(h.fs, `${h.notesDir}/fresh.md`);
    const next = await m.reconcile({ force: true });
    expect(next!.stores[0]!.pushed).toEqual(['/fresh.md']);

    await h.write(`${h.notesDir}/last.md`, 'written right before the session ends');
    await m.finalize();
    expect(h.client.snapshot(STORE)['/last.md']).toBe('written right before the session ends');
  });
});

/** Moves the file's mtime ten seconds back, as if it had rested since. */
async function settle(fs: unknown, path: string): Promise<void> {
  const past = new Date(Date.now() - 10_000);
  if (fs instanceof MemfsFileSystem) fs.vol.utimesSync(path, past, past);
  else await utimes(path, past, past);
}
