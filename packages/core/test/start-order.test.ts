import { describe, expect, it } from 'vitest';
import { spreadByFolder } from '../src/decide/start-order.js';

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
