import { mkdtemp, realpath, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeFileSystem, sha256Hex } from '@memory-mounter/core';
import { scanStore, StoreFolder, type ScanCache } from '@memory-mounter/core/engine';

/** A NodeFileSystem that counts the files it opens for reading. */
class CountingFs extends NodeFileSystem {
  reads = 0;
  override openFile(path: string) {
    this.reads++;
    return super.openFile(path);
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
    const before = fs.reads;
    await scanOnce(fs, dir, cache);
    expect(fs.reads - before).toBe(2); // marker + the fresh file
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
