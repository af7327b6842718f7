import { describe, expect, it } from 'vitest';
import { MAX_SYMLINKS, resolveKernelPath, SymlinkLoopError } from '@memory-mounter/core';

/** SPEC 6.1: a path resolved the way the kernel will, links followed component by component. */

/** A fake disk: only its links matter (anything else, present or not, reads as "no link"). */
function fakeReadLink(links: Record<string, string>, asked: string[] = []) {
  return (path: string): string | null => {
    asked.push(path);
    return Object.hasOwn(links, path) ? links[path]! : null;
  };
}

const DISK: Record<string, string> = {
  '/m/rw/abs': '/m/ro/sub', // absolute target
  '/m/rw/rel': '../ro/sub', // relative target, from the folder holding the link
  '/m/rw/up': '..', // a link that is itself a `..`
  '/m/rw/chain1': 'chain2',
  '/m/rw/chain2': '/m/rw/chain3',
  '/m/rw/chain3': '../ro',
  '/m/rw/via': 'abs/..', // its target goes through another link, then up from where that leads
  '/m/rw/file.md': '/m/ro/guide.md', // the last component is a link too
  '/m/rw/dangling': '/m/ro/new.md',
  '/m/rw/root': '/',
  '/m/rw/out': '/elsewhere/dir',
};

describe('resolveKernelPath', () => {
  it.each([
    ['a plain path', '/m/rw/a.md', '/m/rw/a.md'],
    ['`.` and empty components are skipped, a trailing slash dropped', '/m/./rw//a/', '/m/rw/a'],
    ['`..` at `/` stays at `/`', '/../../m/rw', '/m/rw'],
    ['`..` on plain folders is the parent', '/m/rw/x/../y', '/m/rw/y'],
    ['an absolute link restarts from /', '/m/rw/abs/x.md', '/m/ro/sub/x.md'],
    ['a relative link goes on from the folder holding it', '/m/rw/rel/x.md', '/m/ro/sub/x.md'],
    ['`..` after an absolute link is the parent of its target', '/m/rw/abs/../x.md', '/m/ro/x.md'],
    ['`..` after a relative link is the parent of its target', '/m/rw/rel/../../x.md', '/m/x.md'],
    ['the marker, reached by `link/..`', '/m/rw/abs/../.anthropic-memory-store', '/m/ro/.anthropic-memory-store'],
    ['out of every store by `link/../..`', '/m/rw/abs/../../../etc/passwd', '/etc/passwd'],
    ['a link whose target is `..`', '/m/rw/up/ro/x', '/m/ro/x'],
    ['a chain of links, mixed absolute and relative', '/m/rw/chain1/x.md', '/m/ro/x.md'],
    ['a target that goes through another link', '/m/rw/via/y', '/m/ro/y'],
    ['the last component is followed', '/m/rw/file.md', '/m/ro/guide.md'],
    ['a dangling last link leads to where open(O_CREAT) creates', '/m/rw/dangling', '/m/ro/new.md'],
    ['a link to /', '/m/rw/root/etc/x', '/etc/x'],
    ['a link out of the tree', '/m/rw/out/../x', '/elsewhere/x'],
    ['a missing component: the rest is kept as written', '/m/rw/missing/deeper/x.md', '/m/rw/missing/deeper/x.md'],
    ['`..` back over a missing component resumes at what exists, links included', '/m/rw/missing/../abs/../x.md', '/m/ro/x.md'],
  ])('%s: %s -> %s', (_label, path, expected) => {
    expect(resolveKernelPath(path, fakeReadLink(DISK))).toBe(expected);
  });

  it('asks readLink only about absolute, normalised paths with no link in them', () => {
    const asked: string[] = [];
    resolveKernelPath('/m/./rw//via/../chain1/../abs/x', fakeReadLink(DISK, asked));
    for (const path of asked) {
      const [first, ...segments] = path.split('/');
      expect(first).toBe('');
      expect(segments).not.toContain('..');
      expect(segments).not.toContain('.');
      expect(segments).not.toContain('');
      const parent = path.slice(0, path.lastIndexOf('/'));
      expect(Object.hasOwn(DISK, parent)).toBe(false);
    }
  });

  it(`follows ${MAX_SYMLINKS} links and refuses the next (ELOOP)`, () => {
    const chain = (n: number) => {
      const links: Record<string, string> = {};
      for (let i = 0; i < n; i++) links[`/l${i}`] = `/l${i + 1}`;
      return links;
    };
    expect(resolveKernelPath('/l0/x', fakeReadLink(chain(MAX_SYMLINKS)))).toBe(`/l${MAX_SYMLINKS}/x`);
    expect(() => resolveKernelPath('/l0/x', fakeReadLink(chain(MAX_SYMLINKS + 1)))).toThrow(SymlinkLoopError);
  });

  it.each([
    ['a link to itself', { '/a/self': '/a/self' }, '/a/self/x'],
    ['two links to each other', { '/a/p': 'q', '/a/q': '/a/p' }, '/a/p'],
    ['a link to a folder above it, then on through it', { '/a/l': '/a' }, `/a${'/l'.repeat(MAX_SYMLINKS + 1)}`],
  ])('refuses a loop: %s', (_label, links, path) => {
    let caught: unknown;
    try {
      resolveKernelPath(path, fakeReadLink(links));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SymlinkLoopError);
    expect(caught).toMatchObject({ code: 'ELOOP', path });
  });

  it('passes on what readLink throws (EACCES, EIO)', () => {
    const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    expect(() =>
      resolveKernelPath('/locked/x', (p) => {
        if (p === '/locked/x') throw denied;
        return null;
      }),
    ).toThrow(denied);
  });

  it('takes absolute paths only', () => {
    expect(() => resolveKernelPath('m/rw', fakeReadLink({}))).toThrow(TypeError);
  });
});
