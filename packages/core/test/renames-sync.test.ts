import { describe, expect, it } from 'vitest';
import type { InMemoryStoreClient } from '@memory-mounter/testing';
import { DISKS, STORE, useHarness } from './harness.js';

/**
 * Renames through the mounter (issue 10 item 5), on memfs and the real disk: what goes over the
 * wire (counted, never timed), what the store's ids say, and what the folder holds after.
 */

const ops = (client: InMemoryStoreClient, from: number) => client.requests.slice(from).map((r) => r.op);
const count = (list: string[], op: string) => list.filter((o) => o === op).length;
const idsByPath = (client: InMemoryStoreClient) => new Map(client.memories(STORE).map((m) => [m.path, m.id]));

function notes(n: number, folder: string): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`/${folder}/n${String(i).padStart(4, '0')}.md`, `note ${i}`]));
}

describe.each(DISKS)('renames keep the memory (%s)', (disk) => {
  const h = useHarness(disk);

  it('a remote rename of a 1,000-memory folder moves the files: 0 content transfers', async () => {
    const m = await h.mountNotes({}, notes(1_000, 'notes'));
    const ids = idsByPath(h.client);
    for (const path of ids.keys()) h.client.renameMemory(STORE, path, path.replace('/notes/', '/archive/'));
    const before = h.client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    const sent = ops(h.client, before);
    expect({ get: count(sent, 'get'), create: count(sent, 'create'), update: count(sent, 'update'), delete: count(sent, 'delete') }).toEqual({
      get: 0,
      create: 0,
      update: 0,
      delete: 0,
    });
    // The listing (or feed) read carries no content.
    expect(h.client.requests.slice(before).every((r) => r.op !== 'list' || !(r as { withContent?: boolean }).withContent)).toBe(true);
    expect(report.renamed).toHaveLength(1_000);
    expect(report.pulled).toEqual([]);
    expect(report.deletedLocal).toEqual([]);
    expect(await h.read(`${h.notesDir}/archive/n0999.md`)).toBe('note 999');
    expect(await h.exists(`${h.notesDir}/notes/n0000.md`)).toBe(false);
    // Settled: the next pass has nothing to do.
    const after = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(after).toMatchObject({ pulled: [], pushed: [], renamed: [], deletedLocal: [], deletedRemote: [], errors: [] });
    await m.finalize();
  });

  it('a local `mv notes archive` of 200 files: 200 path updates, 0 creates or deletes, every memory keeps its id', async () => {
    const m = await h.mountNotes({}, notes(200, 'notes'));
    const ids = idsByPath(h.client);
    await h.fs.rename(`${h.notesDir}/notes`, `${h.notesDir}/archive`);
    const before = h.client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    const sent = h.client.requests.slice(before);
    expect(count(sent.map((r) => r.op), 'create')).toBe(0);
    expect(count(sent.map((r) => r.op), 'delete')).toBe(0);
    const updates = sent.filter((r) => r.op === 'update');
    expect(updates).toHaveLength(200);
    expect(updates.every((r) => (r as { path?: string }).path?.startsWith('/archive/'))).toBe(true);
    expect(report.renamed).toHaveLength(200);
    expect(report.pendingDeletions).toEqual([]);
    const now = idsByPath(h.client);
    expect(now.size).toBe(200);
    for (const [path, id] of ids) expect(now.get(path.replace('/notes/', '/archive/'))).toBe(id);
    // Settled: nothing more is sent, no deletion pending.
    const next = h.client.requests.length;
    const after = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(h.client, next).filter((op) => op !== 'list' && op !== 'listVersions')).toEqual([]);
    expect(after.pendingDeletions).toEqual([]);
    await m.finalize();
  });

  it('a remote rename while the file is edited locally: the edit goes to the renamed memory, no copy is left at the old path', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha' });
    const [id] = idsByPath(h.client).values();
    h.client.renameMemory(STORE, '/a.md', '/b.md');
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    const before = h.client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(ops(h.client, before).filter((op) => op === 'create' || op === 'get')).toEqual([]);
    expect(report).toMatchObject({ renamed: [{ from: '/a.md', to: '/b.md', side: 'local' }], pushed: ['/b.md'], conflicts: [] });
    expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'alpha, edited' });
    expect(idsByPath(h.client).get('/b.md')).toBe(id);
    expect(await h.read(`${h.notesDir}/b.md`)).toBe('alpha, edited');
    expect(await h.exists(`${h.notesDir}/a.md`)).toBe(false);
    await m.finalize();
  });

  it('a local rename at finalize: the flush renames the memory instead of leaving two', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha' });
    const [id] = idsByPath(h.client).values();
    await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/b.md`);
    const report = await m.finalize();
    expect(report.unpushed).toEqual([]);
    expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'alpha' });
    expect(idsByPath(h.client).get('/b.md')).toBe(id);
  });

  it('a local rename whose precondition fails (the memory changed in the store meanwhile) falls back: nothing lost', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha' });
    await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/b.md`);
    // Another writer edits the memory between the listing and the rename.
    const update = h.client.update.bind(h.client);
    h.client.update = (storeId, memoryId, input, opts) => {
      h.client.update = update;
      h.client.writeMemory(STORE, '/a.md', 'alpha, edited remotely');
      return update(storeId, memoryId, input, opts);
    };
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.errors).toMatchObject([{ path: '/b.md', operation: 'rename_remote', kind: 'precondition_failed' }]);
    expect(first.renamed).toEqual([]);
    // The next pass judges both paths by the rows: the store's edit restored, the moved file created.
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.pulled).toEqual(['/a.md']);
    expect(second.pushed).toEqual(['/b.md']);
    expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha, edited remotely', '/b.md': 'alpha' });
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha, edited remotely');
    await m.finalize();
  });

  it('a remote rename onto a name taken on disk by a new file: both files kept and pushed, no conflict', async () => {
    const m = await h.mountNotes({ conflictCopies: true }, { '/a.md': 'alpha' });
    h.client.renameMemory(STORE, '/a.md', '/b.md');
    await h.write(`${h.notesDir}/b.md`, 'a local b');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.renamed).toEqual([]);
    expect(report.conflicts).toEqual([]);
    expect(report.deletedLocal).toEqual([]);
    expect(await h.read(`${h.notesDir}/b.md`)).toBe('a local b');
    expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/b.md': 'a local b' });
    const after = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(after).toMatchObject({ pulled: [], pushed: [], conflicts: [], errors: [] });
    await m.finalize();
  });
});
