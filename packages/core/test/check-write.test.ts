import { symlink } from 'node:fs/promises';
import { posix } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MARKER_FILE, MemoryWriteRefusedError, type FileSystem, type MemoryMounter, type MemoryStoreResource } from '@memory-mounter/core';
import { MemfsFileSystem } from '@memory-mounter/testing';
import { DISKS, useHarness, type Harness } from './harness.js';

/** SPEC 4.7: the guard write/edit tools call before writing a host path. */

function refusal(m: MemoryMounter, path: string): MemoryWriteRefusedError | null {
  try {
    m.checkWrite(path);
    return null;
  } catch (err) {
    if (err instanceof MemoryWriteRefusedError) return err;
    throw err;
  }
}

/** Plants a symlink on the harness's disk, memfs or real. */
async function plantLink(h: Harness, target: string, path: string): Promise<void> {
  if (h.fs instanceof MemfsFileSystem) h.fs.vol.symlinkSync(target, path);
  else await symlink(target, path);
}

/** The harness's FileSystem without the optional readLinkSync, as a host's own might be. */
function withoutReadLink(fs: FileSystem): FileSystem {
  return {
    lstat: (p) => fs.lstat(p),
    readdir: (p) => fs.readdir(p),
    readFile: (p) => fs.readFile(p),
    writeFile: (p, d, o) => fs.writeFile(p, d, o),
    mkdir: (p, o) => fs.mkdir(p, o),
    rm: (p, o) => fs.rm(p, o),
    rename: (a, b) => fs.rename(a, b),
    openDir: (p) => fs.openDir(p),
    openFile: (p) => fs.openFile(p),
  };
}

describe.each(DISKS)('checkWrite on %s', (disk) => {
  const h = useHarness(disk);
  let m: MemoryMounter;
  let root: string;
  let rw: string;
  let ro: string;
  beforeEach(async () => {
    root = h.memoryRoot;
    rw = h.notesDir;
    ro = `${root}/docs`;
    h.client.seed('memstore_docs', { '/guide.md': 'read me' });
    m = h.mounter();
    const resources: MemoryStoreResource[] = [
      { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' },
      { type: 'memory_store', memory_store_id: 'memstore_docs', name: 'Docs', access: 'read_only' },
      { type: 'memory_store', memory_store_id: 'memstore_ref', name: 'Ref', mount_path: '/mnt/memory/lib/ref', access: 'read_only' },
    ];
    await m.materialize(resources);
  });

  it('roots are the host paths of every mount, in resource order', () => {
    expect(m.roots).toEqual([rw, ro, `${root}/lib/ref`]);
  });

  describe('read_only', () => {
    it.each([
      ['a file in the store', '/guide.md'],
      ['a new file deep in the store', '/new/deep/x.md'],
      ['the store directory itself', ''],
      ['the store directory with a trailing slash', '/'],
    ])('%s', (_label, rest) => {
      const err = refusal(m, `${ro}${rest}`);
      expect(err?.reason).toBe('read_only');
    });

    it('a nested read-only mount', () => {
      expect(refusal(m, `${root}/lib/ref/a.md`)?.reason).toBe('read_only');
    });

    it('is decided after normalisation: <rw store>/../<ro store>/x is refused', () => {
      expect(refusal(m, `${rw}/../docs/x.md`)?.reason).toBe('read_only');
      expect(refusal(m, `${rw}/./sub/../../docs/guide.md`)?.reason).toBe('read_only');
      expect(refusal(m, `${root}//docs///guide.md`)?.reason).toBe('read_only');
    });
  });

  describe('outside_store: under memoryRoot, in no store', () => {
    it.each([
      ['memoryRoot itself', ''],
      ['memoryRoot with a trailing slash', '/'],
      ['a sibling directory', '/scratch'],
      ['a file in a sibling directory', '/scratch/x.md'],
      ['a name that only starts like a store', '/notes-old/x.md'],
      ['a name that only starts like a read-only store', '/docsx/x.md'],
      ['the folder that holds a nested store', '/lib'],
      ['a sibling of a nested store', '/lib/other/x.md'],
    ])('%s', (_label, rest) => {
      expect(refusal(m, `${root}${rest}`)?.reason).toBe('outside_store');
    });

    it('is decided after normalisation: <rw store>/../elsewhere is refused', () => {
      expect(refusal(m, `${rw}/../elsewhere/x.md`)?.reason).toBe('outside_store');
      expect(refusal(m, `${rw}/..`)?.reason).toBe('outside_store');
    });

    it('applies before anything is mounted: memoryRoot is not scratch space', () => {
      const fresh = h.mounter();
      expect(refusal(fresh, `${root}/x.md`)?.reason).toBe('outside_store');
    });
  });

  describe('passes', () => {
    it.each([
      ['a file in a read-write store', () => `${rw}/a.md`],
      ['a new deep file in a read-write store', () => `${rw}/new/deep/a.md`],
      ['the read-write store directory', () => rw],
      ['a normalised path back into the read-write store', () => `${ro}/../notes/a.md`],
      ['a path that leaves memoryRoot by ..', () => `${rw}/../../etc`],
      ['a path outside memoryRoot', () => '/etc/passwd'],
      ['a sibling of memoryRoot sharing its prefix', () => `${root}-other/x.md`],
    ])('%s', (_label, path) => {
      expect(() => m.checkWrite(path())).not.toThrow();
    });
  });

  it('the error says which path and why', () => {
    const given = `${rw}/../docs/x.md`;
    let caught: unknown;
    try {
      m.checkWrite(given);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(MemoryWriteRefusedError);
    expect(caught).toBeInstanceOf(Error);
    expect(caught).toMatchObject({ path: given, reason: 'read_only' });

    const outside = `${root}/scratch/x.md`;
    expect(() => m.checkWrite(outside)).toThrow(expect.objectContaining({ path: outside, reason: 'outside_store' }));
  });

  describe('links are followed as the kernel will (SPEC 6.1)', () => {
    // The agent owns the read-write folder: it can plant links there, and `link/..` is then the
    // parent of the link's TARGET, not the folder holding the link.
    beforeEach(async () => {
      await h.fs.mkdir(`${ro}/sub`);
      await h.fs.mkdir(`${root}/scratch/dir`, { recursive: true });
      await h.fs.mkdir(`${rw}/d/e`, { recursive: true });
    });

    it('<rw>/link/../x, link -> a folder in a read-only store, is read_only; the error carries the path as given', async () => {
      await plantLink(h, `${ro}/sub`, `${rw}/link`);
      const given = `${rw}/link/../x.md`;
      const err = refusal(m, given);
      expect(err).toMatchObject({ path: given, reason: 'read_only' });
      expect(err?.message).toBe(`${given} is in the read-only memory store mounted at /mnt/memory/docs`);
      // A relative link reaches the same place.
      await plantLink(h, '../docs/sub', `${rw}/rel`);
      expect(refusal(m, `${rw}/rel/../x.md`)?.reason).toBe('read_only');
      // And the link itself, followed as the last component, is the read-only folder.
      expect(refusal(m, `${rw}/link/new.md`)?.reason).toBe('read_only');
    });

    it("<rw>/d/link/../<marker> reaches a store's marker and is refused", async () => {
      await plantLink(h, `${ro}/sub`, `${rw}/d/to-ro`);
      await plantLink(h, `${rw}/d`, `${rw}/d/e/to-rw`);
      const viaRo = `${rw}/d/to-ro/../${MARKER_FILE}`;
      expect(refusal(m, viaRo)).toMatchObject({ path: viaRo, reason: 'outside_store', message: expect.stringContaining('store marker of /mnt/memory/docs') });
      const viaRw = `${rw}/d/e/to-rw/../${MARKER_FILE}`;
      expect(refusal(m, viaRw)).toMatchObject({ path: viaRw, reason: 'outside_store', message: expect.stringContaining('store marker of /mnt/memory/notes') });
    });

    it('<rw>/link/../x, link -> a folder under memoryRoot in no store, is outside_store', async () => {
      await plantLink(h, `${root}/scratch/dir`, `${rw}/link`);
      expect(refusal(m, `${rw}/link/../x.md`)).toMatchObject({ path: `${rw}/link/../x.md`, reason: 'outside_store' });
      expect(refusal(m, `${rw}/link/x.md`)?.reason).toBe('outside_store');
    });

    it('a path that lands outside memoryRoot passes, even when written through a read-only store', async () => {
      const outside = posix.join(posix.dirname(root), 'elsewhere');
      await h.fs.mkdir(outside);
      await plantLink(h, outside, `${ro}/out`);
      expect(() => m.checkWrite(`${ro}/out/x.md`)).not.toThrow();
    });

    it('a link above memoryRoot does not hide the stores: judged on the resolved root', async () => {
      const parent = posix.dirname(root);
      await plantLink(h, parent, `${parent}/alias`);
      const aliased = `${parent}/alias/${posix.basename(root)}`;
      expect(refusal(m, `${aliased}/docs/x.md`)?.reason).toBe('read_only');
      expect(refusal(m, `${aliased}/scratch.md`)?.reason).toBe('outside_store');
      expect(() => m.checkWrite(`${aliased}/notes/x.md`)).not.toThrow();

      // memoryRoot given through the link; the stores written by their real spelling.
      const viaAlias = h.mounter({ memoryRoot: aliased });
      await viaAlias.materialize([{ type: 'memory_store', memory_store_id: 'memstore_docs', name: 'Docs2', access: 'read_only' }]);
      expect(refusal(viaAlias, `${root}/docs2/x.md`)?.reason).toBe('read_only');
      expect(refusal(viaAlias, `${root}/notes/x.md`)?.reason).toBe('outside_store');
    });

    it('a loop of links is refused (ELOOP), naming the path as given', async () => {
      await plantLink(h, `${rw}/loop`, `${rw}/loop`);
      const err = refusal(m, `${rw}/loop/x.md`);
      expect(err).toMatchObject({ path: `${rw}/loop/x.md`, reason: 'outside_store' });
      expect(err?.message).toMatch(/cannot be resolved \(ELOOP\)/);
    });
  });

  describe('a FileSystem without readLinkSync: lexical, and no `..` under memoryRoot', () => {
    let lexical: MemoryMounter;
    beforeEach(async () => {
      lexical = h.mounter({ fileSystem: withoutReadLink(h.fs) });
      h.client.seed('memstore_style', {});
      await lexical.materialize([
        { type: 'memory_store', memory_store_id: 'memstore_own', name: 'Own' },
        { type: 'memory_store', memory_store_id: 'memstore_style', name: 'Style', access: 'read_only' },
      ]);
    });

    it('refuses every `..` under memoryRoot, whatever it leads to, and judges the rest lexically as before', () => {
      for (const given of [
        `${root}/own/sub/../a.md`, // inside a read-write store
        `${root}/own/..`, // back to memoryRoot
        `${posix.dirname(root)}/x/../${posix.basename(root)}/own/a.md`, // from outside into memoryRoot
        `${root}/own/../../elsewhere.md`, // leaving memoryRoot
      ]) {
        const err = refusal(lexical, given);
        expect(err).toMatchObject({ path: given, reason: 'outside_store' });
        expect(err?.message).toContain("has a '..' segment under the memory root");
      }
      expect(() => lexical.checkWrite(`${root}/own/./a.md`)).not.toThrow();
      expect(() => lexical.checkWrite('/tmp/x/../y.md')).not.toThrow();
      expect(refusal(lexical, `${root}/style//x.md`)?.reason).toBe('read_only');
      expect(refusal(lexical, `${root}/own/${MARKER_FILE}`)?.reason).toBe('outside_store');
    });
  });

  it('does not touch the disk', async () => {
    const before = h.client.requests.length;
    expect(refusal(m, `${ro}/not/there/yet.md`)?.reason).toBe('read_only');
    expect(await h.exists(`${ro}/not`)).toBe(false);
    expect(h.client.requests.length).toBe(before);
  });
});
