import { execFileSync } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MemoryConfigError, NodeFileSystem } from '@memory-mounter/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileSystemConformance } from '../../testing/test/file-system-conformance.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const isRoot = process.getuid?.() === 0;

// Pinned folder handles (Linux, /proc mounted), and the unpinned fallback other platforms get.
for (const pinDirectories of [true, false]) {
  fileSystemConformance(`NodeFileSystem (${pinDirectories ? 'pinned' : 'unpinned'} handles)`, async () => {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'mm-nodefs-'));
    return {
      fs: new NodeFileSystem(fsConstants, { pinDirectories }),
      root,
      cleanup: () => fs.rm(root, { recursive: true, force: true }),
      makeSymlink: (target, linkPath) => fs.symlink(target, linkPath),
      makeHardLink: (existing, linkPath) => fs.link(existing, linkPath),
      modeOf: async (p) => (await fs.lstat(p)).mode & 0o777,
    };
  });
}

describe('NodeFileSystem on the real disk', () => {
  const nodeFs = new NodeFileSystem();
  let root: string;
  let outside: string;

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'mm-nodefs-'));
    outside = await fs.mkdtemp(path.join(os.tmpdir(), 'mm-outside-'));
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
    await fs.rm(outside, { recursive: true, force: true });
  });

  it('lstatAll holds the event loop for a moment only: past its budget, the rest go to the pool', async () => {
    // 20,000 entries take several times the 2 ms budget on the calling thread alone.
    await fs.writeFile(path.join(root, 'f'), 'x');
    const paths = Array.from({ length: 20_000 }, (_, i) => path.join(root, i % 2 ? 'f' : `absent-${i}`));
    let turned = false;
    setImmediate(() => (turned = true));
    const [stats, turnedBefore] = await nodeFs.lstatAll(paths).then((all) => [all, turned] as const);
    expect(turnedBefore).toBe(true);
    expect(stats).toHaveLength(paths.length);
    expect(stats.map((stat) => stat?.type ?? null)).toEqual(paths.map((_, i) => (i % 2 ? 'file' : null)));
  });

  it('refuses to construct where O_NOFOLLOW is missing (Windows)', () => {
    expect(() => new NodeFileSystem({ ...fsConstants, O_NOFOLLOW: undefined })).toThrow(MemoryConfigError);
  });

  it('reads a FIFO as EINVAL at once instead of waiting for a writer', async () => {
    const fifo = path.join(root, 'pipe');
    execFileSync('mkfifo', [fifo]);
    expect((await nodeFs.lstat(fifo))?.type).toBe('other');
    expect(await nodeFs.readdir(root)).toEqual([{ name: 'pipe', type: 'other' }]);
    await expect(nodeFs.readFile(fifo)).rejects.toMatchObject({ code: 'EINVAL' });
  }, 2_000);

  it('creates files 0600 and directories 0700 on disk', async () => {
    await nodeFs.mkdir(path.join(root, 'store'));
    await nodeFs.writeFile(path.join(root, 'store/notes.md'), bytes('x'));
    expect((await fs.stat(path.join(root, 'store'))).mode & 0o777).toBe(0o700);
    expect((await fs.stat(path.join(root, 'store/notes.md'))).mode & 0o777).toBe(0o600);
  });

  it('never reads, writes or removes through a symlink pointing outside its directory', async () => {
    const secret = path.join(outside, 'secret');
    await fs.writeFile(secret, 'outside');
    await fs.mkdir(path.join(root, 'tree'));
    await fs.symlink(secret, path.join(root, 'file-link'));
    await fs.symlink(outside, path.join(root, 'dir-link'));
    await fs.symlink(outside, path.join(root, 'tree/dir-link'));

    await expect(nodeFs.readFile(path.join(root, 'file-link'))).rejects.toMatchObject({ code: 'ELOOP' });
    await expect(nodeFs.readdir(path.join(root, 'dir-link'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await nodeFs.writeFile(path.join(root, 'file-link'), bytes('inside'));
    await nodeFs.rm(path.join(root, 'dir-link'), { recursive: true });
    await nodeFs.rm(path.join(root, 'tree'), { recursive: true });

    expect(await fs.readFile(secret, 'utf8')).toBe('outside');
    expect(await fs.readdir(outside)).toEqual(['secret']);
    expect(await fs.readdir(root)).toEqual(['file-link']);
  });

  it.each([true, false])('reads a file that grew after its open whole, up to the limit (pinned: %s)', async (pinDirectories) => {
    // The first read asks for the size the open saw, plus one byte: growth must send it on.
    const grown = path.join(root, 'grown.md');
    await fs.writeFile(grown, 'abcde');
    const opened = await new NodeFileSystem(fsConstants, { pinDirectories }).openFile(grown);
    try {
      expect(opened.stat.size).toBe(5);
      await fs.appendFile(grown, 'x'.repeat(70_000));
      const all = await opened.read(100_000);
      expect(all.byteLength).toBe(70_005);
      expect(new TextDecoder().decode(all.subarray(0, 7))).toBe('abcdexx');
      expect((await opened.read(6)).byteLength).toBe(6);
      // The bytes own their memory: nothing else of the process shows through `.buffer`.
      const small = await opened.read(3);
      expect(small.buffer.byteLength).toBeLessThanOrEqual(6);
      expect((await opened.read(0)).byteLength).toBe(0);
    } finally {
      await opened.close();
    }
  });

  it('writes large and empty files whole', async () => {
    const big = Buffer.alloc(300_000);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    await nodeFs.writeFile(path.join(root, 'big'), big);
    await nodeFs.writeFile(path.join(root, 'empty'), new Uint8Array(0));
    expect(big.equals(await fs.readFile(path.join(root, 'big')))).toBe(true);
    expect((await fs.readFile(path.join(root, 'empty'))).byteLength).toBe(0);
    expect((await fs.readdir(root)).sort()).toEqual(['big', 'empty']);
  });

  it.skipIf(isRoot)('reports EACCES in a directory it may not write, leaving no temp file', async () => {
    const locked = path.join(root, 'locked');
    await fs.mkdir(locked);
    await fs.writeFile(path.join(locked, 'f'), 'old');
    await fs.chmod(locked, 0o500);
    try {
      await expect(nodeFs.writeFile(path.join(locked, 'f'), bytes('new'))).rejects.toMatchObject({ code: 'EACCES' });
      expect(await fs.readdir(locked)).toEqual(['f']);
      expect(await fs.readFile(path.join(locked, 'f'), 'utf8')).toBe('old');
    } finally {
      await fs.chmod(locked, 0o700);
    }
  });
});
