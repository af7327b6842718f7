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
});
