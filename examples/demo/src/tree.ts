import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MARKER_FILE } from '@memory-mounter/core';

/**
 * What is on disk under `dir`, as indented lines (folders end in `/`), at most `limit` of them:
 * a real store can be large, and the timeline only needs to show what landed where.
 */
export async function treeLines(dir: string, limit = 14): Promise<string[]> {
  const lines: string[] = [];
  await walk(dir, 0, lines);
  if (lines.length <= limit) return lines;
  return [...lines.slice(0, limit - 1), `… ${lines.length - limit + 1} more entries`];
}

async function walk(dir: string, depth: number, lines: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  const indent = '  '.repeat(depth);
  for (const entry of entries) {
    if (entry.isDirectory()) {
      lines.push(`${indent}${entry.name}/`);
      await walk(join(dir, entry.name), depth + 1, lines);
    } else {
      const note = depth === 0 && entry.name === MARKER_FILE ? '   (marker: binds the folder to its store)' : '';
      lines.push(`${indent}${entry.name}${note}`);
    }
  }
}
