import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryMounter, parseRecord, recordFileName, sha256Hex, StoreError, type StoreClient, type StoreSyncReport } from '@memory-mounter/core';
import type { AlreadyAppliedUpdate, InMemoryStoreClient } from '@memory-mounter/testing';
import { DISKS, notesResource, STORE, useHarness } from './harness.js';

/**
 * Issue 18 item 1 (SPEC 6.6): a write whose first try landed but was answered 503 is repeated by
 * the engine, and the repeat meets the store holding that very write. The write's outcome stays
 * unknown until a listing shows what the store holds, and a memory holding exactly the sha sent
 * is the engine's own write, never a remote edit that "wins" over the agent's next edit.
 *
 * Whether the service answers such a repeat (a guarded update asking for the content the memory
 * already holds) with success or with 409 is not documented: every case runs with both.
 */

const sha = (text: string) => sha256Hex(new TextEncoder().encode(text));
const ANSWERS: AlreadyAppliedUpdate[] = ['succeeds', 'precondition_failed'];

/**
 * `inner`, except that the `nth` update request answers `kind` before reaching the store: how a
 * service could answer a repeated rename whose first try already moved the memory.
 */
function answeringUpdate(inner: InMemoryStoreClient, nth: number, kind: 'path_conflict' | 'precondition_failed'): StoreClient {
  let updates = 0;
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key !== 'update') {
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return async (...args: Parameters<StoreClient['update']>) => {
        if (++updates === nth) throw new StoreError(kind, `injected ${kind}`, { status: 409 });
        return target.update(...args);
      };
    },
  });
}

describe.each(DISKS)('a write of unknown outcome whose repeat meets the store holding it, on %s', (disk) => {
  const h = useHarness(disk);

  describe.each(ANSWERS)('the service answers the repeat: %s', (answer) => {
    it('the agent edits the file again: the next pass pushes that edit; no conflict, nothing overwritten', async () => {
      h.client.alreadyAppliedUpdate = answer;
      const m = await h.mountNotes({ syncTimeout: 10 });
      await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
      h.client.failAfterApply('update');
      const first = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(h.client.count('update')).toBe(2);
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited');

      await h.write(`${h.notesDir}/a.md`, 'alpha, edited again');
      const second = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(second).toMatchObject({ conflicts: [], pulled: [], pushed: ['/a.md'], errors: [] });
      expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha, edited again');
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited again');
      // The first pass: pushed (the repeat succeeded) or of unknown outcome, never a settled failure.
      if (answer === 'succeeds') expect(first).toMatchObject({ pushed: ['/a.md'], errors: [] });
      else expect(first.errors).toMatchObject([{ path: '/a.md', operation: 'push', kind: 'unavailable' }]);
    });

    it('the agent deletes the file instead: the memory is deleted, not restored from the engine\'s own write', async () => {
      h.client.alreadyAppliedUpdate = answer;
      const m = await h.mountNotes({ syncTimeout: 10, deleteGracePeriod: 0 });
      await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
      h.client.failAfterApply('update');
      await m.reconcile({ force: true });

      await h.remove(`${h.notesDir}/a.md`);
      const second = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(second).toMatchObject({ pulled: [], conflicts: [], errors: [] });
      expect(second.deletedRemote).toEqual(['/a.md']);
      expect(await h.exists(`${h.notesDir}/a.md`)).toBe(false);
      expect(h.client.snapshot(STORE)['/a.md']).toBeUndefined();
    });

    it('finalize after that pass, with the agent\'s later edit: the edit is pushed, nothing is named unpushed', async () => {
      h.client.alreadyAppliedUpdate = answer;
      const m = await h.mountNotes({ syncTimeout: 10, finalSyncTimeout: 10 });
      await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
      h.client.failAfterApply('update');
      await m.reconcile({ force: true });
      await h.write(`${h.notesDir}/a.md`, 'alpha, edited again');
      const report = await m.finalize();
      expect(report.unpushed).toEqual([]);
      expect(report.sync!.stores[0]!).toMatchObject({ conflicts: [], pushed: ['/a.md'] });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited again');
    });

    it('a crash after that pass: recover takes the recorded write as ours and pushes the agent\'s later edit', async () => {
      h.client.alreadyAppliedUpdate = answer;
      const stateDir = posix.join(posix.dirname(h.memoryRoot), 'state');
      await h.fs.mkdir(stateDir, { recursive: true });
      const m = await h.mountNotes({ syncTimeout: 10, stateDir });
      await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
      h.client.failAfterApply('update');
      await m.reconcile({ force: true });
      const parsed = parseRecord(await h.fs.readFile(posix.join(stateDir, recordFileName(h.notesDir))));
      if (!parsed.ok) throw new Error(parsed.reason);
      // The write is either settled in the baseline or recorded as unsettled: known to be ours.
      const { baseline, unsettled_writes: unsettled } = parsed.record;
      expect([baseline['/a.md'], unsettled['/a.md']]).toContain(sha('alpha, edited'));

      await h.write(`${h.notesDir}/a.md`, 'alpha, edited again');
      // crash: no finalize
      const report = await MemoryMounter.recover({ storeClient: h.client, fileSystem: h.fs, memoryRoot: h.memoryRoot, stateDir, logger: h.logger });
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/a.md'], conflicts: [] });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited again');
    });
  });

  describe('a rename whose repeat meets path_conflict (the memory already moved)', () => {
    /** The agent renames /a.md to /r.md; the store's update #1 (the rename) lands but is answered 503, #2 (its repeat) meets path_conflict. */
    async function renamedWithUnknownOutcome(): Promise<{ m: MemoryMounter; first: StoreSyncReport }> {
      h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta' });
      const m = h.mounter({ storeClient: answeringUpdate(h.client, 2, 'path_conflict'), syncTimeout: 10, deleteGracePeriod: 0 });
      await m.materialize([notesResource()]);
      await h.fs.rename(`${h.notesDir}/a.md`, `${h.notesDir}/r.md`);
      h.client.failAfterApply('update');
      const first = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(h.client.snapshot(STORE)).toEqual({ '/r.md': 'alpha', '/b.md': 'beta' });
      return { m, first };
    }

    it('the rename is reported as of unknown outcome (unavailable), not as a path conflict', async () => {
      const { m, first } = await renamedWithUnknownOutcome();
      expect(first.errors).toMatchObject([{ path: '/r.md', operation: 'rename_remote', kind: 'unavailable' }]);
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(report).toMatchObject({ pulled: [], pushed: [], conflicts: [], errors: [] });
    });

    it('the agent then deletes the file: the memory is deleted, not restored', async () => {
      const { m } = await renamedWithUnknownOutcome();
      await h.remove(`${h.notesDir}/r.md`);
      const second = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(second).toMatchObject({ pulled: [], deletedRemote: ['/r.md'], errors: [] });
      expect(await h.exists(`${h.notesDir}/r.md`)).toBe(false);
      expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'beta' });
    });

    it('the agent then renames it again: the memory follows, and no copy is left at the middle path', async () => {
      const { m } = await renamedWithUnknownOutcome();
      await h.fs.rename(`${h.notesDir}/r.md`, `${h.notesDir}/s.md`);
      const second = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(second).toMatchObject({ pulled: [], pushed: [], renamed: [{ from: '/r.md', to: '/s.md', side: 'remote' }], errors: [] });
      expect(h.client.snapshot(STORE)).toEqual({ '/s.md': 'alpha', '/b.md': 'beta' });
      expect(await h.exists(`${h.notesDir}/r.md`)).toBe(false);
    });
  });

  it('a repeat that meets a real remote edit (the first try never landed) is still settled by the listing: the store wins, as for any conflict', async () => {
    const m = await h.mountNotes({ syncTimeout: 10 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    // The first try fails before it reaches the store; another writer's edit lands before the repeat.
    h.client.failNext('update', 'unavailable');
    const update = h.client.update.bind(h.client);
    let n = 0;
    h.client.update = async (...args) => {
      if (++n === 2) h.client.writeMemory(STORE, '/a.md', 'alpha, remote edit');
      return update(...args);
    };
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.errors).toMatchObject([{ path: '/a.md', kind: 'unavailable' }]);
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.conflicts).toEqual(['/a.md']);
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha, remote edit');
  });
});

// The fleet (seed 4): a create answered 503 had landed; another worker pulled the new memory,
// its agent deleted the file, and that worker deleted the memory. This worker, not knowing its
// create had landed, sent it again: the deleted content came back as a new memory. The change
// feed shows the memory holding exactly what was sent at that path, then its deletion.
describe.each(DISKS)('a create of unknown outcome that landed, deleted by another writer before the engine knew, on %s', (disk) => {
  const h = useHarness(disk);

  it('the deletion stands: not sent again, and the file goes', async () => {
    const m = await h.mountNotes({ syncTimeout: 10, deleteGracePeriod: 0 });
    await h.write(`${h.notesDir}/new.md`, 'a new note');
    h.client.failAfterApply('create');
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.errors).toMatchObject([{ path: '/new.md', operation: 'push', kind: 'unavailable' }]);
    expect(h.client.snapshot(STORE)['/new.md']).toBe('a new note');
    // A millisecond later: two versions of one memory at one instant are a tie, which the feed
    // leaves to a listing (and a listing shows no deletion).
    await new Promise((resolve) => setTimeout(resolve, 5));
    h.client.deleteMemory(STORE, '/new.md');

    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.read).toMatchObject({ kind: 'feed' });
    expect(second).toMatchObject({ pushed: [], conflicts: [], errors: [] });
    expect(h.client.snapshot(STORE)['/new.md']).toBeUndefined();
    expect(h.client.count('create')).toBe(1);
    expect(await h.exists(`${h.notesDir}/new.md`)).toBe(false);
  });

  it('a memory the engine knew, deleted by another writer, then the same bytes written again by the agent: no such evidence, the create is sent again and the file kept', async () => {
    const m = await h.mountNotes({ syncTimeout: 10, deleteGracePeriod: 0 });
    // A pass first, so that the deletion is read from the feed (the first read after the
    // download checks its listing), and a millisecond so it is no tie with the seeding.
    await m.reconcile({ force: true });
    await new Promise((resolve) => setTimeout(resolve, 5));
    h.client.deleteMemory(STORE, '/a.md');
    const deleted = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(deleted.deletedLocal).toEqual(['/a.md']);
    expect(deleted.read).toMatchObject({ kind: 'feed' });
    // Seconds later the agent puts the very same bytes back; the create fails before it reaches the store.
    await h.write(`${h.notesDir}/a.md`, 'alpha');
    h.client.failNext('create', 'unavailable');
    const failed = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(failed.errors).toMatchObject([{ path: '/a.md', operation: 'push', kind: 'unavailable' }]);
    expect(h.client.snapshot(STORE)['/a.md']).toBeUndefined();

    const again = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(again).toMatchObject({ pushed: ['/a.md'], errors: [] });
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha');
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha');
  });

  it('with the agent\'s edit since: the edit is kept and sent (a newer edit wins over a deletion it never saw)', async () => {
    const m = await h.mountNotes({ syncTimeout: 10, deleteGracePeriod: 0 });
    await h.write(`${h.notesDir}/new.md`, 'a new note');
    h.client.failAfterApply('create');
    await m.reconcile({ force: true });
    await new Promise((resolve) => setTimeout(resolve, 5));
    h.client.deleteMemory(STORE, '/new.md');
    await h.write(`${h.notesDir}/new.md`, 'a new note, edited');

    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.errors).toEqual([]);
    expect(h.client.snapshot(STORE)['/new.md']).toBe('a new note, edited');
    expect(await h.read(`${h.notesDir}/new.md`)).toBe('a new note, edited');
  });
});
