import { mkdirSync, readlinkSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem, type DirWatch, type FileSystem } from '@memory-mounter/core';
import { FULL_SCAN_EVERY_PASSES } from '../src/local/folder-watch.js';
import { notesResource, STORE, useHarness } from './harness.js';

/**
 * Issue 24 item 2: with a folder watch (NodeFileSystem on Linux), an idle pass lists no folder;
 * a change lists the folders it touched; what a watch cannot see waits at most for the full
 * scan on a cadence, or finalize's. The watch is a hint: whatever it says, every act goes
 * through the confined folder (the race suite's attack-watch tests the hostile side).
 */

/** The engine's filesystem, counted: listings, batch stats, watches started and their events. */
class Counted implements FileSystem {
  readdirs: string[] = [];
  lstatAlls = 0;
  watches = 0;
  events = 0;
  /** Watches that never report anything (a change the watch misses). */
  deaf = false;
  /** Watches of the folder whose host path ends so never report anything. */
  deafTo: string | null = null;
  /** The next open of a file whose path ends so fails with EMFILE (a descriptor limit of the moment). */
  failOpenOf: string | null = null;
  readonly lstatAll?: FileSystem['lstatAll'];
  readonly writeFileExclusive?: FileSystem['writeFileExclusive'];
  readonly readLinkSync?: FileSystem['readLinkSync'];
  readonly watchDir?: FileSystem['watchDir'];

  constructor(readonly inner: FileSystem) {
    if (inner.lstatAll) this.lstatAll = (paths) => (this.lstatAlls++, inner.lstatAll!(paths));
    if (inner.writeFileExclusive) this.writeFileExclusive = inner.writeFileExclusive.bind(inner);
    if (inner.readLinkSync) this.readLinkSync = inner.readLinkSync.bind(inner);
    if (inner.watchDir) {
      this.watchDir = (path, onEvent): DirWatch => {
        this.watches++;
        // Where the pinned handle's path leads now: the folder the watch is on.
        const folder = readlinkSync(path);
        return inner.watchDir!(path, (kind) => {
          this.events++;
          if (!this.deaf && !(this.deafTo !== null && folder.endsWith(this.deafTo))) onEvent(kind);
        });
      };
    }
  }
  lstat: FileSystem['lstat'] = (p) => this.inner.lstat(p);
  readdir: FileSystem['readdir'] = (p) => (this.readdirs.push(p), this.inner.readdir(p));
  readFile: FileSystem['readFile'] = (p) => this.inner.readFile(p);
  writeFile: FileSystem['writeFile'] = (p, d, o) => this.inner.writeFile(p, d, o);
  mkdir: FileSystem['mkdir'] = (p, o) => this.inner.mkdir(p, o);
  rm: FileSystem['rm'] = (p, o) => this.inner.rm(p, o);
  rename: FileSystem['rename'] = (a, b) => this.inner.rename(a, b);
  openDir: FileSystem['openDir'] = (p) => this.inner.openDir(p);
  openFile: FileSystem['openFile'] = async (p) => {
    if (this.failOpenOf !== null && p.endsWith(this.failOpenOf)) {
      this.failOpenOf = null;
      throw Object.assign(new Error(`EMFILE: too many open files, open '${p}'`), { code: 'EMFILE' });
    }
    return this.inner.openFile(p);
  };
}

const SEED = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`/f${i % 6}/n${i}.md`, `note ${i}\n`]));

describe.skipIf(process.platform !== 'linux')('the folder watch (node disk)', () => {
  const h = useHarness('node');

  async function mounted(counted: Counted) {
    h.client.seed(STORE, SEED);
    const m = h.mounter({ fileSystem: counted, deleteGracePeriod: 0 });
    await m.materialize([notesResource()]);
    // The first pass scans in full and starts a watch on each folder before listing it.
    await m.reconcile({ force: true });
    return m;
  }
  const sync = async (m: Awaited<ReturnType<typeof mounted>>) => (await m.reconcile({ force: true }))!.stores[0]!;

  it('an idle pass lists no folder and describes no file', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    expect(counted.watches).toBe(7); // the store folder and its 6 folders
    for (let pass = 0; pass < 3; pass++) {
      counted.readdirs = [];
      counted.lstatAlls = 0;
      expect(await sync(m)).toMatchObject({ status: 'synced', pushed: [], pulled: [], errors: [] });
      expect(counted.readdirs).toEqual([]);
      expect(counted.lstatAlls).toBe(0);
    }
    await m.finalize();
  });

  it('an edit lists only its folder; a new folder its parent and itself; each change is pushed', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    await h.write(`${h.notesDir}/f2/n2.md`, 'edited\n');
    counted.readdirs = [];
    expect((await sync(m)).pushed).toEqual(['/f2/n2.md']);
    expect(counted.readdirs).toHaveLength(1);
    expect(h.client.snapshot(STORE)['/f2/n2.md']).toBe('edited\n');

    await h.write(`${h.notesDir}/g/h/new.md`, 'new\n');
    counted.readdirs = [];
    expect((await sync(m)).pushed).toEqual(['/g/h/new.md']);
    // The store folder (a folder made in it), /g and /g/h (new).
    expect(counted.readdirs).toHaveLength(3);

    await h.remove(`${h.notesDir}/f3/n3.md`);
    expect((await sync(m)).deletedRemote).toEqual(['/f3/n3.md']);
    await m.finalize();
  });

  it('a folder swapped for another with the same name: the new one is listed, never the old record', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    renameSync(`${h.notesDir}/f1`, `${h.notesDir}/f1-old`);
    mkdirSync(`${h.notesDir}/f1`);
    writeFileSync(`${h.notesDir}/f1/n1.md`, 'in the new folder\n');
    const report = await sync(m);
    expect(report.errors).toEqual([]);
    expect(h.client.snapshot(STORE)['/f1/n1.md']).toBe('in the new folder\n');
    expect(h.client.snapshot(STORE)['/f1-old/n7.md']).toBe('note 7\n');
    // Then a write into the old folder, now /f1-old, whose first watch still follows its inode.
    writeFileSync(`${h.notesDir}/f1-old/n7.md`, 'moved and edited\n');
    await sync(m);
    expect(h.client.snapshot(STORE)['/f1-old/n7.md']).toBe('moved and edited\n');
    await m.finalize();
  });

  it('another folder at a watched name, its first watch silent: the folder now there is listed, by its identity', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    counted.deafTo = '/f1';
    renameSync(`${h.notesDir}/f1`, `${h.notesDir}/f1-old`);
    mkdirSync(`${h.notesDir}/f1`);
    writeFileSync(`${h.notesDir}/f1/n1.md`, 'in the new folder\n');
    expect((await sync(m)).errors).toEqual([]);
    expect(h.client.snapshot(STORE)['/f1/n1.md']).toBe('in the new folder\n');
    await m.finalize();
  });

  it('a folder swapped for a link: left alone as a link, whatever the watch said', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    mkdirSync(`${h.memoryRoot}/../outside`);
    writeFileSync(`${h.memoryRoot}/../outside/n4.md`, 'outside\n');
    renameSync(`${h.notesDir}/f4`, `${h.notesDir}/f4-away`);
    symlinkSync(`${h.memoryRoot}/../outside`, `${h.notesDir}/f4`);
    const report = await sync(m);
    expect(report.skippedPaths).toContainEqual(expect.objectContaining({ path: '/f4', code: 'is_symlink' }));
    expect(Object.values(h.client.snapshot(STORE))).not.toContain('outside\n');
    await m.finalize();
  });

  it('a change the watch misses is found by the full scan on its cadence, and by the final sync', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    counted.deaf = true;
    await h.write(`${h.notesDir}/f5/n5.md`, 'unheard\n');
    let passes = 0;
    while (h.client.snapshot(STORE)['/f5/n5.md'] !== 'unheard\n' && passes < FULL_SCAN_EVERY_PASSES + 1) {
      await sync(m);
      passes++;
    }
    // The first pass after the mounted() one took the watch's word; a full scan came within the cadence.
    expect(passes).toBeGreaterThan(1);
    expect(passes).toBeLessThanOrEqual(FULL_SCAN_EVERY_PASSES);
    await h.write(`${h.notesDir}/f0/n0.md`, 'unheard too\n');
    await sync(m);
    expect(h.client.snapshot(STORE)['/f0/n0.md']).toBe('note 0\n');
    await m.finalize();
    expect(h.client.snapshot(STORE)['/f0/n0.md']).toBe('unheard too\n');
  });

  it('a file unreadable at one scan is read again at the next, though no event came', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    await h.write(`${h.notesDir}/f2/n8.md`, 'edited\n');
    counted.failOpenOf = '/n8.md';
    const first = await sync(m);
    expect(h.client.snapshot(STORE)['/f2/n8.md']).toBe('note 8\n');
    expect(first.pushed).toEqual([]);
    expect((await sync(m)).pushed).toEqual(['/f2/n8.md']);
    await m.finalize();
  });

  it('a flood of events costs one callback a folder a pass', async () => {
    const counted = new Counted(new NodeFileSystem());
    const m = await mounted(counted);
    // Two files in turn: inotify merges an event only into an identical one queued just before it.
    for (let i = 0; i < 2_000; i++) writeFileSync(`${h.notesDir}/f0/n${i % 2 ? 6 : 0}.md`, `flood ${i}\n`);
    writeFileSync(`${h.notesDir}/f1/n1.md`, 'after the flood\n');
    await sync(m);
    expect(counted.events).toBeLessThanOrEqual(counted.watches);
    expect(h.client.snapshot(STORE)).toMatchObject({ '/f0/n0.md': 'flood 1998\n', '/f0/n6.md': 'flood 1999\n', '/f1/n1.md': 'after the flood\n' });
    await m.finalize();
  });
});

describe.skipIf(process.platform !== 'linux')('passes that skip their plan (node disk, with the watch)', () => {
  const h = useHarness('node');

  it('after quiet passes: a new file waiting to settle is pushed once it has, though nothing happens on disk meanwhile', async () => {
    const counted = new Counted(new NodeFileSystem());
    h.client.seed(STORE, SEED);
    const m = h.mounter({ fileSystem: counted, newFileSettle: 0.3 });
    await m.materialize([notesResource()]);
    await m.reconcile({ force: true });
    await m.reconcile({ force: true });
    await h.write(`${h.notesDir}/f0/fresh.md`, 'fresh\n');
    expect((await m.reconcile({ force: true }))!.stores[0]!.pushed).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    // No event since: the scan lists nothing, but the last pass was not a quiet one.
    counted.readdirs = [];
    expect((await m.reconcile({ force: true }))!.stores[0]!.pushed).toEqual(['/f0/fresh.md']);
    expect(counted.readdirs).toEqual([]);
    await m.finalize();
  });

  it('after quiet passes: a remote change is pulled, a local one pushed', async () => {
    const counted = new Counted(new NodeFileSystem());
    h.client.seed(STORE, SEED);
    const m = h.mounter({ fileSystem: counted });
    await m.materialize([notesResource()]);
    for (let i = 0; i < 4; i++) await m.reconcile({ force: true });
    h.client.writeMemory(STORE, '/f3/n3.md', 'remote\n');
    expect((await m.reconcile({ force: true }))!.stores[0]!.pulled).toEqual(['/f3/n3.md']);
    for (let i = 0; i < 3; i++) await m.reconcile({ force: true });
    await h.write(`${h.notesDir}/f4/n4.md`, 'local\n');
    expect((await m.reconcile({ force: true }))!.stores[0]!.pushed).toEqual(['/f4/n4.md']);
    expect(await h.read(`${h.notesDir}/f3/n3.md`)).toBe('remote\n');
    await m.finalize();
  });
});

describe('without a watch (memfs, or NodeFileSystem with watch: false): every pass lists every folder', () => {
  for (const kind of ['memfs', 'node'] as const) {
    const h = useHarness(kind);
    it(`${kind}: an idle pass lists the store folder and its folders; an edit is pushed`, async () => {
      const counted = new Counted(kind === 'node' ? new NodeFileSystem(undefined, { watch: false }) : h.fs);
      expect(counted.watchDir).toBeUndefined();
      h.client.seed(STORE, SEED);
      const m = h.mounter({ fileSystem: counted });
      await m.materialize([notesResource()]);
      await m.reconcile({ force: true });
      counted.readdirs = [];
      await m.reconcile({ force: true });
      expect(counted.readdirs).toHaveLength(7);
      await h.write(`${h.notesDir}/f2/n2.md`, 'edited\n');
      expect((await m.reconcile({ force: true }))!.stores[0]!.pushed).toEqual(['/f2/n2.md']);
      await m.finalize();
    });
  }
});
