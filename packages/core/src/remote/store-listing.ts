import type { TransferSlots } from './fair-slots.js';
import { listAll } from '../model/errors.js';
import { LIST_PAGE_SIZE, MAX_PATH_SEGMENTS } from '../model/limits.js';
import type { StoreClient, StoreFolderEntry, StoreMemory } from './store-client.js';

/**
 * Every memory of a store, listed folder by folder in parallel when the client can
 * (`listFolder`), else by one `list` walked page after page.
 *
 * Fan-out: one `depth=1` listing of the root gives its memories and one roll-up per top-level
 * folder; then each folder is listed whole (`pathPrefix`), in parallel, each listing holding
 * one slot of `pool` for its walk. A store of F folders thus costs about (pages of the root) +
 * (pages of its largest folder) round trips instead of (all pages). A root that holds a single
 * folder and nothing else is descended first (`/memories/...` stores), so its sub-folders are
 * what fans out.
 *
 * Like a listing, the result is not a snapshot: a memory renamed meanwhile may be met in two
 * folders or in none (the caller's index validation and the next read settle it). A roll-up
 * that is not a sub-folder of the folder listed (a server bug, a hostile answer) makes the
 * fan-out give up for one plain `list`, which needs no roll-up at all.
 */
export async function listStore(
  client: StoreClient,
  storeId: string,
  opts: { withContent: boolean; signal: AbortSignal; pool: TransferSlots },
): Promise<StoreMemory[]> {
  const { withContent, signal, pool } = opts;
  const level = await fanOutLevel(client, storeId, { withContent, signal });
  if (level === null) return listWhole(client, storeId, { withContent, signal });
  const listed = await Promise.all(
    level.folders.map((prefix) => pool.runExclusive(() => listWhole(client, storeId, { withContent, signal, pathPrefix: prefix }))),
  );
  const memories = [...level.memories];
  for (const part of listed) for (const memory of part) memories.push(memory);
  return memories;
}

/** The level a fan-out starts from: its own memories, and its sub-folders (wire form, with their trailing `/`), each to be listed whole. */
export interface FanOutLevel {
  /** The folder listed last (`/`, or the lone folder descended into), wire form with its trailing `/`. */
  folder: string;
  memories: StoreMemory[];
  folders: string[];
}

/**
 * The first step of a fan-out (see `listStore`): the root listed one level deep, descended while
 * it holds a single folder and nothing else. Null when there is no fan-out to make: the client
 * has no `listFolder`, or a roll-up is not a sub-folder of the folder listed (then one plain
 * `list`, which needs no roll-up at all).
 */
export async function fanOutLevel(
  client: StoreClient,
  storeId: string,
  opts: { withContent: boolean; signal: AbortSignal },
): Promise<FanOutLevel | null> {
  const { withContent, signal } = opts;
  const listFolder = client.listFolder?.bind(client);
  if (!listFolder) return null;
  const memories: StoreMemory[] = [];
  let folder = '/';
  let folders: string[] = [];
  for (let depth = 0; ; depth++) {
    const entries: StoreFolderEntry[] = await listAll(() => listFolder(storeId, { pathPrefix: folder, withContent, signal }));
    folders = [];
    let here = 0;
    for (const entry of entries) {
      if (entry.type === 'memory') {
        memories.push(entry.memory);
        here++;
      } else if (isSubFolder(folder, entry.path)) {
        if (!folders.includes(entry.path)) folders.push(entry.path);
      } else return null;
    }
    // A lone folder and nothing beside it: its own sub-folders fan out better.
    if (here === 0 && folders.length === 1 && depth < MAX_PATH_SEGMENTS) {
      folder = folders[0]!;
      continue;
    }
    break;
  }
  return { folder, memories, folders };
}

/** Every memory of the store, or of the folder `pathPrefix` and below: one `list` walked page after page. */
export function listWhole(
  client: StoreClient,
  storeId: string,
  opts: { withContent: boolean; signal: AbortSignal; pathPrefix?: string },
): Promise<StoreMemory[]> {
  const { withContent, signal, pathPrefix } = opts;
  return listAll(() => client.list(storeId, { withContent, signal, ...(pathPrefix !== undefined && { pathPrefix }) }));
}

/** `path` is a folder one segment below `folder`, in wire form with its trailing `/` (what a `depth=1` roll-up is). */
function isSubFolder(folder: string, path: string): boolean {
  if (typeof path !== 'string' || !path.startsWith(folder) || !path.endsWith('/')) return false;
  const name = path.slice(folder.length, -1);
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/');
}

/**
 * Whether a full listing without content should fan out by folder (`listStore`) rather than
 * walk one `list` page after page, judged from the paths the caller already knows of the store
 * (its last view). Pages without content hold 100 memories, so one walk costs ⌈n / 100⌉
 * requests, each one round trip after the other; a fan-out costs about a request per folder
 * (more for folders over a page), nearly all in parallel. It fans out when that at least
 * halves the round trips and costs at most three times the requests: a store of 2,000
 * memories in 40 folders lists in 2 round trips (41 requests) instead of 20, and one of many
 * small folders, where a fan-out would send a request for every few memories, keeps the walk.
 * A store that fits one page, or one not known yet, is walked (one request).
 */
export function fanOutPays(knownPaths: readonly string[]): boolean {
  const walkPages = Math.ceil(knownPaths.length / LIST_PAGE_SIZE);
  if (walkPages <= 1) return false;
  // Like listStore: a level holding a single folder and nothing else is descended first.
  let paths = knownPaths;
  let prefix = '/';
  for (let depth = 0; depth < MAX_PATH_SEGMENTS; depth++) {
    const first = folderBelow(prefix, paths[0]!);
    if (first === null || !paths.every((p) => folderBelow(prefix, p) === first)) break;
    prefix = first;
  }
  const folders = new Map<string, number>();
  let here = 0;
  for (const path of paths) {
    const folder = folderBelow(prefix, path);
    if (folder === null) here++;
    else folders.set(folder, (folders.get(folder) ?? 0) + 1);
  }
  const pages = (n: number) => Math.max(1, Math.ceil(n / LIST_PAGE_SIZE));
  const levelPages = pages(here + folders.size);
  const folderPages = [...folders.values()].map(pages);
  const requests = levelPages + folderPages.reduce((a, b) => a + b, 0);
  const roundTrips = levelPages + Math.max(0, ...folderPages);
  return roundTrips * 2 <= walkPages && requests <= 3 * walkPages;
}

/** The folder (`/a/b/`) one segment below `prefix` that holds `path`, or null when `path` is directly in it. */
function folderBelow(prefix: string, path: string): string | null {
  if (!path.startsWith(prefix)) return null;
  const slash = path.indexOf('/', prefix.length);
  return slash < 0 ? null : path.slice(0, slash + 1);
}
