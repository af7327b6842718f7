import { chmod, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
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

// The optional calls only the real disk has here: without them the engine would take its
// fallbacks under FaultyFileSystem (a folder described file by file, a locked folder left).
describe('FaultyFileSystem over NodeFileSystem: the optional calls', () => {
  const make = async () => {
    const root = await mkdtemp(join(tmpdir(), 'mm-faulty-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const inner = new NodeFileSystem();
    await inner.writeFile(`${root}/a`, data);
    await inner.writeFile(`${root}/b`, data);
    return { fs: new FaultyFileSystem(inner), root };
  };

  it('passes lstatAll and grantOwnerAccess through', async () => {
    const { fs, root } = await make();
    const stats = await fs.lstatAll!([`${root}/a`, `${root}/gone`, `${root}/b`]);
    expect(stats.map((s) => s?.type ?? null)).toEqual(['file', null, 'file']);
    await chmod(`${root}/a`, 0o000);
    await fs.grantOwnerAccess!(`${root}/a`);
    expect((await stat(`${root}/a`)).mode & 0o600).toBe(0o600);
  });

  it('an lstat fault on one path rejects the lstatAll that describes it, once; others go through', async () => {
    const { fs, root } = await make();
    fs.fail('lstat', `${root}/b`, 'EACCES');
    expect((await fs.lstatAll!([`${root}/a`])).length).toBe(1);
    await expect(fs.lstatAll!([`${root}/a`, `${root}/b`])).rejects.toMatchObject({ code: 'EACCES', path: `${root}/b` });
    expect((await fs.lstatAll!([`${root}/a`, `${root}/b`])).every((s) => s?.type === 'file')).toBe(true);
  });

  it('uses up every path\'s fault in one lstatAll, as separate lstats would', async () => {
    const { fs, root } = await make();
    fs.fail('lstat', `${root}/a`, 'EIO');
    fs.fail('lstatAll', `${root}/b`, 'EACCES');
    await expect(fs.lstatAll!([`${root}/a`, `${root}/b`])).rejects.toMatchObject({ code: 'EIO' });
    expect((await fs.lstatAll!([`${root}/a`, `${root}/b`])).length).toBe(2);
  });

  it('fails grantOwnerAccess on the aimed path without touching the disk', async () => {
    const { fs, root } = await make();
    await chmod(`${root}/a`, 0o000);
    fs.fail('grantOwnerAccess', `${root}/a`, 'EPERM');
    await expect(fs.grantOwnerAccess!(`${root}/a`)).rejects.toMatchObject({ code: 'EPERM' });
    expect((await stat(`${root}/a`)).mode & 0o777).toBe(0);
    await fs.grantOwnerAccess!(`${root}/a`);
    expect((await stat(`${root}/a`)).mode & 0o600).toBe(0o600);
  });
});
