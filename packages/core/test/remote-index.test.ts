import { describe, expect, it } from 'vitest';
import { alignLocalCase, indexRemote } from '../src/decide/remote-index.js';

const memory = (path: string, sha = `sha:${path}`) => ({ id: `mem_${path}`, path, content_sha256: sha });

describe('indexRemote', () => {
  it('keeps valid memories by path and skips what cannot live in a mount, with the reason', () => {
    const { remote, skipped } = indexRemote([memory('/a.md'), memory('/../x'), memory('/.anthropic-memory-store')]);
    expect([...remote.keys()]).toEqual(['/a.md']);
    expect(skipped.map((s) => s.path).sort()).toEqual(['/../x', '/.anthropic-memory-store']);
  });

  it('skips a path listed twice, and a memory that is also a folder of others', () => {
    const { remote, skipped } = indexRemote([memory('/a'), memory('/a/b.md'), memory('/c.md'), memory('/c.md', 'other')]);
    expect([...remote.keys()].sort()).toEqual(['/a/b.md', '/c.md']);
    expect(skipped).toEqual(
      expect.arrayContaining([
        { path: '/c.md', code: 'listed_twice', reason: 'listed twice by the store' },
        { path: '/a', code: 'path_is_folder', reason: 'remote path is also a folder of other memories' },
      ]),
    );
  });

  it('keeps paths that differ only in case on a case-sensitive disk', () => {
    expect([...indexRemote([memory('/notes.md'), memory('/Notes.md')]).remote.keys()].sort()).toEqual(['/Notes.md', '/notes.md']);
  });

  it('on a case-insensitive disk keeps the first in path order and skips its twin, whatever the listing order', () => {
    for (const order of [
      [memory('/notes.md'), memory('/Notes.md')],
      [memory('/Notes.md'), memory('/notes.md')],
    ]) {
      const { remote, skipped } = indexRemote(order, { caseInsensitiveDisk: true });
      expect([...remote.keys()]).toEqual(['/Notes.md']);
      expect(skipped).toEqual([{ path: '/notes.md', code: 'case_clash', reason: 'differs only in case from /Notes.md, and this disk ignores case' }]);
    }
  });
});

describe('alignLocalCase', () => {
  it('renames local paths to the spelling the store uses, leaving unknown paths as they are', () => {
    const local = new Map([
      ['/notes.md', 1],
      ['/New.md', 2],
    ]);
    expect([...alignLocalCase(local, ['/Notes.md', '/other.md']).entries()]).toEqual([
      ['/Notes.md', 1],
      ['/New.md', 2],
    ]);
  });
});
