import { posix } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  MARKER_FILE,
  MemoryMounter,
  parseRecord,
  recordFileName,
  sha256Hex,
  StoreError,
  type MemoryMounterOptions,
  type StateRecord,
  type StoreMemory,
} from '@memory-mounter/core';
import { FaultyFileSystem } from '@memory-mounter/testing';
import { aroundCreateFile, DISKS, neverAnsweringList, notesResource, SEED, STORE, useHarness } from './harness.js';

/**
 * SPEC 6.3 / issue 13 item 3: state records kept by the mounter, `keepUnpushed`, and
 * `MemoryMounter.recover` after a crash. A crash is a mounter dropped without `finalize()`: its
 * folder and record stay exactly as a killed process leaves them.
 */

const sha = (text: string) => sha256Hex(new TextEncoder().encode(text));

describe.each(DISKS)('crash recovery on %s', (disk) => {
  const h = useHarness(disk);
  let stateDir: string;
  let dir: string;
  let recordPath: string;
  beforeEach(async () => {
    stateDir = posix.join(posix.dirname(h.memoryRoot), 'state');
    await h.fs.mkdir(stateDir, { recursive: true });
    dir = h.notesDir;
    recordPath = posix.join(stateDir, recordFileName(dir));
  });

  const mount = (options: Partial<MemoryMounterOptions> = {}, seed = SEED, resource: Record<string, unknown> = {}) =>
    h.mountNotes({ stateDir, ...options }, seed, resource);
  const recover = (over: Record<string, unknown> = {}) =>
    MemoryMounter.recover({ storeClient: h.client, fileSystem: h.fs, memoryRoot: h.memoryRoot, stateDir, logger: h.logger, ...over });
  const readRecord = async (): Promise<StateRecord | null> => {
    if (!(await h.exists(recordPath))) return null;
    const parsed = parseRecord(await h.fs.readFile(recordPath));
    if (!parsed.ok) throw new Error(parsed.reason);
    return parsed.record;
  };
  const stateFiles = async () => (await h.fs.readdir(stateDir)).map((e) => e.name);

  describe('the state record', () => {
    // Recover reaches the folder by the identity the record names, and leaves any other as
    // `folder_replaced`. A pass that makes a wiped folder again must not leave a record naming
    // the folder that is gone: the record names the new one once it exists, and none while it is
    // being made (a worker killed in between: recover follows the record by path and marker).
    it('a folder a pass was making again when it failed (its marker could not be written): the record names no folder, and recover takes the empty one (it was left folder_replaced)', async () => {
      const faulty = new FaultyFileSystem(h.fs);
      const m = await mount({ fileSystem: faulty });
      await h.remove(dir);
      faulty.failMatching('writeFile', /anthropic-memory-store|mm-tmp/, 'EIO', 10);
      faulty.failMatching('writeFileExclusive', /anthropic-memory-store|mm-tmp/, 'EIO', 10);
      const failed = await m.reconcile({ force: true });
      expect(failed!.stores[0]!.status).toBe('failed');
      expect(await h.exists(dir)).toBe(true);
      expect((await readRecord())!.folder_ids).toBeUndefined();
      faulty.heal();
      const report = await recover();
      expect(report.stores[0]!.outcome).not.toBe('left');
      expect(await h.exists(dir)).toBe(false);
    });

    it('is written at materialize with the downloaded baseline, ids and where the store is mounted', async () => {
      await mount();
      const record = (await readRecord())!;
      expect(record).toMatchObject({
        phase: 'mounted',
        memory_store_id: STORE,
        access: 'read_write',
        mount_path: '/mnt/memory/notes',
        host_path: dir,
        memory_root: h.memoryRoot,
        pid: process.pid,
        baseline: { '/a.md': sha('alpha'), '/b.md': sha('beta'), '/d/c.md': sha('gamma') },
      });
      const ids = Object.fromEntries(h.client.memories(STORE).map((m) => [m.path, m.id]));
      expect(record.memory_ids).toEqual(ids);
      expect(await stateFiles()).toEqual([recordFileName(dir)]);
    });

    it('is rewritten after every pass, and removed with the folder at finalize', async () => {
      const m = await mount();
      await h.write(`${dir}/a.md`, 'alpha 2');
      h.client.writeMemory(STORE, '/n.md', 'new remote');
      await m.reconcile({ force: true });
      const record = (await readRecord())!;
      expect(record.baseline['/a.md']).toBe(sha('alpha 2'));
      expect(record.baseline['/n.md']).toBe(sha('new remote'));
      expect(record.memory_ids['/n.md']).toBe(h.client.memories(STORE).find((x) => x.path === '/n.md')!.id);
      const report = await m.finalize();
      expect(report.removed).toContain(dir);
      expect(await stateFiles()).toEqual([]);
    });

    it('records the sha of each push before it is sent', async () => {
      const m = await mount();
      await h.write(`${dir}/a.md`, 'alpha 2');
      let seen: StateRecord | null = null;
      const update = h.client.update.bind(h.client);
      h.client.update = async (...args) => {
        seen = await readRecord();
        return update(...args);
      };
      await m.reconcile({ force: true });
      expect(seen!.unsettled_writes).toEqual({ '/a.md': sha('alpha 2') });
      expect((await readRecord())!.unsettled_writes).toEqual({});
    });

    it('a record written before a push names the state the pass planned from: a write of unknown outcome the store showed is the baseline, and a crash then loses nothing', async () => {
      const m = await mount({ retryBudget: 0.05 });
      // Pass 1: the update lands, but its answer is lost, and the store stays unreachable for
      // the pass's retries: the write's outcome is unknown.
      await h.write(`${dir}/a.md`, 'alpha 2');
      const update = h.client.update.bind(h.client);
      let landed = false;
      h.client.update = async (...args) => {
        if (!landed) {
          landed = true;
          await update(...args);
        }
        throw new StoreError('unavailable', 'the answer was lost');
      };
      await m.reconcile({ force: true });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha 2');
      expect((await readRecord())!.unsettled_writes).toEqual({ '/a.md': sha('alpha 2') });
      // Pass 2: the store shows that write (the engine's own), and the agent's newer edit goes
      // out. The worker dies while that push is in flight: the record of that moment is what
      // recovery gets.
      await h.write(`${dir}/a.md`, 'alpha 3');
      let atPush: Uint8Array | null = null;
      h.client.update = async () => {
        atPush = await h.fs.readFile(recordPath);
        throw new StoreError('unavailable', 'the worker died');
      };
      await m.reconcile({ force: true });
      const parsed = parseRecord(atPush!);
      if (!parsed.ok) throw new Error(parsed.reason);
      expect(parsed.record.baseline['/a.md']).toBe(sha('alpha 2'));
      expect(parsed.record.unsettled_writes).toEqual({ '/a.md': sha('alpha 3') });

      h.client.update = update;
      await h.fs.writeFile(recordPath, atPush!);
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', conflicts: [] });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha 3');
    });

    it('a failed materialize removes the records of the folders it removed', async () => {
      h.client.failNext('list', 'unauthorized');
      await expect(mount()).rejects.toMatchObject({ code: 'download_failed' });
      expect(await h.exists(dir)).toBe(false);
      expect(await stateFiles()).toEqual([]);
    });

    it('materialize refuses a missing stateDir before creating anything (state_dir_unusable)', async () => {
      await expect(mount({ stateDir: `${stateDir}-missing` })).rejects.toMatchObject({ code: 'state_dir_unusable' });
      expect(await h.exists(dir)).toBe(false);
    });

    it("a restart refused by a dead mounter's folder leaves that mounter's record as it was", async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'unpushed');
      const before = await h.fs.readFile(recordPath);
      await expect(h.mounter({ stateDir }).materialize([notesResource()])).rejects.toMatchObject({ code: 'mount_path_exists' });
      expect(await h.fs.readFile(recordPath)).toEqual(before);
    });
  });

  describe('recover', () => {
    it('pushes edits and new files made before the crash, then removes the folder and its record', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'alpha edited');
      await h.write(`${dir}/new/x.md`, 'brand new');
      // crash: no finalize
      const report = await recover();
      expect(h.client.snapshot(STORE)).toEqual({ ...SEED, '/a.md': 'alpha edited', '/new/x.md': 'brand new' });
      expect(report.stores).toHaveLength(1);
      expect(report.stores[0]).toMatchObject({
        outcome: 'recovered',
        memoryStoreId: STORE,
        path: dir,
        pushed: ['/a.md', '/new/x.md'],
        conflicts: [],
        unpushed: [],
        recordRemoved: true,
        neverMounted: false,
      });
      expect(await h.exists(dir)).toBe(false);
      expect(await stateFiles()).toEqual([]);
      expect(report.unvouched).toEqual([]);
      // The path is free again: a new session mounts it.
      const again = h.mounter({ stateDir });
      await again.materialize([notesResource()]);
      expect(await h.read(`${dir}/a.md`)).toBe('alpha edited');
      await again.finalize();
    });

    it('a create that meets 503 twice (not applied) is sent again after a fresh read: pushed once, folder and record removed', async () => {
      await mount();
      await h.write(`${dir}/new/x.md`, 'brand new');
      h.client.failNext('create', 'unavailable', 2);
      const report = await recover();
      expect(h.client.count('create')).toBe(3);
      expect(h.client.snapshot(STORE)).toEqual({ ...SEED, '/new/x.md': 'brand new' });
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/new/x.md'], unpushed: [], recordRemoved: true });
      expect(await h.exists(dir)).toBe(false);
    });

    it('an update told "changed" by a store that still holds the base is decided again from a full listing: pushed, folder and record removed', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'local edit');
      h.client.failNext('update', 'precondition_failed');
      const report = await recover();
      expect(h.client.count('update')).toBe(2);
      expect(h.client.snapshot(STORE)['/a.md']).toBe('local edit');
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/a.md'], unpushed: [], recordRemoved: true });
      expect(await h.exists(dir)).toBe(false);
    });

    it('pushes against the recorded baseline: a memory that moved on in the store wins a real conflict', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'local edit');
      h.client.writeMemory(STORE, '/a.md', 'remote edit');
      const report = await recover();
      expect(h.client.snapshot(STORE)['/a.md']).toBe('remote edit');
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', conflicts: ['/a.md'], pushed: [], unpushed: [] });
      expect(await h.exists(dir)).toBe(false);
    });

    it("follows renames with the record's memory ids: an edit of a memory renamed in the store goes to it, a local rename renames it", async () => {
      await mount();
      const ids = new Map(h.client.memories(STORE).map((m) => [m.path, m.id]));
      expect((await readRecord())!.memory_ids['/a.md']).toBe(ids.get('/a.md'));
      h.client.renameMemory(STORE, '/a.md', '/moved/a.md');
      await h.write(`${dir}/a.md`, 'alpha edited');
      await h.fs.rename(`${dir}/b.md`, `${dir}/b2.md`);
      // crash: no finalize
      const report = await recover();
      const after = new Map(h.client.memories(STORE).map((m) => [m.path, m.id]));
      expect(after.get('/moved/a.md')).toBe(ids.get('/a.md'));
      expect(after.get('/b2.md')).toBe(ids.get('/b.md'));
      expect(after.has('/a.md') || after.has('/b.md')).toBe(false);
      expect(h.client.snapshot(STORE)['/moved/a.md']).toBe('alpha edited');
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', conflicts: [], unpushed: [] });
    });

    it.each(['log_only', 'disabled'] as const)('with deletions %s (kept in the record): a local move is created at its new path, the old memory kept', async (mode) => {
      await mount({ memory_sync_deletions: mode });
      expect((await readRecord())!.deletion_mode).toBe(mode);
      const ids = new Map(h.client.memories(STORE).map((m) => [m.path, m.id]));
      await h.fs.rename(`${dir}/b.md`, `${dir}/b2.md`);
      // crash: no finalize
      const report = await recover();
      expect(h.client.snapshot(STORE)).toMatchObject({ '/b.md': 'beta', '/b2.md': 'beta' });
      expect(new Map(h.client.memories(STORE).map((m) => [m.path, m.id])).get('/b.md')).toBe(ids.get('/b.md'));
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/b2.md'], deletionsNotSent: ['/b.md'], unpushed: [] });
    });

    it('a record that does not say its deletion mode (written before it was kept): a local move is not a rename', async () => {
      await mount();
      const record = (await readRecord())!;
      delete record.deletion_mode;
      await h.fs.writeFile(recordPath, new TextEncoder().encode(JSON.stringify(record)));
      await h.fs.rename(`${dir}/b.md`, `${dir}/b2.md`);
      await recover();
      expect(h.client.snapshot(STORE)).toMatchObject({ '/b.md': 'beta', '/b2.md': 'beta' });
    });

    it('no false conflict: a file unchanged since the recorded baseline lets a later remote edit stand, and nothing is pulled', async () => {
      await mount();
      h.client.writeMemory(STORE, '/b.md', 'remote edit');
      const report = await recover();
      expect(h.client.snapshot(STORE)['/b.md']).toBe('remote edit');
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', conflicts: [], pushed: [] });
      expect(h.client.count('get')).toBe(0);
    });

    it('no false conflict for a push the dead mounter sent but never recorded as done', async () => {
      const m = await mount();
      await h.write(`${dir}/a.md`, 'pushed before the crash');
      // The crash comes right after the update reached the store: the record is as it was then.
      let atPush: Uint8Array | null = null;
      const update = h.client.update.bind(h.client);
      h.client.update = async (...args) => {
        const result = await update(...args);
        atPush = await h.fs.readFile(recordPath);
        return result;
      };
      await m.reconcile({ force: true });
      await h.fs.writeFile(recordPath, atPush!);
      await h.write(`${dir}/a.md`, 'edited again after the push');
      const report = await recover();
      expect(h.client.snapshot(STORE)['/a.md']).toBe('edited again after the push');
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', conflicts: [], pushed: ['/a.md'] });
    });

    it('records each of its own pushes before it is sent, as the mounter does: a recover killed mid-push leaves a record that names the write', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'alpha edited');
      await h.write(`${dir}/n.md`, 'brand new');
      // crash: no finalize. The record holds no write of these: the mounter never saw them.
      expect((await readRecord())!.unsettled_writes).toEqual({});
      const seen = new Map<string, Record<string, string>>();
      const update = h.client.update.bind(h.client);
      const create = h.client.create.bind(h.client);
      h.client.update = async (...args) => {
        seen.set('update', (await readRecord())!.unsettled_writes);
        return update(...args);
      };
      h.client.create = async (...args) => {
        seen.set('create', (await readRecord())!.unsettled_writes);
        return create(...args);
      };
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/a.md', '/n.md'] });
      expect(seen.get('update')).toMatchObject({ '/a.md': sha('alpha edited') });
      expect(seen.get('create')).toMatchObject({ '/n.md': sha('brand new') });
    });

    it('never deletes in the store: a file missing after the crash keeps its memory, and is reported', async () => {
      await mount({ deleteGracePeriod: 0 });
      await h.remove(`${dir}/b.md`);
      const report = await recover();
      expect(h.client.snapshot(STORE)).toEqual(SEED);
      expect(h.client.count('delete')).toBe(0);
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', deletionsNotSent: ['/b.md'] });
      expect(await h.exists(dir)).toBe(false);
    });

    it('never pushes a read-only store, and removes its folder', async () => {
      await mount({}, SEED, { access: 'read_only' });
      await h.write(`${dir}/a.md`, 'local change in a read-only store');
      await h.write(`${dir}/z.md`, 'new file in a read-only store');
      const report = await recover();
      expect(h.client.snapshot(STORE)).toEqual(SEED);
      expect(h.client.count('create') + h.client.count('update')).toBe(0);
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', access: 'read_only', pushed: [], unpushed: [] });
      expect(await h.exists(dir)).toBe(false);
    });

    it('leaves a folder whose marker names another store exactly as it is, with its record', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'edited');
      await h.fs.writeFile(`${dir}/${MARKER_FILE}`, new TextEncoder().encode(JSON.stringify({ memory_store_id: 'memstore_other' })));
      const before = await h.read(`${dir}/a.md`);
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'left', left: { code: 'marker_mismatch' }, recordRemoved: false });
      expect(await h.read(`${dir}/a.md`)).toBe(before);
      expect(await h.exists(recordPath)).toBe(true);
      expect(h.client.count('update') + h.client.count('create')).toBe(0);
    });

    it('leaves folders no record names untouched, and reports them with the store their marker names', async () => {
      // A mounter without stateDir crashed: its folder has a marker and no record.
      await h.mountNotes();
      await h.write(`${dir}/a.md`, 'edited');
      await h.write(`${h.memoryRoot}/stray.txt`, 'x');
      const report = await recover();
      expect(report.stores).toEqual([]);
      expect(report.unvouched).toEqual([
        { path: dir, type: 'directory', reason: expect.stringMatching(/no state record/), markerStoreId: STORE },
        { path: `${h.memoryRoot}/stray.txt`, type: 'file', reason: expect.stringMatching(/no state record/) },
      ]);
      expect(await h.read(`${dir}/a.md`)).toBe('edited');
      expect(h.client.count('update')).toBe(0);
    });

    it('reports an unreadable record without throwing, and leaves its folder untouched', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'edited');
      await h.fs.writeFile(recordPath, new TextEncoder().encode('{"format":"memory-mounter/state-record","ver'));
      const report = await recover();
      expect(report.unreadableRecords).toEqual([{ file: recordFileName(dir), reason: expect.stringMatching(/not valid JSON/) }]);
      expect(report.stores).toEqual([]);
      expect(report.unvouched.map((u) => u.path)).toEqual([dir]);
      expect(await h.read(`${dir}/a.md`)).toBe('edited');
      expect(await h.exists(recordPath)).toBe(true);
    });

    it('removes a folder whose mount never finished materializing, without syncing it', async () => {
      const list = h.client.list.bind(h.client);
      let stall!: () => void;
      h.client.seed(STORE, SEED);
      h.client.list = async function* (storeId, opts): AsyncGenerator<StoreMemory> {
        await new Promise<void>((resolve) => (stall = resolve));
        yield* list(storeId, opts);
      };
      const m = h.mounter({ stateDir });
      void m.materialize([notesResource()]).catch(() => {});
      await vi_waitFor(async () => (await h.exists(`${dir}/${MARKER_FILE}`)) && stall !== undefined);
      expect((await readRecord())!.phase).toBe('materializing');
      // crash while downloading
      h.client.list = list;
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', neverMounted: true, sync: null, recordRemoved: true });
      expect(await h.exists(dir)).toBe(false);
      expect(h.client.count('update') + h.client.count('create')).toBe(0);
      stall();
    });

    it('removes a folder left mid-download with a file part-written in place, and pushes none of it', async () => {
      h.client.seed(STORE, SEED);
      let halfWritten = false;
      // The download's create of b.md makes the file and writes half of it, then never returns: the kill.
      const fs = aroundCreateFile(h.fs, async (create, path, data, opts) => {
        if (!path.endsWith('/b.md')) return create(path, data, opts);
        await create(path, data.subarray(0, 2), opts);
        halfWritten = true;
        return new Promise<void>(() => {});
      });
      void h.mounter({ stateDir, fileSystem: fs }).materialize([notesResource()]).catch(() => {});
      await vi_waitFor(async () => halfWritten);
      expect(await h.read(`${dir}/b.md`)).toBe('be');
      expect((await readRecord())!.phase).toBe('materializing');
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'recovered', neverMounted: true, sync: null, pushed: [], recordRemoved: true });
      expect(await h.exists(dir)).toBe(false);
      expect(h.client.count('update') + h.client.count('create')).toBe(0);
      expect(h.client.memories(STORE).find((m) => m.path === '/b.md')!.content).toBe('beta');
    });

    it('a different folder at the recorded path is left untouched (folder_replaced), never adopted, even with a copy of the marker', async () => {
      await mount();
      expect((await readRecord())!.folder_ids?.map((f) => f.path)).toEqual([dir]);
      const marker = (await h.read(`${dir}/${MARKER_FILE}`))!;
      // The agent moves the folder away and puts a look-alike in its place.
      await h.fs.rename(dir, `${dir}-old`);
      await h.fs.mkdir(dir);
      await h.write(`${dir}/${MARKER_FILE}`, marker);
      await h.write(`${dir}/a.md`, 'planted');
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'left', left: { code: 'folder_replaced' } });
      expect(await h.read(`${dir}/a.md`)).toBe('planted');
      expect(h.client.memories(STORE).find((m) => m.path === '/a.md')!.content).toBe('alpha');
    });

    it('a never-mounted folder whose marker write was cut off is removed if it holds only that temp file, left otherwise', async () => {
      await mount();
      const record = (await readRecord())!;
      // As a crash during the marker's write leaves it: before the folder's identity was recorded.
      const { folder_ids: _ids, memory_root_id: _root, ...before } = record;
      const rewrite = () => h.fs.writeFile(recordPath, new TextEncoder().encode(JSON.stringify({ ...before, phase: 'materializing', baseline: {} })));
      await rewrite();
      for (const entry of await h.fs.readdir(dir)) await h.remove(`${dir}/${entry.name}`);
      await h.write(`${dir}/.mm-tmp-0123456789abcdef`, '{"memory_store_id":"mems');
      const removed = await recover();
      expect(removed.stores[0]).toMatchObject({ outcome: 'recovered', neverMounted: true });
      expect(await h.exists(dir)).toBe(false);

      await h.fs.mkdir(dir);
      await rewrite();
      await h.write(`${dir}/notes.md`, 'not a temp file');
      const left = await recover();
      expect(left.stores[0]).toMatchObject({ outcome: 'left', left: { code: 'marker_mismatch' } });
      expect(await h.read(`${dir}/notes.md`)).toBe('not a temp file');
    });

    it("removes temp files of record writes a crash cut short: the FileSystem's once stale, older versions' once their writer is provably gone", async () => {
      const name = recordFileName(dir);
      const deadPid = 2 ** 22 + 12345; // above Linux's pid_max: no such process
      const files = {
        dead: `${name}.tmp-${deadPid}-0badf00d`,
        alive: `${name}.tmp-${process.ppid}-0badf00d`,
        oldFsTemp: '.mm-tmp-00000000000000aa',
        freshFsTemp: '.mm-tmp-00000000000000bb',
      };
      for (const file of Object.values(files)) await h.write(`${stateDir}/${file}`, 'half a record');
      const old = new Date(Date.now() - 10 * 60_000);
      if (disk === 'memfs') (h.fs as unknown as { vol: { utimesSync(p: string, a: Date, m: Date): void } }).vol.utimesSync(`${stateDir}/${files.oldFsTemp}`, old, old);
      else (await import('node:fs')).utimesSync(`${stateDir}/${files.oldFsTemp}`, old, old);
      const report = await recover();
      expect(report.stores).toEqual([]);
      expect((await stateFiles()).sort()).toEqual([files.alive, files.freshFsTemp].sort());
    });

    it('with memoryStoreIds, recovers those stores only and leaves the others unreported and untouched', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'edited');
      const other = await recover({ memoryStoreIds: ['memstore_other'] });
      expect(other.stores).toEqual([]);
      expect(other.unvouched).toEqual([]);
      expect(await h.read(`${dir}/a.md`)).toBe('edited');
      expect(h.client.count('update')).toBe(0);
      const mine = await recover({ memoryStoreIds: [STORE] });
      expect(mine.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/a.md'] });
      await expect(recover({ memoryStoreIds: 'x' })).rejects.toMatchObject({ option: 'memoryStoreIds' });
    });

    it('removes the record of a folder that is already gone', async () => {
      await mount();
      await h.remove(dir);
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'gone', recordRemoved: true });
      expect(await stateFiles()).toEqual([]);
    });

    it("leaves a folder whose record's writer is still running on this host", async () => {
      await mount();
      const record = (await readRecord())!;
      await h.fs.writeFile(recordPath, new TextEncoder().encode(JSON.stringify({ ...record, pid: process.ppid })));
      await h.write(`${dir}/a.md`, 'a live session is still writing');
      const report = await recover();
      expect(report.stores[0]).toMatchObject({ outcome: 'left', left: { code: 'owner_alive' } });
      expect(h.client.count('update')).toBe(0);
      expect(await h.exists(dir)).toBe(true);
    });

    it('keeps folder and record when changes cannot be pushed, records what was, and finishes on a later run', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'alpha edited');
      await h.write(`${dir}/b.md`, 'beta edited');
      const update = h.client.update.bind(h.client);
      h.client.update = async (storeId, id, input, opts) => {
        if (h.client.memories(STORE).find((x) => x.id === id)?.path === '/b.md') throw new StoreError('unauthorized', 'down');
        return update(storeId, id, input, opts);
      };
      const first = await recover();
      expect(first.stores[0]).toMatchObject({ outcome: 'left', left: { code: 'unpushed' }, pushed: ['/a.md'], recordRemoved: false });
      expect(first.stores[0]!.unpushed.map((u) => u.path)).toEqual(['/b.md']);
      expect(await h.exists(dir)).toBe(true);
      expect((await readRecord())!.baseline['/a.md']).toBe(sha('alpha edited'));
      h.client.update = update;
      const second = await recover();
      expect(second.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/b.md'], conflicts: [] });
      expect(h.client.snapshot(STORE)).toMatchObject({ '/a.md': 'alpha edited', '/b.md': 'beta edited' });
      expect(await h.exists(dir)).toBe(false);
    });

    it('is bounded by finalSyncTimeout against a store that never answers, and keeps the folder', async () => {
      await mount();
      await h.write(`${dir}/a.md`, 'edited');
      h.client.list = neverAnsweringList;
      const started = Date.now();
      const report = await recover({ finalSyncTimeout: 0.3, requestTimeout: 10 });
      expect(Date.now() - started).toBeLessThan(0.3 * 1000 + 2000);
      expect(report.timedOut).toBe(true);
      expect(report.stores[0]).toMatchObject({ outcome: 'left', left: { code: 'unpushed' } });
      expect(report.stores[0]!.unpushed.map((u) => u.path)).toEqual(['/a.md']);
      expect(await h.read(`${dir}/a.md`)).toBe('edited');
    });
  });

  describe('finalize with keepUnpushed', () => {
    const rejectUpdates = () => {
      h.client.update = async () => {
        throw new StoreError('unauthorized', 'no');
      };
    };

    it('leaves a folder with unpushed changes, and its record, for recover', async () => {
      const m = await mount({ keepUnpushed: true });
      await h.write(`${dir}/a.md`, 'cannot be pushed now');
      const update = h.client.update.bind(h.client);
      rejectUpdates();
      const report = await m.finalize();
      expect(report.unpushed.map((u) => u.path)).toContain('/a.md');
      expect(report.leftInPlace).toEqual([{ path: dir, code: 'unpushed_kept', reason: expect.stringMatching(/keepUnpushed/) }]);
      expect(report.removed).not.toContain(dir);
      expect(await h.read(`${dir}/a.md`)).toBe('cannot be pushed now');
      expect(await h.exists(recordPath)).toBe(true);
      h.client.update = update;
      const recovered = await recover();
      expect(recovered.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/a.md'] });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('cannot be pushed now');
    });

    it('a finalize cut short before its scan ended keeps the folder unread (whatever keepUnpushed says): an edit no scan saw is not removed unnamed', async () => {
      const m = await mount();
      // Made after the last pass, and the signal is aborted before finalize's own scan can run.
      await h.write(`${dir}/a.md`, 'edited after the last pass');
      const report = await m.finalize({ signal: AbortSignal.abort() });
      expect(report.unpushed).toEqual([expect.objectContaining({ memoryStoreId: STORE, path: '/', code: 'folder_unreadable' })]);
      expect(report.leftInPlace).toEqual([expect.objectContaining({ path: dir, code: 'unreadable_kept' })]);
      expect(report.removed).not.toContain(dir);
      expect(await h.read(`${dir}/a.md`)).toBe('edited after the last pass');
      expect(await h.exists(recordPath)).toBe(true);
      const recovered = await recover();
      expect(recovered.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/a.md'] });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('edited after the last pass');
    });

    it('still removes a folder whose changes were all pushed', async () => {
      const m = await mount({ keepUnpushed: true });
      await h.write(`${dir}/a.md`, 'pushed fine');
      const report = await m.finalize();
      expect(report.leftInPlace).toEqual([]);
      expect(report.removed).toContain(dir);
      expect(await stateFiles()).toEqual([]);
    });

    it('is off by default: the folder goes, and its unpushed changes with it', async () => {
      const m = await mount();
      await h.write(`${dir}/a.md`, 'lost at finalize');
      rejectUpdates();
      const report = await m.finalize();
      expect(report.unpushed.map((u) => u.path)).toContain('/a.md');
      expect(report.removed).toContain(dir);
      expect(await stateFiles()).toEqual([]);
    });
  });
});

/** Polls `check` until it holds (at most ~2 s). */
async function vi_waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('timed out waiting');
}
