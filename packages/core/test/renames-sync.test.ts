import { describe, expect, it } from 'vitest';
import type { InMemoryStoreClient } from '@memory-mounter/testing';
import type { ConflictEvent, FileSystem } from '@memory-mounter/core';
import { DISKS, STORE, useHarness } from './harness.js';

/** `inner`, with `act` run once, right after the first `lstat` of a path ending in `suffix` while armed. */
function afterLstatOf(inner: FileSystem, suffix: string, act: () => Promise<void>): { fs: FileSystem; arm(): void } {
  let armed = false;
  const fs = new Proxy(inner, {
    get: (target, key) => {
      const value = Reflect.get(target, key) as unknown;
      if (typeof value !== 'function') return value;
      if (key !== 'lstat') return value.bind(target);
      return async (path: string) => {
        const answer = await target.lstat(path);
        if (armed && path.endsWith(suffix)) {
          armed = false;
          await act();
        }
        return answer;
      };
    },
  });
  return { fs, arm: () => void (armed = true) };
}

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

  it('a move the agent made alike, to where another writer then deleted the memory: the deletion is followed, not undone (B44)', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha', '/b.md': 'beta' });
    // A pass first, so that the next read is of the feed (the one after a download checks it).
    await m.reconcile({ force: true });
    await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/moved.md`);
    h.client.renameMemory(STORE, '/a.md', '/moved.md');
    // Two versions of one memory at one instant are a tie, which the feed leaves to a listing.
    await new Promise((resolve) => setTimeout(resolve, 5));
    h.client.deleteMemory(STORE, '/moved.md');
    const from = h.client.requests.length;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.read).toMatchObject({ kind: 'feed' });
    expect(count(ops(h.client, from), 'create')).toBe(0);
    expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'beta' });
    expect(await h.exists(`${h.notesDir}/moved.md`)).toBe(false);
    expect(report.deletedLocal).toEqual(['/moved.md']);
    expect(report.errors).toEqual([]);
  });

  it('the same, but the agent edited the file it moved: the edit is kept and sent, the deletion does not take it', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'alpha', '/b.md': 'beta' });
    await m.reconcile({ force: true });
    await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/moved.md`);
    await h.write(`${h.notesDir}/moved.md`, 'alpha, edited after the move');
    h.client.renameMemory(STORE, '/a.md', '/moved.md');
    await new Promise((resolve) => setTimeout(resolve, 5));
    h.client.deleteMemory(STORE, '/moved.md');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.read).toMatchObject({ kind: 'feed' });
    expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'beta', '/moved.md': 'alpha, edited after the move' });
    expect(await h.read(`${h.notesDir}/moved.md`)).toBe('alpha, edited after the move');
  });

  it('following a remote rename never replaces a note the agent saves at the new name after its check: kept, and both files reach the store', async () => {
    const target = `${h.notesDir}/t/b.md`;
    const agent = afterLstatOf(h.fs, '/b.md', () => h.write(target, "the agent's note"));
    const m = await h.mountNotes({ fileSystem: agent.fs }, { '/a.md': 'alpha' });
    const conflicts: ConflictEvent[] = [];
    m.on('conflict', (e) => conflicts.push(e));
    h.client.renameMemory(STORE, '/a.md', '/t/b.md');
    agent.arm();
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.skippedPaths).toContainEqual(expect.objectContaining({ path: '/t/b.md', code: 'taken' }));
    expect(first.renamed).toEqual([]);
    expect(await h.read(target)).toBe("the agent's note");
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha');
    // The next pass plans with the note: the rename brought no content of its own (the memory
    // holds what /a.md held), so it never wins over the agent's file (B19): the note goes to the
    // memory at /t/b.md, and /a.md is created again. No conflict, nothing replaced.
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.conflicts).toEqual([]);
    expect(conflicts).toEqual([]);
    expect(h.client.snapshot(STORE)).toEqual({ '/t/b.md': "the agent's note", '/a.md': 'alpha' });
    expect(await h.read(target)).toBe("the agent's note");
    await m.finalize();
  });

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

  describe('deletions off (issue 18 item 6): a local move creates the memory at its new path and leaves the old one', () => {
    it.each(['log_only', 'disabled'] as const)('%s: no path leaves the store, through reconcile and finalize', async (mode) => {
      const m = await h.mountNotes({ memory_sync_deletions: mode, deleteGracePeriod: 0 }, { '/a.md': 'alpha' });
      const [id] = idsByPath(h.client).values();
      await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/b.md`);
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(report).toMatchObject({ renamed: [], pushed: ['/b.md'], deletedRemote: [], pendingDeletions: ['/a.md'] });
      expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/b.md': 'alpha' });
      expect(idsByPath(h.client).get('/a.md')).toBe(id);
      await m.reconcile({ force: true });
      const final = await m.finalize();
      expect(final.unpushed).toEqual([]);
      expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/b.md': 'alpha' });
      expect(h.client.count('delete')).toBe(0);
      // log_only says once which rename it would have sent; the delete it would send, each pass.
      const wouldRename = h.logger.lines.filter((l) => l.msg.startsWith('log_only: would rename'));
      expect(wouldRename.map((l) => l.fields)).toEqual(mode === 'log_only' ? [expect.objectContaining({ memory_store_id: STORE, path: '/b.md', from: '/a.md' })] : []);
      expect(h.logger.lines.filter((l) => l.msg.includes('would delete')).length).toBe(mode === 'log_only' ? 3 : 0);
    });

    it('a move at finalize with deletions disabled: the flush creates, nothing is renamed', async () => {
      const m = await h.mountNotes({ memory_sync_deletions: 'disabled' }, { '/a.md': 'alpha' });
      await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/b.md`);
      const report = await m.finalize({ outcome: 'aborted' });
      expect(report.unpushed).toEqual([]);
      expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/b.md': 'alpha' });
    });

    it('enabled (the control): the move is a rename, as before', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0 }, { '/a.md': 'alpha' });
      await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/b.md`);
      expect((await m.reconcile({ force: true }))!.stores[0]).toMatchObject({ renamed: [{ from: '/a.md', to: '/b.md', side: 'remote' }], pushed: [] });
      expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'alpha' });
      await m.finalize();
    });
  });

  describe('an empty file carries no identity (issue 18 item 6)', () => {
    it('a local move of an empty file is a create and a delete, not a rename', async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0 }, { '/e.md': '', '/a.md': 'alpha' });
      const ids = idsByPath(h.client);
      await h.fs.rename(`${h.notesDir}/e.md`, `${h.notesDir}/f.md`);
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(report).toMatchObject({ renamed: [], pushed: ['/f.md'], deletedRemote: ['/e.md'] });
      expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/f.md': '' });
      expect(idsByPath(h.client).get('/f.md')).not.toBe(ids.get('/e.md'));
      await m.finalize();
    });

    it('a remote rename of an empty memory: the old file goes, the new one is pulled; an edit made meanwhile is kept', async () => {
      const m = await h.mountNotes({}, { '/e.md': '', '/g.md': '' });
      h.client.renameMemory(STORE, '/e.md', '/f.md');
      h.client.renameMemory(STORE, '/g.md', '/h.md');
      await h.write(`${h.notesDir}/g.md`, 'written into the empty file meanwhile');
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(report.renamed).toEqual([]);
      expect(await h.exists(`${h.notesDir}/e.md`)).toBe(false);
      expect(await h.read(`${h.notesDir}/f.md`)).toBe('');
      expect(await h.read(`${h.notesDir}/h.md`)).toBe('');
      expect(await h.read(`${h.notesDir}/g.md`)).toBe('written into the empty file meanwhile');
      expect(h.client.snapshot(STORE)).toEqual({ '/f.md': '', '/g.md': 'written into the empty file meanwhile', '/h.md': '' });
      await m.finalize();
    });
  });
});
