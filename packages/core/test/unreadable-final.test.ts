import { posix } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryMounter, recordFileName, type MemoryMounterOptions } from '@memory-mounter/core';
import { FaultyFileSystem } from '@memory-mounter/testing';
import { DISKS, STORE, useHarness } from './harness.js';

/**
 * Issue 18 item 3, SPEC 6.6: a local file the final scans cannot read is a change of unknown
 * content. It is read again within the final sync (EMFILE and EIO are often transient); what
 * stays unreadable is named in `unpushed` (code `unreadable`) and its folder is kept, with its
 * state record, whatever `keepUnpushed` says; `recover` follows the same rule. The machine runs
 * the tests as root, where `chmod 000` does not stop a read: the FaultyFileSystem stands for it.
 */
describe.each(DISKS)('an unreadable file at the final scan, on %s', (disk) => {
  const h = useHarness(disk);
  let fs: FaultyFileSystem;
  let stateDir: string;
  let dir: string;
  beforeEach(async () => {
    fs = new FaultyFileSystem(h.fs);
    stateDir = posix.join(posix.dirname(h.memoryRoot), 'state');
    await h.fs.mkdir(stateDir, { recursive: true });
    dir = h.notesDir;
  });
  const mount = (options: Partial<MemoryMounterOptions> = {}, resource: Record<string, unknown> = {}) =>
    h.mountNotes({ fileSystem: fs, stateDir, ...options }, undefined, resource);
  const stored = (path: string) => h.client.memories(STORE).find((m) => m.path === path)?.content;
  const recordExists = () => h.exists(posix.join(stateDir, recordFileName(dir)));
  const recover = () => MemoryMounter.recover({ storeClient: h.client, fileSystem: fs, memoryRoot: h.memoryRoot, stateDir, logger: h.logger });

  describe.each(['completed', 'aborted'] as const)('finalize %s', (outcome) => {
    it.each(['EACCES', 'EIO', 'EMFILE'])('stays unreadable (%s): named unpushed, the folder and its record kept; recover pushes it later', async (code) => {
      const m = await mount();
      await h.write(`${dir}/a.md`, 'alpha edited');
      await h.write(`${dir}/b.md`, 'beta edited, then made unreadable');
      await h.write(`${dir}/n.md`, 'new');
      fs.failAlways('openFile', `${dir}/b.md`, code);
      const report = await m.finalize({ outcome });
      // What could be read went out.
      expect(stored('/a.md')).toBe('alpha edited');
      expect(stored('/n.md')).toBe('new');
      expect(stored('/b.md')).toBe('beta');
      expect(report.unpushed).toEqual([{ memoryStoreId: STORE, path: '/b.md', code: 'unreadable', reason: expect.stringContaining(code), memoryId: expect.stringMatching(/^mem_/) }]);
      expect(report.removed).toEqual([]);
      expect(report.leftInPlace).toEqual([{ path: dir, code: 'unreadable_kept', reason: expect.stringMatching(/1 path\(s\) could not be read/) }]);
      expect(await h.read(`${dir}/b.md`)).toBe('beta edited, then made unreadable');
      expect(await recordExists()).toBe(true);

      // The next recover, once the file can be read, pushes it and removes the folder.
      fs.heal();
      const recovered = await recover();
      expect(recovered.stores[0]).toMatchObject({ outcome: 'recovered', pushed: ['/b.md'], unpushed: [] });
      expect(stored('/b.md')).toBe('beta edited, then made unreadable');
      expect(await h.exists(dir)).toBe(false);
    });

    it.each(['EIO', 'EMFILE', 'EACCES'])('fails once (%s): read again within the final sync, pushed, the folder removed', async (code) => {
      const m = await mount();
      await h.write(`${dir}/b.md`, 'beta edited');
      // Once for each final pass: the final sync's scan and (aborted: the only pass) the flush's.
      fs.fail('openFile', `${dir}/b.md`, code, outcome === 'completed' ? 2 : 1);
      const report = await m.finalize({ outcome });
      expect(stored('/b.md')).toBe('beta edited');
      expect(report.unpushed).toEqual([]);
      expect(report.removed).toEqual([dir]);
    });
  });

  it('a push that fails reading its file (EIO once, at the check before it sends) is sent again within the flush', async () => {
    const m = await mount();
    await h.write(`${dir}/b.md`, 'beta edited');
    fs.fail('lstat', `${dir}/b.md`, 'EIO', 1);
    const report = await m.finalize({ outcome: 'aborted' });
    expect(stored('/b.md')).toBe('beta edited');
    expect(report.flush.stores[0]).toMatchObject({ pushed: ['/b.md'], errors: [] });
    expect(report.unpushed).toEqual([]);
    expect(report.removed).toEqual([dir]);
  });

  it('a push that keeps failing reading its file is named `unreadable` and keeps the folder', async () => {
    const m = await mount();
    await h.write(`${dir}/a.md`, 'alpha edited');
    await h.write(`${dir}/b.md`, 'beta edited');
    fs.failAlways('lstat', `${dir}/b.md`, 'EIO');
    const report = await m.finalize({ outcome: 'aborted' });
    expect(stored('/a.md')).toBe('alpha edited');
    expect(report.unpushed).toEqual([
      { memoryStoreId: STORE, path: '/b.md', code: 'unreadable', reason: expect.stringMatching(/could not be read to push it: .*EIO/), memoryId: expect.stringMatching(/^mem_/) },
    ]);
    expect(report.leftInPlace).toMatchObject([{ path: dir, code: 'unreadable_kept' }]);
    expect(await h.read(`${dir}/b.md`)).toBe('beta edited');
  });

  it('a folder the scan cannot list is named (its path, `unreadable`) and keeps the store folder', async () => {
    const m = await mount();
    await h.write(`${dir}/d/c.md`, 'gamma edited');
    fs.failAlways('readdir', `${dir}/d`, 'EIO');
    const report = await m.finalize();
    expect(stored('/d/c.md')).toBe('gamma');
    expect(report.unpushed).toEqual([{ memoryStoreId: STORE, path: '/d', code: 'unreadable', reason: expect.stringContaining('EIO') }]);
    expect(report.leftInPlace).toMatchObject([{ path: dir, code: 'unreadable_kept' }]);
    expect(await h.read(`${dir}/d/c.md`)).toBe('gamma edited');
  });

  it('a store folder the scan cannot see into at all is named as `/` and kept', async () => {
    const m = await mount();
    await h.write(`${dir}/a.md`, 'alpha edited');
    fs.failAlways('readdir', dir, 'EACCES');
    const report = await m.finalize();
    expect(stored('/a.md')).toBe('alpha');
    expect(report.unpushed).toEqual([{ memoryStoreId: STORE, path: '/', code: 'folder_unreadable', reason: expect.stringContaining('EACCES') }]);
    expect(report.leftInPlace).toMatchObject([{ path: dir, code: 'unreadable_kept' }]);
    expect(await recordExists()).toBe(true);
    expect(await h.read(`${dir}/a.md`)).toBe('alpha edited');
  });

  it('a store marker that cannot be read keeps the folder too', async () => {
    const m = await mount();
    fs.failAlways('openFile', h.markerPath, 'EIO');
    const report = await m.finalize({ outcome: 'aborted' });
    expect(report.unpushed).toEqual([{ memoryStoreId: STORE, path: '/', code: 'folder_unreadable', reason: expect.stringMatching(/marker/) }]);
    expect(report.leftInPlace).toMatchObject([{ path: dir, code: 'unreadable_kept' }]);
  });

  it('with keepUnpushed too: kept once, with the unreadable code', async () => {
    const m = await mount({ keepUnpushed: true });
    await h.write(`${dir}/a.md`, 'alpha edited');
    fs.failAlways('openFile', `${dir}/a.md`, 'EIO');
    const report = await m.finalize();
    expect(report.leftInPlace).toMatchObject([{ path: dir, code: 'unreadable_kept' }]);
  });

  it('a read-only store: nothing of it would ever be pushed, so an unreadable file does not keep its folder', async () => {
    const m = await mount({}, { access: 'read_only' });
    await h.write(`${dir}/a.md`, 'alpha edited');
    fs.failAlways('openFile', `${dir}/a.md`, 'EIO');
    const report = await m.finalize();
    expect(report.unpushed).toEqual([]);
    expect(report.removed).toEqual([dir]);
    expect(await recordExists()).toBe(false);
  });

  it('recover after a crash: a file it cannot read is named unpushed and keeps the folder and its record', async () => {
    const m = await mount();
    await h.write(`${dir}/a.md`, 'alpha edited');
    await h.write(`${dir}/b.md`, 'beta edited');
    void m; // crashed: never finalized
    fs.failAlways('openFile', `${dir}/b.md`, 'EIO');
    const report = await recover();
    const entry = report.stores[0]!;
    expect(entry).toMatchObject({ outcome: 'left', left: { code: 'unpushed' }, pushed: ['/a.md'] });
    expect(entry.unpushed).toEqual([{ path: '/b.md', code: 'unreadable', reason: expect.stringContaining('EIO'), memoryId: expect.stringMatching(/^mem_/) }]);
    expect(await h.read(`${dir}/b.md`)).toBe('beta edited');
    expect(await recordExists()).toBe(true);
  });
});

/**
 * B45 (the fuzz, seed 20261203): in an ordinary pass, a new file the scan could not open while
 * another writer put exactly its bytes in the store. Left blocked, the agent's next edit met the
 * store's content as a "both changed" conflict, though the store held the agent's own content.
 */
describe.each(DISKS)('an unreadable file in an ordinary pass, on %s', (disk) => {
  const h = useHarness(disk);
  let fs: FaultyFileSystem;
  beforeEach(() => {
    fs = new FaultyFileSystem(h.fs);
  });

  it('read once more: holding exactly the store\'s new memory, both sides agree, and the next edit is an update, no conflict', async () => {
    const m = await h.mountNotes({ fileSystem: fs });
    const conflicts: unknown[] = [];
    m.on('conflict', (e) => conflicts.push(e));
    await h.write(`${h.notesDir}/n.md`, 'the same note');
    h.client.writeMemory(STORE, '/n.md', 'the same note');
    fs.fail('openFile', `${h.notesDir}/n.md`, 'EACCES');
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.conflicts).toEqual([]);
    await h.write(`${h.notesDir}/n.md`, 'the note, edited');
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second).toMatchObject({ conflicts: [], pushed: ['/n.md'] });
    expect(conflicts).toEqual([]);
    expect(h.client.snapshot(STORE)['/n.md']).toBe('the note, edited');
  });

  it('read once more: other content than the store\'s stays as the scan left it, nothing written', async () => {
    const m = await h.mountNotes({ fileSystem: fs });
    await h.write(`${h.notesDir}/n.md`, "the agent's note");
    h.client.writeMemory(STORE, '/n.md', "another writer's note");
    fs.fail('openFile', `${h.notesDir}/n.md`, 'EACCES');
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.skippedPaths).toContainEqual(expect.objectContaining({ path: '/n.md', code: 'unreadable' }));
    expect(first.pulled).toEqual([]);
    expect(await h.read(`${h.notesDir}/n.md`)).toBe("the agent's note");
  });
});
