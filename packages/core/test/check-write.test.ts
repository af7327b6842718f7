import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryWriteRefusedError, type MemoryMounter, type MemoryStoreResource } from '@memory-mounter/core';
import { DISKS, useHarness } from './harness.js';

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

  it('does not touch the disk', async () => {
    const before = h.client.requests.length;
    expect(refusal(m, `${ro}/not/there/yet.md`)?.reason).toBe('read_only');
    expect(await h.exists(`${ro}/not`)).toBe(false);
    expect(h.client.requests.length).toBe(before);
  });
});
