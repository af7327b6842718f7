import { MemfsFileSystem } from '@memory-mounter/testing';
import { Volume, createFsFromVolume } from 'memfs';
import { describe, expect, it } from 'vitest';
import { fileSystemConformance } from './file-system-conformance.ts';

fileSystemConformance('MemfsFileSystem', async () => {
  const memfs = new MemfsFileSystem({ '/mnt/memory': null });
  return {
    fs: memfs,
    root: '/mnt/memory',
    cleanup: async () => {},
    makeSymlink: async (target, path) => memfs.vol.symlinkSync(target, path),
    makeHardLink: async (existing, path) => memfs.vol.linkSync(existing, path),
    modeOf: async (path) => Number(memfs.vol.lstatSync(path).mode) & 0o777,
  };
});

describe('MemfsFileSystem', () => {
  it('seeds from a JSON layout where null makes a directory', async () => {
    const fs = new MemfsFileSystem({ '/mnt/memory/store/a.md': 'hello', '/mnt/memory/empty': null });
    expect(new TextDecoder().decode(await fs.readFile('/mnt/memory/store/a.md'))).toBe('hello');
    expect((await fs.lstat('/mnt/memory/empty'))?.type).toBe('directory');
  });

  it('works on an existing volume, or on the memfs fs made from one', async () => {
    const vol = Volume.fromJSON({ '/x/f': 'v' });
    await new MemfsFileSystem(vol).writeFile('/x/g', new TextEncoder().encode('w'));
    expect(vol.toJSON()).toEqual({ '/x/f': 'v', '/x/g': 'w' });

    const fromFs = new MemfsFileSystem(createFsFromVolume(vol));
    expect(fromFs.vol).toBe(vol);
  });

  it('fails the next calls of an operation with an injected code, then recovers', async () => {
    const fs = new MemfsFileSystem({ '/m': null });
    fs.failNext('writeFile', 'ENOSPC', 2);
    const data = new TextEncoder().encode('x');

    await expect(fs.writeFile('/m/f', data)).rejects.toMatchObject({ code: 'ENOSPC' });
    await expect(fs.writeFile('/m/f', data)).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(fs.vol.toJSON()).toEqual({ '/m': null });
    await fs.writeFile('/m/f', data);
    expect(fs.vol.toJSON()).toEqual({ '/m/f': 'x' });
  });
});
