import { stat } from 'node:fs/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemfsFileSystem } from '@memory-mounter/testing';
import type { DeletionMode, MemoryStoreResource } from '@memory-mounter/core';
import { DISKS, notesResource, SEED, STORE, useHarness } from './harness.js';

/** SPEC 4.6: a read-only store is pulled like any other and never written to. */

const READ_ONLY = { access: 'read_only' };
const RW = 'memstore_scratch';

describe.each(DISKS)('read-only stores on %s', (disk) => {
  const h = useHarness(disk);
  let dir: string;
  beforeEach(() => {
    dir = h.notesDir;
  });
  const writes = () => h.client.count('create') + h.client.count('update') + h.client.count('delete');

  async function mode(path: string): Promise<number> {
    if (h.fs instanceof MemfsFileSystem) return Number(h.fs.vol.statSync(path).mode);
    return (await stat(path)).mode;
  }

  it('is downloaded like any store', async () => {
    await h.mountNotes({}, SEED, READ_ONLY);
    expect(await h.read(`${dir}/a.md`)).toBe('alpha');
    expect(await h.read(`${dir}/d/c.md`)).toBe('gamma');
  });

  describe.each(['completed', 'aborted'] as const)('never pushed (finalize %s)', (outcome) => {
    it('local edits and new files stay local, at every sync and at finalize', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0 }, SEED, READ_ONLY);
      await h.write(`${dir}/a.md`, 'alpha, edited in a shell');
      await h.write(`${dir}/n.md`, 'new, from a shell');
      const first = await m.reconcile({ force: true });
      expect(first!.stores[0]!.pushed).toEqual([]);
      expect(first!.stores[0]!.refused.map((r) => r.path).sort()).toEqual(['/a.md', '/n.md']);
      h.clock.advance(60);
      await m.reconcile();
      expect(await h.read(`${dir}/a.md`)).toBe('alpha, edited in a shell');
      expect(await h.read(`${dir}/n.md`)).toBe('new, from a shell');

      const report = await m.finalize({ outcome });
      expect(report.flush.stores[0]!.pushed).toEqual([]);
      expect(writes()).toBe(0);
      expect(h.client.snapshot(STORE)).toEqual(SEED);
    });
  });

  describe.each(['enabled', 'log_only', 'disabled'] as DeletionMode[])('memory_sync_deletions %s', (mode) => {
    it('a file deleted locally is never deleted remotely, nor logged as a delete; it stays gone', async () => {
      const m = await h.mountNotes({ memory_sync_deletions: mode, deleteGracePeriod: 0 }, SEED, READ_ONLY);
      await h.remove(`${dir}/a.md`);
      const first = await m.reconcile({ force: true });
      expect(first!.stores[0]!.deletedRemote).toEqual([]);
      h.clock.advance(3600);
      await m.reconcile({ force: true });
      expect(await h.exists(`${dir}/a.md`)).toBe(false);
      const report = await m.finalize();
      expect(report.sync!.stores[0]!.deletedRemote).toEqual([]);
      expect(h.client.count('delete')).toBe(0);
      expect(h.client.snapshot(STORE)).toEqual(SEED);
      expect(h.logger.lines.some((l) => /would delete/.test(l.msg))).toBe(false);
    });
  });

  it('beside a read-write store in the same pass: only the read-write deletion is sent', async () => {
    h.client.seed(STORE, SEED);
    h.client.seed(RW, SEED);
    const m = h.mounter({ deleteGracePeriod: 0 });
    await m.materialize([notesResource({ access: 'read_only' }), { type: 'memory_store', memory_store_id: RW, name: 'Scratch' }]);
    await h.remove(`${dir}/a.md`);
    await h.remove(`${h.memoryRoot}/scratch/a.md`);
    await m.reconcile({ force: true });
    expect(h.client.snapshot(STORE)).toEqual(SEED);
    expect(h.client.snapshot(RW)).toEqual({ '/b.md': 'beta', '/d/c.md': 'gamma' });
  });

  it('a local edit is kept, not synced, until the next remote change to that memory overwrites it', async () => {
    const m = await h.mountNotes({}, SEED, READ_ONLY);
    await h.write(`${dir}/a.md`, 'mine');
    await m.reconcile({ force: true });
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/a.md`)).toBe('mine');

    // A remote change to another memory leaves it alone.
    h.client.writeMemory(STORE, '/b.md', 'beta 2');
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/a.md`)).toBe('mine');
    expect(await h.read(`${dir}/b.md`)).toBe('beta 2');

    h.client.writeMemory(STORE, '/a.md', 'alpha 2');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.pulled).toEqual(['/a.md']);
    expect(await h.read(`${dir}/a.md`)).toBe('alpha 2');
    expect(writes()).toBe(0);
  });

  it('a new local file is overwritten when a memory appears at its path', async () => {
    const m = await h.mountNotes({}, SEED, READ_ONLY);
    await h.write(`${dir}/n.md`, 'mine');
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/n.md`)).toBe('mine');
    h.client.writeMemory(STORE, '/n.md', 'theirs');
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/n.md`)).toBe('theirs');
    expect(writes()).toBe(0);
  });

  it('a file deleted locally comes back with the next remote change to its memory', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, SEED, READ_ONLY);
    await h.remove(`${dir}/a.md`);
    await m.reconcile({ force: true });
    expect(await h.exists(`${dir}/a.md`)).toBe(false);
    h.client.writeMemory(STORE, '/a.md', 'alpha 2');
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/a.md`)).toBe('alpha 2');
    expect(writes()).toBe(0);
  });

  it('a memory deleted in the store: an untouched file follows; an edited file is kept with a warning, never pushed', async () => {
    const m = await h.mountNotes({}, SEED, READ_ONLY);
    await h.write(`${dir}/a.md`, 'mine, the only copy');
    h.client.deleteMemory(STORE, '/a.md');
    h.client.deleteMemory(STORE, '/b.md');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.deletedLocal).toEqual(['/b.md']);
    expect(await h.exists(`${dir}/b.md`)).toBe(false);
    expect(await h.read(`${dir}/a.md`)).toBe('mine, the only copy');
    expect(h.logger.warnings().some((w) => w.fields.path === '/a.md' && w.fields.memory_store_id === STORE)).toBe(true);
    await m.reconcile({ force: true });
    await m.finalize();
    expect(writes()).toBe(0);
    expect(h.client.snapshot(STORE)).toEqual({ '/d/c.md': 'gamma' });
  });

  it('local changes are not blocked: files and folders stay writable by their owner', async () => {
    await h.mountNotes({}, SEED, READ_ONLY);
    expect((await mode(`${dir}/a.md`)) & 0o200).not.toBe(0);
    expect((await mode(`${dir}/d/c.md`)) & 0o200).not.toBe(0);
    expect((await mode(`${dir}/d`)) & 0o200).not.toBe(0);
    expect((await mode(dir)) & 0o200).not.toBe(0);
    await h.write(`${dir}/a.md`, 'edited in a shell');
    expect(await h.read(`${dir}/a.md`)).toBe('edited in a shell');
  });

  describe('readOnlyRoots', () => {
    it('lists the host paths of the read-only stores only; roots lists every store', async () => {
      h.client.seed(STORE, SEED);
      const m = h.mounter();
      expect(m.readOnlyRoots).toEqual([]);
      const resources: MemoryStoreResource[] = [
        { type: 'memory_store', memory_store_id: 'memstore_rw', name: 'Scratch' },
        { type: 'memory_store', memory_store_id: STORE, name: 'Notes', access: 'read_only' },
        { type: 'memory_store', memory_store_id: 'memstore_ref', name: 'Ref', mount_path: '/mnt/memory/lib/ref', access: 'read_only' },
        { type: 'memory_store', memory_store_id: 'memstore_null', name: 'Plain', access: null },
      ];
      await m.materialize(resources);
      expect(m.readOnlyRoots).toEqual([dir, `${h.memoryRoot}/lib/ref`]);
      expect(m.roots).toEqual([`${h.memoryRoot}/scratch`, dir, `${h.memoryRoot}/lib/ref`, `${h.memoryRoot}/plain`]);
      expect(m.mounts.map((s) => s.access)).toEqual(['read_write', 'read_only', 'read_only', 'read_write']);
    });
  });
});
