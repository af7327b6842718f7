import * as nodeFs from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { fsError, MemoryMounter, MemoryMountError, NodeFileSystem, type DirEntry, type DirHandle, type FileStat, type FileSystem, type OpenFile } from '@memory-mounter/core';
import { MAX_HELD_FOLDERS, REMOVE_WINDOW, StoreFolder } from '@memory-mounter/core/engine';
import { RecordingLogger } from './harness.js';

/**
 * Issue 19 item 7: a mounter's descriptors are bounded whatever the tree holds. Every handle the
 * engine opens through the seam is counted while open (`Descriptors`), on memfs and on the real
 * disk with pinned and unpinned handles; `limit` makes opens past it fail with EMFILE, as
 * `ulimit -n` does (test/reliability/fd-budget.test.ts runs the real limit).
 */
type Kind = 'memfs' | 'node-pinned' | 'node-unpinned';
const KINDS: Kind[] = ['memfs', 'node-pinned', 'node-unpinned'];
const bytes = (text: string) => new TextEncoder().encode(text);

class Descriptors implements FileSystem {
  open = 0;
  peak = 0;
  /** Opens (folders, files, a write's temp file, a listing) while `open` is this many fail with EMFILE. */
  limit = Number.POSITIVE_INFINITY;
  /** Called before each rm, with its path: a test's hook into a removal under way. */
  onRm: ((path: string) => void) | undefined;
  /** An rm for which it is true fails with EIO. */
  failRm: ((path: string) => boolean) | undefined;
  constructor(readonly inner: FileSystem) {}
  #check(syscall: string, path: string): void {
    if (this.open >= this.limit) throw fsError('EMFILE', syscall, path, 'too many open files');
  }
  #opened(): void {
    this.peak = Math.max(this.peak, ++this.open);
  }
  lstat = (p: string): Promise<FileStat | null> => this.inner.lstat(p);
  readdir = async (p: string): Promise<DirEntry[]> => {
    this.#check('scandir', p);
    return this.inner.readdir(p);
  };
  readFile = (p: string) => this.inner.readFile(p);
  writeFile = async (p: string, d: Uint8Array, o?: Parameters<FileSystem['writeFile']>[2]) => {
    this.#check('open', p);
    return this.inner.writeFile(p, d, o);
  };
  mkdir = (p: string, o?: { mode?: number; recursive?: boolean }) => this.inner.mkdir(p, o);
  rm = async (p: string, o?: { recursive?: boolean }) => {
    this.onRm?.(p);
    if (this.failRm?.(p)) throw fsError('EIO', 'rmdir', p);
    return this.inner.rm(p, o);
  };
  rename = (a: string, b: string) => this.inner.rename(a, b);
  openDir = async (p: string): Promise<DirHandle> => {
    this.#check('open', p);
    const handle = await this.inner.openDir(p);
    this.#opened();
    let closed = false;
    return {
      path: handle.path,
      pinned: handle.pinned,
      dev: handle.dev,
      ino: handle.ino,
      close: async () => {
        if (!closed) this.open--;
        closed = true;
        await handle.close();
      },
    };
  };
  openFile = async (p: string): Promise<OpenFile> => {
    this.#check('open', p);
    const file = await this.inner.openFile(p);
    this.#opened();
    let closed = false;
    return {
      stat: file.stat,
      read: (max) => file.read(max),
      close: async () => {
        if (!closed) this.open--;
        closed = true;
        await file.close();
      },
    };
  };
}

interface Disk {
  fs: FileSystem;
  base: string;
  mkdir(path: string): void;
  write(path: string, data: string): void;
  exists(path: string): boolean;
  rename(from: string, to: string): void;
  list(path: string): string[];
  dispose(): Promise<void>;
}

async function makeDisk(kind: Kind): Promise<Disk> {
  if (kind === 'memfs') {
    const fs = new MemfsFileSystem({ '/host': null });
    const vol = fs.vol;
    return {
      fs,
      base: '/host',
      mkdir: (p) => void vol.mkdirSync(p, { recursive: true }),
      write: (p, d) => vol.writeFileSync(p, d),
      exists: (p) => vol.existsSync(p),
      rename: (a, b) => vol.renameSync(a, b),
      list: (p) => (vol.readdirSync(p) as unknown[]).map(String).sort(),
      dispose: async () => {},
    };
  }
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-fd-budget-')));
  return {
    fs: new NodeFileSystem(nodeFs.constants, { pinDirectories: kind === 'node-pinned' }),
    base,
    mkdir: (p) => void nodeFs.mkdirSync(p, { recursive: true }),
    write: (p, d) => nodeFs.writeFileSync(p, d),
    exists: (p) => nodeFs.existsSync(p),
    rename: (a, b) => nodeFs.renameSync(a, b),
    list: (p) => nodeFs.readdirSync(p).sort(),
    dispose: () => rm(base, { recursive: true, force: true }),
  };
}

/** `work` over `items`, at most `n` at once: the transfer slots a pass has. */
async function inSlots<T>(items: readonly T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

describe.each(KINDS)('descriptor budget of a store folder on %s', (kind) => {
  let disk: Disk;
  let counted: Descriptors;
  let store: string;
  beforeEach(async () => {
    disk = await makeDisk(kind);
    counted = new Descriptors(disk.fs);
    store = `${disk.base}/store`;
    disk.mkdir(store);
  });
  afterEach(() => disk.dispose());

  it(`acts in 300 folders hold at most ${MAX_HELD_FOLDERS} of them open between acts, and one of their own each`, async () => {
    const folder = await StoreFolder.open(counted, store);
    // The store folder's own handles (itself, and whatever it holds above it).
    const own = counted.open;
    const folders = Array.from({ length: 300 }, (_, i) => `/g${i % 10}/f${i}`);
    // Spread over the folders in turn, as a pass starts its transfers (start-order.ts).
    await inSlots(folders, 32, (dir) => folder.write(`${dir}/m.md`, bytes(dir)));
    // Between acts: the cache, whatever the number of folders written in.
    expect(counted.open).toBeLessThanOrEqual(own + MAX_HELD_FOLDERS);
    // During them: each of the 32 acts at most one folder of its own (two while it steps down).
    expect(counted.peak).toBeLessThanOrEqual(own + MAX_HELD_FOLDERS + 2 * 32 + 32);
    await inSlots(folders, 32, async (dir) => {
      expect(await folder.read(`${dir}/m.md`)).toMatchObject({ kind: 'file', size: dir.length });
    });
    expect(counted.open).toBeLessThanOrEqual(own + MAX_HELD_FOLDERS);
    await folder.release();
    expect(counted.open).toBe(own);
    await folder.close();
    expect(counted.open).toBe(0);
    expect(disk.list(`${store}/g3`)).toHaveLength(30);
  });

  // 1,100 deep where a handle names its folder (Linux); 300 where every act resolves the whole
  // path again (memfs, unpinned), which makes each step cost the depth.
  const depth = kind === 'node-pinned' ? 1_100 : 300;
  it(`removing a chain of ${depth} folders holds at most ${REMOVE_WINDOW} of them open, and removes all of it`, { timeout: 60_000 }, async () => {
    const levels = Array.from({ length: depth }, () => 'd');
    disk.mkdir(`${store}/${levels.join('/')}`);
    for (const at of [1, 50, 200, depth]) disk.write(`${store}/${levels.slice(0, at).join('/')}/n.md`, `at ${at}`);
    disk.mkdir(`${store}/d/side/deeper`);
    disk.write(`${store}/d/side/deeper/s.md`, 'side');
    const folder = await StoreFolder.open(counted, store);
    const own = counted.open;
    await folder.removeAll();
    expect(disk.exists(store)).toBe(false);
    // The store folder's own, the window, and the one being opened when it slides.
    expect(counted.peak).toBeLessThanOrEqual(own + REMOVE_WINDOW + 1);
    expect(counted.open).toBe(0);
  });

  it('a folder replaced above the window while the removal is deep below it stops the removal: the new folder is not touched', async () => {
    const levels = Array.from({ length: 3 * REMOVE_WINDOW }, () => 'd');
    disk.mkdir(`${store}/${levels.join('/')}`);
    disk.write(`${store}/${levels.join('/')}/n.md`, 'deep');
    let swapped = false;
    counted.onRm = () => {
      if (swapped) return;
      swapped = true;
      // The agent moves the tree aside and puts a folder of its own where it was.
      disk.rename(`${store}/d/d`, `${store}/moved`);
      disk.mkdir(`${store}/d/d`);
      disk.write(`${store}/d/d/keep.md`, 'the agent made this after the removal began');
    };
    const folder = await StoreFolder.open(counted, store);
    const own = counted.open;
    await expect(folder.removeAll()).rejects.toThrow();
    expect(disk.list(`${store}/d/d`)).toEqual(['keep.md']);
    // Nothing but the store folder's own handles, which its owner closes.
    expect(counted.open).toBe(own);
    await folder.close();
    expect(counted.open).toBe(0);
  });
});

describe.each(['memfs', 'node'] as const)('a materialize that fails on %s', (kind) => {
  let disk: Disk;
  let memoryRoot: string;
  beforeEach(async () => {
    disk = await makeDisk(kind === 'memfs' ? 'memfs' : 'node-pinned');
    memoryRoot = `${disk.base}/mnt-memory`;
    disk.mkdir(memoryRoot);
  });
  afterEach(() => disk.dispose());

  const seeded = () => {
    const client = new InMemoryStoreClient();
    for (const id of ['memstore_a', 'memstore_b']) {
      client.seed(id, Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`/f${i}/m.md`, `${id} ${i}`])));
    }
    return client;
  };
  const resources = [
    { type: 'memory_store', memory_store_id: 'memstore_a', name: 'A' },
    { type: 'memory_store', memory_store_id: 'memstore_b', name: 'B' },
  ];

  it('out of descriptors (EMFILE) mid-download: it closes every handle it opened and removes every folder it made', async () => {
    const counted = new Descriptors(disk.fs);
    // Room for both store folders and a few subfolders, not for two stores' worth of cache.
    counted.limit = 10;
    const mounter = new MemoryMounter({ storeClient: seeded(), fileSystem: counted, memoryRoot, logger: new RecordingLogger() });
    const failed = await mounter.materialize(resources).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(MemoryMountError);
    expect(String((failed as Error).cause)).toContain('EMFILE');
    expect((failed as MemoryMountError).leftInPlace).toBeUndefined();
    expect(disk.list(memoryRoot)).toEqual([]);
    expect(counted.open).toBe(0);
  });

  it('a folder its cleanup cannot remove either is named in the error', async () => {
    const counted = new Descriptors(disk.fs);
    counted.limit = 10;
    // The disk refuses the removal of store B's folder itself (by its path, or by its name in a held parent).
    counted.failRm = (path) => path.endsWith('/b');
    const mounter = new MemoryMounter({ storeClient: seeded(), fileSystem: counted, memoryRoot, logger: new RecordingLogger() });
    const failed = (await mounter.materialize(resources).catch((err: unknown) => err)) as MemoryMountError;
    expect(failed).toBeInstanceOf(MemoryMountError);
    expect(failed.leftInPlace).toEqual([{ path: `${memoryRoot}/b`, reason: expect.stringContaining('EIO') }]);
    expect(failed.message).toContain(`${memoryRoot}/b`);
    expect(disk.list(memoryRoot)).toEqual(['b']);
    expect(counted.open).toBe(0);
  });
});

