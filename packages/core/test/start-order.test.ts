import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FOLDERS_IN_TURN, FolderTurns, spreadByFolder } from '../src/decide/start-order.js';
import { MAX_HELD_FOLDERS } from '../src/local/store-folder.js';

/** The executor's start order (start-order.ts), row by row. */
const order = (paths: string[]) => spreadByFolder(paths.map((path) => ({ path }))).map((i) => paths[i]);

describe('spreadByFolder', () => {
  it('lets the folders take turns, one transfer each, keeping the order within each folder', () => {
    expect(order(['/a/1.md', '/a/2.md', '/a/3.md', '/b/1.md', '/b/2.md', '/c/1.md'])).toEqual([
      '/a/1.md',
      '/b/1.md',
      '/c/1.md',
      '/a/2.md',
      '/b/2.md',
      '/a/3.md',
    ]);
  });

  it('tells folders apart by their whole path: the root, a folder and its sub-folder are three', () => {
    expect(order(['/x.md', '/y.md', '/a/x.md', '/a/y.md', '/a/b/x.md'])).toEqual(['/x.md', '/a/x.md', '/a/b/x.md', '/y.md', '/a/y.md']);
  });

  it('keeps a plan in one folder, or of one transfer a folder, as it is', () => {
    expect(order(['/a/1.md', '/a/2.md', '/a/3.md'])).toEqual(['/a/1.md', '/a/2.md', '/a/3.md']);
    expect(order(['/c/1.md', '/a/1.md', '/b/1.md'])).toEqual(['/c/1.md', '/a/1.md', '/b/1.md']);
    expect(order([])).toEqual([]);
  });

  it('returns every index once, whatever the paths', () => {
    const paths = Array.from({ length: 500 }, (_, i) => `/f${(i * 7) % 13}/${i % 3 ? `g${i % 5}/` : ''}n${i}.md`);
    const indexes = spreadByFolder(paths.map((path) => ({ path })));
    expect([...indexes].sort((a, b) => a - b)).toEqual(paths.map((_, i) => i));
  });
});

describe('FolderTurns', () => {
  it('lets at most `window` folders take turns; a folder done gives its turn to the next waiting', () => {
    const paths = ['/a/1.md', '/a/2.md', '/b/1.md', '/b/2.md', '/b/3.md', '/c/1.md', '/c/2.md', '/d/1.md'];
    const order = spreadByFolder(paths.map((path) => ({ path })), 2).map((i) => paths[i]);
    expect(order).toEqual(['/a/1.md', '/b/1.md', '/a/2.md', '/b/2.md', '/c/1.md', '/b/3.md', '/c/2.md', '/d/1.md']);
  });

  it('by default a few folders at a time (FOLDERS_IN_TURN), not every folder of the plan', () => {
    const paths = Array.from({ length: 40 }, (_, f) => [1, 2].map((n) => `/f${String(f).padStart(2, '0')}/${n}.md`)).flat();
    const order = spreadByFolder(paths.map((path) => ({ path }))).map((i) => paths[i]!);
    const folders = (slice: string[]) => new Set(slice.map((p) => p.slice(0, 4)));
    expect(folders(order.slice(0, 2 * FOLDERS_IN_TURN)).size).toBe(FOLDERS_IN_TURN);
    expect(FOLDERS_IN_TURN).toBeLessThan(MAX_HELD_FOLDERS);
  });

  it('takes transfers handed in while others are taken: a folder seen again later gets a turn of its own', () => {
    const turns = new FolderTurns<{ path: string }>(2);
    turns.add({ path: '/a/1.md' });
    expect(turns.next()?.path).toBe('/a/1.md');
    expect(turns.next()).toBeUndefined();
    turns.add({ path: '/b/1.md' });
    turns.add({ path: '/a/2.md' });
    turns.add({ path: '/c/1.md' });
    turns.add({ path: '/b/2.md' });
    expect(turns.size).toBe(4);
    expect([turns.next(), turns.next(), turns.next(), turns.next()].map((t) => t?.path)).toEqual(['/b/1.md', '/a/2.md', '/b/2.md', '/c/1.md']);
    expect(turns.size).toBe(0);
  });

  it('keeps no transfer it has handed out, though its folder still has more to come', async () => {
    // A download's transfer holds its memory's content: kept until the folder's last one, every
    // folder's content would stay in memory for as long as its folder takes.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const turns = new FolderTurns<{ path: string; content: string }>(1);
    for (let i = 0; i < 3; i++) turns.add({ path: `/a/${i}.md`, content: `c${i}` });
    let taken: { path: string } | undefined = turns.next();
    const weak = new WeakRef(taken!);
    taken = undefined;
    // A WeakRef keeps its target until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(weak.deref()).toBeUndefined();
    expect(turns.size).toBe(2);
    expect([turns.next(), turns.next()].map((t) => t?.path)).toEqual(['/a/1.md', '/a/2.md']);
  });

  it('refuses a window under one', () => {
    expect(() => new FolderTurns(0)).toThrow(RangeError);
  });
});
