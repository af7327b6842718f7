import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeFileSystem, type FileSystem } from '@memory-mounter/core';
import { FaultyFileSystem, MemfsFileSystem } from '@memory-mounter/testing';
import { afterEach, describe, expect, it } from 'vitest';

// The one fault-injecting FileSystem, over either real one: memfs, and a real temp dir.
const data = new TextEncoder().encode('x');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const inners: [string, () => Promise<{ fs: FileSystem; root: string; names: () => Promise<string[]> }>][] = [
  [
    'MemfsFileSystem',
    async () => {
      const fs = new MemfsFileSystem({ '/m': null });
      return { fs, root: '/m', names: async () => fs.vol.readdirSync('/m').map(String) };
    },
  ],
  [
    'NodeFileSystem',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'mm-faulty-'));
      cleanups.push(() => rm(root, { recursive: true, force: true }));
      return { fs: new NodeFileSystem(), root, names: () => readdir(root) };
    },
  ],
];

describe.each(inners)('FaultyFileSystem over %s', (_name, make) => {
  it('failNext fails the next calls of an operation on any path, touching nothing, then recovers', async () => {
    const { fs: inner, root, names } = await make();
    const fs = new FaultyFileSystem(inner);
    fs.failNext('writeFile', 'ENOSPC', 2);

    await expect(fs.writeFile(`${root}/f`, data)).rejects.toMatchObject({ code: 'ENOSPC' });
    await expect(fs.writeFile(`${root}/g`, data)).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(await names()).toEqual([]);
    await fs.writeFile(`${root}/f`, data);
    expect(await names()).toEqual(['f']);
  });

  it('fail aims at one path: other paths go through', async () => {
    const { fs: inner, root, names } = await make();
    const fs = new FaultyFileSystem(inner);
    fs.fail('writeFile', `${root}/f`, 'EIO');

    await fs.writeFile(`${root}/g`, data);
    await expect(fs.writeFile(`${root}/f`, data)).rejects.toMatchObject({ code: 'EIO' });
    expect(await names()).toEqual(['g']);
    await fs.writeFile(`${root}/f`, data);
    expect((await names()).sort()).toEqual(['f', 'g']);
  });

  it('failAlways keeps failing one path until heal()', async () => {
    const { fs: inner, root, names } = await make();
    const fs = new FaultyFileSystem(inner);
    fs.failAlways('writeFile', `${root}/f`, 'EACCES');
    for (let i = 0; i < 3; i++) await expect(fs.writeFile(`${root}/f`, data)).rejects.toMatchObject({ code: 'EACCES' });
    await fs.writeFile(`${root}/g`, data);
    expect(await names()).toEqual(['g']);
    fs.heal();
    await fs.writeFile(`${root}/f`, data);
    expect((await names()).sort()).toEqual(['f', 'g']);
  });
});
