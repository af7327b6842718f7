import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MARKER_FILE, MemoryMountError, type FileSystem, type StoreMemory } from '@memory-mounter/core';
import { DOWNLOAD_CONTENT_LIMIT } from '../src/remote/content-budget.js';
import { aroundCreateFile, DISKS, notesResource, STORE, useHarness } from './harness.js';

/**
 * Materialize downloads folder by folder (folder-download.ts): each folder's files are written
 * as its listing answers, what is listed and not yet written is bounded for the whole session
 * (content-budget.ts), and what a folder listing returns outside its folder is judged against
 * the whole listing at the end.
 */

/** `inner` with every memory file written counted (the files, their bytes), and every folder opened. */
function countingWrites(inner: FileSystem): { fs: FileSystem; files: string[]; bytes: () => number; openDirs: () => number } {
  const files: string[] = [];
  let bytes = 0;
  let openDirs = 0;
  const fs = new Proxy(inner, {
    get: (target, key) => {
      const value = Reflect.get(target, key) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'openDir') {
        return (...args: unknown[]) => {
          openDirs++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      if (key !== 'writeFile' && key !== 'writeFileExclusive' && key !== 'createFile') return value.bind(target);
      return async (path: string, data: Uint8Array, ...rest: unknown[]) => {
        await (value as (...a: unknown[]) => Promise<void>).call(target, path, data, ...rest);
        // The marker is the folder's, not a memory.
        if (path.endsWith(`/${MARKER_FILE}`)) return;
        files.push(path);
        bytes += data.byteLength;
      };
    },
  });
  return { fs, files, bytes: () => bytes, openDirs: () => openDirs };
}

/** Resolves once `done()` holds, checking after each turn of the event loop; false if it still does not after `turns`. */
async function eventually(done: () => boolean, turns = 2_000): Promise<boolean> {
  for (let i = 0; i < turns; i++) {
    if (done()) return true;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return done();
}

const pad = (n: number) => String(n).padStart(2, '0');

describe.each(DISKS)('materialize folder by folder on %s', (disk) => {
  const h = useHarness(disk);

  it('writes a folder as soon as its listing answers, while another folder is still being listed', async () => {
    h.client.seed(STORE, { '/a/1.md': 'a1', '/a/2.md': 'a2', '/b/3.md': 'b3', '/z/9.md': 'z9' });
    const writes = countingWrites(h.fs);
    const list = h.client.list.bind(h.client);
    let writtenBeforeZ: string[] | null = null;
    h.client.list = async function* (id, opts) {
      if (opts?.pathPrefix === '/z/') {
        // The listing of /z/ answers only once the other folders' files are on disk (or never
        // would: the plain download writes nothing before every listing has answered).
        await eventually(() => writes.files.length >= 3, 500);
        // By name: on the real disk a file is written through its folder's handle path.
        writtenBeforeZ = writes.files.map((path) => path.slice(path.lastIndexOf('/') + 1));
      }
      yield* list(id, opts);
    };
    await h.mounter({ fileSystem: writes.fs }).materialize([notesResource()]);
    expect(writtenBeforeZ).not.toBeNull();
    expect([...writtenBeforeZ!].sort()).toEqual(['1.md', '2.md', '3.md']);
    expect(await h.read(`${h.notesDir}/z/9.md`)).toBe('z9');
  });

  it('holds no more content listed and not yet written than the session budget, two stores together', async () => {
    // Two stores of 3.8 MB each, in 60 folders of 8 memories of 8 kB: together nearly four times the budget.
    const body = (i: number) => `${i} ${'x'.repeat(8_000)}`;
    const seed = Object.fromEntries(Array.from({ length: 480 }, (_, i) => [`/f${pad(i % 60)}/n${i}.md`, body(i)]));
    h.client.seed('memstore_one', seed);
    h.client.seed('memstore_two', seed);
    const writes = countingWrites(h.fs);
    const list = h.client.list.bind(h.client);
    let listed = 0;
    let mostAhead = 0;
    let largestFolder = 0;
    h.client.list = async function* (id, opts) {
      // What was listed and not yet written when a folder's listing starts.
      mostAhead = Math.max(mostAhead, listed - writes.bytes());
      let folder = 0;
      for await (const memory of list(id, opts)) {
        folder += memory.content?.length ?? 0;
        yield memory;
      }
      listed += folder;
      largestFolder = Math.max(largestFolder, folder);
    };
    await h.mounter({ fileSystem: writes.fs }).materialize([
      { type: 'memory_store', memory_store_id: 'memstore_one', name: 'one' },
      { type: 'memory_store', memory_store_id: 'memstore_two', name: 'two' },
    ]);
    expect(writes.files).toHaveLength(960);
    expect(listed).toBeGreaterThan(3 * DOWNLOAD_CONTENT_LIMIT);
    // The budget, and at most one folder more per store (a store holding none may always list one).
    expect(mostAhead).toBeLessThanOrEqual(DOWNLOAD_CONTENT_LIMIT + 2 * largestFolder);
  });

  it('opens each folder about once for its files, not once a file', async () => {
    // 40 folders of 5: with every folder taking turns, the 8 held handles never held the next one.
    const seed = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`/f${pad(i % 40)}/n${i}.md`, `${i}`]));
    h.client.seed(STORE, seed);
    const writes = countingWrites(h.fs);
    await h.mounter({ fileSystem: writes.fs }).materialize([notesResource()]);
    expect(writes.files).toHaveLength(200);
    // Each folder: the open that finds it missing and the one after its mkdir, and a few more
    // where every held folder was in use. Once a file, it was 150 to 200.
    expect(writes.openDirs()).toBeLessThanOrEqual(2 * 40 + 20);
  });

  it('a memory a folder listing returns outside its folder waits for the whole listing: a path another folder wrote is listed_twice', async () => {
    h.client.seed(STORE, { '/a/1.md': 'a1', '/b/1.md': 'b1' });
    const list = h.client.list.bind(h.client);
    let strays: StoreMemory[] = [];
    h.client.list = async function* (id, opts) {
      const own: StoreMemory[] = [];
      for await (const memory of list(id, opts)) own.push(memory);
      if (opts?.pathPrefix === '/b/') strays = own;
      yield* own;
      // The listing of /a/ also answers with /b/'s memory, and with one no folder holds.
      if (opts?.pathPrefix === '/a/') {
        await eventually(() => strays.length > 0, 500);
        yield* strays;
        yield { ...strays[0]!, id: 'mem_stray', path: '/c/stray.md' };
      }
    };
    const m = h.mounter();
    await m.materialize([notesResource()]);
    expect(await h.read(`${h.notesDir}/b/1.md`)).toBe('b1');
    // Not in any folder's batch, and not taken by one: written, once the whole listing said so.
    expect(await h.read(`${h.notesDir}/c/stray.md`)).toBe('b1');
    const twice = h.logger.warnings().filter((w) => w.fields.path === '/b/1.md');
    expect(twice.map((w) => w.msg)).toEqual(['remote memory skipped: listed twice by the store']);
    // Both are the baseline: an idle pass after it transfers nothing.
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ pulled: [], pushed: [], errors: [] });
  });

  it('a folder listing that fails after others were written fails the materialize, and leaves no folder', async () => {
    h.client.seed(STORE, { '/a/1.md': 'a1', '/b/1.md': 'b1', '/z/1.md': 'z1' });
    const writes = countingWrites(h.fs);
    const list = h.client.list.bind(h.client);
    h.client.list = async function* (id, opts) {
      if (opts?.pathPrefix === '/z/') {
        await eventually(() => writes.files.length >= 2, 500);
        throw new Error('boom');
      }
      yield* list(id, opts);
    };
    const err = await h.mounter({ fileSystem: writes.fs }).materialize([notesResource()]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MemoryMountError);
    expect((err as MemoryMountError).code).toBe('download_failed');
    expect(writes.files.length).toBeGreaterThanOrEqual(2);
    expect(await h.fs.readdir(h.memoryRoot)).toEqual([]);
  });

  it('progress counts every memory, its total growing as the folders answer', async () => {
    const seed = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`/f${i % 3}/n${i}.md`, `${i}`]));
    h.client.seed(STORE, { ...seed, '/top.md': 'top' });
    const m = h.mounter();
    const progress: { done: number; total: number }[] = [];
    m.on('progress', ({ done, total }) => void progress.push({ done, total }));
    await m.materialize([notesResource()]);
    expect(progress.at(-1)).toEqual({ done: 31, total: 31 });
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i]!.total).toBeGreaterThanOrEqual(progress[i - 1]!.total);
      expect(progress[i]!.done).toBeGreaterThanOrEqual(progress[i - 1]!.done);
      expect(progress[i]!.done).toBeLessThanOrEqual(progress[i]!.total);
    }
  });

  it('lets go of a memory once it is written, while the rest of its folder still waits for the disk', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    h.client.seed(STORE, { '/a/1.md': 'a1', '/a/2.md': 'a2', '/b/3.md': 'b3' });
    const list = h.client.list.bind(h.client);
    // Each listed memory a fresh object, watched: the listing's own copy is no one else's.
    const watched = new Map<string, WeakRef<StoreMemory>>();
    h.client.list = async function* (id, opts) {
      for await (const memory of list(id, opts)) {
        const copy = { ...memory };
        watched.set(copy.path, new WeakRef(copy));
        yield copy;
      }
    };
    // /a/2.md's write waits until the test lets it go: the folder's batch is still running.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = false;
    const fs = aroundCreateFile(h.fs, async (create, path, data, opts) => {
      if (path.endsWith('/2.md')) {
        holding = true;
        await held;
      }
      return create(path, data, opts);
    });
    const materialized = h.mounter({ fileSystem: fs, transferConcurrency: 4 }).materialize([notesResource()]);
    expect(await eventually(() => holding && watched.size === 3)).toBe(true);
    expect(await eventually(() => false, 20)).toBe(false); // the other writes land meanwhile
    expect(await h.read(`${h.notesDir}/a/1.md`)).toBe('a1');
    gc();
    expect(watched.get('/a/1.md')!.deref(), "a written memory of a folder still being written").toBeUndefined();
    release();
    await materialized;
    expect(await h.read(`${h.notesDir}/a/2.md`)).toBe('a2');
  });
});

