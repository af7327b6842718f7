import { decodePageCursor, encodePageCursor } from './page-cursor.js';
import { invalidRequest } from './refusal.js';
import type { MemoryRecord } from './memory-store.js';

/** A listing row before it is put on the wire: a memory, or the roll-up of a folder below `depth`. */
export type ListEntry<M extends { path: string } = MemoryRecord> =
  | { kind: 'memory'; memory: M }
  | { kind: 'prefix'; path: string };

export interface ListQuery {
  /** Ends with `/`; only memories whose path starts with it are listed. */
  pathPrefix?: string;
  /** 0 lists everything below the prefix; n > 0 rolls up memories deeper than n segments. */
  depth: number;
}

/**
 * The whole listing, sorted by path. Sorting by path gives every row a unique, stable key
 * (paths never overlap, and a roll-up ends in `/` where no memory path can), which the page
 * cursor relies on.
 */
export function listEntries<M extends { path: string }>(memories: readonly M[], query: ListQuery): ListEntry<M>[] {
  const base = query.pathPrefix ?? '/';
  const entries: ListEntry<M>[] = [];
  const rolledUp = new Set<string>();
  // The whole store at depth 0 is every memory, a planted one outside `/` too (see `plant`).
  const everything = query.pathPrefix === undefined && query.depth === 0;
  for (const memory of memories) {
    if (everything) {
      entries.push({ kind: 'memory', memory });
      continue;
    }
    if (!memory.path.startsWith(base)) continue;
    const below = memory.path.slice(base.length).split('/');
    if (query.depth === 0 || below.length <= query.depth) {
      entries.push({ kind: 'memory', memory });
      continue;
    }
    const prefix = `${base}${below.slice(0, query.depth).join('/')}/`;
    if (!rolledUp.has(prefix)) {
      rolledUp.add(prefix);
      entries.push({ kind: 'prefix', path: prefix });
    }
  }
  return entries.sort((a, b) => compare(entryKey(a), entryKey(b)));
}

/**
 * One page: the first `limit` entries after the cursor's key. A keyset cursor (not an offset)
 * means a memory created or deleted between two page requests never shifts another memory
 * into the gap or makes it appear twice.
 */
export function pageAfter<M extends { path: string }>(
  entries: readonly ListEntry<M>[],
  cursor: string | undefined,
  limit: number,
): { entries: ListEntry<M>[]; nextPage: string | null } {
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  const rest = after === undefined ? entries : entries.filter((entry) => compare(entryKey(entry), after) > 0);
  const page = rest.slice(0, limit);
  const last = page.at(-1);
  const nextPage = rest.length > limit && last ? encodePageCursor(`${CURSOR_TAG}${entryKey(last)}`) : null;
  return { entries: page, nextPage };
}

function entryKey(entry: ListEntry<{ path: string }>): string {
  return entry.kind === 'memory' ? entry.memory.path : entry.path;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Marks a memory-listing cursor, so that any other string (or a version cursor) is refused.
const CURSOR_TAG = 'm1:';

function decodeCursor(cursor: string): string {
  const key = decodePageCursor(cursor);
  if (!key?.startsWith(CURSOR_TAG)) throw invalidRequest(`page ${JSON.stringify(cursor)} is not a cursor this listing returned`);
  return key.slice(CURSOR_TAG.length);
}
