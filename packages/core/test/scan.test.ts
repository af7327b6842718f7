import { mkdir, mkdtemp, realpath, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeFileSystem, sha256Hex } from '@memory-mounter/core';
import { scanStore, StoreFolder, type ScanCache } from '@memory-mounter/core/engine';
import { racyWindowMs } from '../src/local/scan.js';

/** A NodeFileSystem that counts the files it opens for reading, and the entries it describes. */
class CountingFs extends NodeFileSystem {
  reads = 0;
  lstats = 0;
  /** Calls of lstatAll, and the paths they described. */
  batches = 0;
  described = 0;
  /** Makes lstatAll fail, as a filesystem error would. */
  failBatches = false;
  override lstatAll(paths: readonly string[]) {
    this.batches++;
    this.described += paths.length;
    if (this.failBatches) return Promise.reject(Object.assign(new Error('EIO: i/o error, lstat'), { code: 'EIO' }));
    return super.lstatAll(paths);
  }
  override openFile(path: string) {
    this.reads++;
    return super.openFile(path);
  }
  override lstat(path: string) {
    this.lstats++;
    return super.lstat(path);
  }
}

/** One scan through a folder opened for it, and closed after. */
async function scanOnce(fs: NodeFileSystem, dir: string, cache: ScanCache) {
  const folder = await StoreFolder.open(fs, dir);
  try {
    return await scanStore(folder, 'memstore_1', cache);
  } finally {
    await folder.close();
  }
}

describe('scanStore on a real disk', () => {
  let dir: string;
  let fs: CountingFs;
  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'mm-scan-')));
    fs = new CountingFs();
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const tenSecondsAgo = () => new Date(Date.now() - 10_000);

  it('carries the content of the wanted files it read, within its byte budget, and of no other', async () => {
    for (const name of ['a', 'b', 'c', 'd']) await writeFile(join(dir, `${name}.md`), `${name}`.repeat(10));
    await writeFile(join(dir, 'bin.md'), new Uint8Array([0xff, 0xfe]));
    const folder = await StoreFolder.open(fs, dir);
    try {
      const wanted = (path: string) => path !== '/d.md';
      const all = await scanStore(folder, 'memstore_1', new Map(), { wanted, budgetBytes: 1_000 });
      expect([...all.carried!.keys()].sort()).toEqual(['/a.md', '/b.md', '/c.md']);
      expect(all.carried!.get('/b.md')).toMatchObject({ sha: sha256Hex('b'.repeat(10)), content: 'b'.repeat(10), stat: { type: 'file', size: 10 } });
      // 25 bytes: two of the three 10-byte files, whichever were read first.
      const some = await scanStore(folder, 'memstore_1', new Map(), { wanted, budgetBytes: 25 });
      expect(some.carried!.size).toBe(2);
      expect((await scanStore(folder, 'memstore_1', new Map())).carried).toBeUndefined();
    } finally {
      await folder.close();
    }
  });

  it('reads an unchanged, settled file once, then takes its hash from the cache', async () => {
    await writeFile(join(dir, 'a.md'), 'alpha');
    await utimes(join(dir, 'a.md'), tenSecondsAgo(), tenSecondsAgo());
    const cache: ScanCache = new Map();
    // ctime is "now" after utimes, so settle the cache's view of time instead: hash now, and
    // check the second scan skips the read only once the file is outside the racy window.
    await scanOnce(fs, dir, cache);
    const firstReads = fs.reads;
    const entry = cache.get('/a.md')!;
    entry.hashedAt += 10_000; // as if hashed well after its last change
    const snapshot = await scanOnce(fs, dir, cache);
    expect(fs.reads - firstReads).toBe(1); // the marker read only: no file read
    expect(snapshot.files.get('/a.md')?.sha).toBe(sha256Hex('alpha'));
  });

  it('re-reads a file whose content changed even when size and mtime were put back', async () => {
    await writeFile(join(dir, 'a.md'), 'alpha');
    const cache: ScanCache = new Map();
    await scanOnce(fs, dir, cache);
    cache.get('/a.md')!.hashedAt += 10_000;
    const old = tenSecondsAgo();
    await utimes(join(dir, 'a.md'), old, old);
    await writeFile(join(dir, 'a.md'), 'ALPHA');
    await utimes(join(dir, 'a.md'), old, old);
    const snapshot = await scanOnce(fs, dir, cache);
    expect(snapshot.files.get('/a.md')?.sha).toBe(sha256Hex('ALPHA'));
  });

  it('re-reads a file changed within the racy window on every scan', async () => {
    await writeFile(join(dir, 'a.md'), 'alpha');
    const cache: ScanCache = new Map();
    await scanOnce(fs, dir, cache);
    const entry = cache.get('/a.md')!;
    // Hashed just inside the window of this disk after the file's last change.
    entry.hashedAt = Math.max(entry.mtimeMs, entry.ctimeMs) + racyWindowMs(entry.ctimeMs) - 1;
    const before = fs.reads;
    await scanOnce(fs, dir, cache);
    expect(fs.reads - before).toBe(2); // marker + the fresh file
    // Just past it, the hash is trusted.
    const again = cache.get('/a.md')!;
    again.hashedAt = Math.max(again.mtimeMs, again.ctimeMs) + racyWindowMs(again.ctimeMs) + 1;
    const settled = fs.reads;
    await scanOnce(fs, dir, cache);
    expect(fs.reads - settled).toBe(1); // the marker only
  });

  it('the racy window is 2 s where change times are whole seconds, 100 ms where the disk keeps fractions', () => {
    expect(racyWindowMs(1_700_000_000_000)).toBe(2_000);
    expect(racyWindowMs(1_700_000_000_123.456)).toBe(100);
    expect(racyWindowMs(1_700_000_000_000.5)).toBe(100);
  });

  it('a file with nothing cached is read without an lstat before it; a folder of cached ones is described in one call', async () => {
    for (const name of ['a.md', 'b.md', 'c.md', 'sub/d.md', 'sub/e.md']) {
      if (name === 'sub/d.md') await mkdir(join(dir, 'sub'));
      await writeFile(join(dir, name), name);
    }
    const cache: ScanCache = new Map();
    const first = await scanOnce(fs, dir, cache);
    expect(first.files.size).toBe(5);
    expect([fs.lstats, fs.batches]).toEqual([1, 0]); // locating the store folder; none per file
    expect([...cache.values()].map((e) => e.file.sha).sort()).toEqual(['a.md', 'b.md', 'c.md', 'sub/d.md', 'sub/e.md'].map(sha256Hex).sort());
    fs.lstats = 0;
    await scanOnce(fs, dir, cache);
    // The store folder located; then each folder's files described at once, against their cache entries.
    expect([fs.lstats, fs.batches, fs.described]).toEqual([1, 2, 5]);
  });

  it('when a folder cannot be described at once, each file is described on its own and nothing is lost', async () => {
    for (const name of ['a.md', 'b.md']) await writeFile(join(dir, name), name);
    const cache: ScanCache = new Map();
    await scanOnce(fs, dir, cache);
    for (const entry of cache.values()) entry.hashedAt += 10_000;
    await writeFile(join(dir, 'b.md'), 'b.md, edited');
    fs.failBatches = true;
    const reads = fs.reads;
    fs.lstats = 0;
    const snapshot = await scanOnce(fs, dir, cache);
    expect(fs.batches).toBe(1);
    expect(fs.lstats).toBe(3); // the folder, then each file
    expect(fs.reads - reads).toBe(2); // the marker, and the edited file: the other's hash still holds
    expect(Object.fromEntries([...snapshot.files].map(([path, file]) => [path, file.sha]))).toEqual({
      '/a.md': sha256Hex('a.md'),
      '/b.md': sha256Hex('b.md, edited'),
    });
  });

  it('forgets files that are gone', async () => {
    await writeFile(join(dir, 'a.md'), 'alpha');
    const cache: ScanCache = new Map();
    await scanOnce(fs, dir, cache);
    await rm(join(dir, 'a.md'));
    const snapshot = await scanOnce(fs, dir, cache);
    expect(snapshot.files.size).toBe(0);
    expect(cache.size).toBe(0);
  });
});
