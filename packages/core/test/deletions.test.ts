import { beforeEach, describe, expect, it } from 'vitest';
import { DISKS, STORE, useHarness } from './harness.js';

const FILES = { '/a.md': 'a', '/b.md': 'b' };

describe.each(DISKS)('local deletions on %s (SPEC 4.3)', (disk) => {
  const h = useHarness(disk);
  let dir: string;
  beforeEach(() => {
    dir = h.notesDir;
  });

  it('sends the delete only after deleteGracePeriod, guarded by the baseline sha', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 30 }, FILES);
    await h.remove(`${dir}/a.md`);
    const first = await m.reconcile({ force: true });
    expect(first!.stores[0]!.pendingDeletions).toEqual(['/a.md']);
    h.clock.advance(29);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    h.clock.advance(1);
    const due = await m.reconcile({ force: true });
    expect(due!.stores[0]!.deletedRemote).toEqual(['/a.md']);
    expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'b' });
  });

  it('the default grace period is 30 seconds', async () => {
    const m = await h.mountNotes({}, FILES);
    await h.remove(`${dir}/a.md`);
    await m.reconcile({ force: true });
    h.clock.advance(29.999);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    h.clock.advance(0.001);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(1);
  });

  it('a file that reappears leaves the candidate list and restarts its grace period', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 30 }, FILES);
    await h.remove(`${dir}/a.md`);
    await m.reconcile({ force: true });
    h.clock.advance(20);
    await h.write(`${dir}/a.md`, 'a');
    await m.reconcile({ force: true });
    await h.remove(`${dir}/a.md`);
    h.clock.advance(20);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
  });

  it('a fresh re-check just before the delete: a file restored meanwhile is not deleted', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, FILES);
    await h.remove(`${dir}/a.md`);
    // The pass reads the change feed: after the scan, before the delete.
    const listVersions = h.client.listVersions.bind(h.client);
    h.client.listVersions = async function* (id, opts) {
      yield* listVersions(id, opts);
      await h.write(`${dir}/a.md`, 'a');
    };
    const report = await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    expect(report!.stores[0]!.skippedPaths.map((s) => s.path)).toContain('/a.md');
    expect(h.client.snapshot(STORE)['/a.md']).toBe('a');
  });

  it('precondition_failed on the delete keeps the remote version, which is pulled back', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, FILES);
    await h.remove(`${dir}/a.md`);
    h.client.failNext('delete', 'precondition_failed');
    await m.reconcile({ force: true });
    h.client.writeMemory(STORE, '/a.md', 'edited elsewhere');
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/a.md`)).toBe('edited elsewhere');
    expect(h.client.snapshot(STORE)['/a.md']).toBe('edited elsewhere');
  });

  it('log_only runs every check and logs the delete each pass, never sending it', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0, memory_sync_deletions: 'log_only' }, FILES);
    await h.remove(`${dir}/a.md`);
    await m.reconcile({ force: true });
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    const logged = h.logger.lines.filter((l) => l.msg.includes('would delete'));
    expect(logged).toHaveLength(2);
    expect(logged[0]!.fields).toMatchObject({ memory_store_id: STORE, path: '/a.md' });
    expect(h.client.snapshot(STORE)['/a.md']).toBe('a');
  });

  it('disabled never deletes remotely, uploads and pulls still run', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0, memory_sync_deletions: 'disabled' }, FILES);
    await h.remove(`${dir}/a.md`);
    await h.write(`${dir}/c.md`, 'new');
    h.client.writeMemory(STORE, '/b.md', 'b2');
    h.clock.advance(3600);
    const report = await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    expect(report!.stores[0]).toMatchObject({ pushed: ['/c.md'], pulled: ['/b.md'], pendingDeletions: ['/a.md'] });
  });

  it('caps the deletes of one pass at clamp(floor(baseline / 4), 8, 50)', async () => {
    const files = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`/f${i}.md`, `${i}`]));
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, files);
    for (let i = 0; i < 20; i++) await h.remove(`${dir}/f${i}.md`);
    const first = await m.reconcile({ force: true });
    expect(first!.stores[0]!.deletedRemote).toHaveLength(12);
    expect(first!.stores[0]!.pendingDeletions).toHaveLength(8);
    const second = await m.reconcile({ force: true });
    expect(second!.stores[0]!.deletedRemote).toHaveLength(8);
    expect(Object.keys(h.client.snapshot(STORE))).toHaveLength(28);
  });
});
