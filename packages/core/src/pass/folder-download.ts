import type { Outcome } from '../decide/outcome.js';
import type { ContentLane } from '../remote/content-budget.js';
import { MAX_MEMORY_BYTES } from '../model/limits.js';
import type { Plan, RemoteEntry, Transfer } from '../decide/plan.js';
import type { ListedMemory } from '../decide/feed-fold.js';
import { indexRemote } from '../decide/remote-index.js';
import type { PathReport } from '../model/reports.js';
import type { StoreClient, StoreMemory } from '../remote/store-client.js';
import type { TransferSlots } from '../remote/fair-slots.js';
import { fanOutLevel, listWhole } from '../remote/store-listing.js';

/**
 * A materialize's download, folder by folder: each top-level folder's pulls start as soon as its
 * listing has answered, while the other folders are still being listed, and its content is let
 * go once its files are written (content-budget.ts bounds what is listed and not yet written,
 * all stores together). The plain download lists the whole store first and writes only then:
 * about a third of its wall time on the bench's store (the listing's 8 round trips), and every
 * memory's text in memory at once.
 *
 * The fan-out is `listStore`'s (store-listing.ts): the level (the root, or the lone folder it
 * holds), then each of its sub-folders listed whole. What the whole listing's index would
 * refuse is refused here too, batch by batch, because the batches cannot meet:
 * - a sub-folder's batch holds only the memories under its own prefix, so no path is in two
 *   batches, and a path and a folder of other memories ("path_is_folder") share a batch;
 * - the level's own memories (directly in it) are one more batch, written first, except one
 *   whose path is also a sub-folder's name: that one waits for the end, when the whole listing
 *   says whether the folder held any memory;
 * - what a folder's listing returns outside its prefix (a memory renamed while the fan-out ran,
 *   a server that answers wrongly) also waits for the end, and is then judged against the whole
 *   listing (`indexRemote`) and against what the batches wrote: a path a batch wrote is
 *   `listed_twice`; one below a file a batch wrote cannot be written (the disk refuses it, and
 *   the pull says so).
 * A case-insensitive disk keeps the plain download: there one memory may take another's file
 * across folders (`/A/x.md`, `/a/x.md`), which only the whole listing orders.
 *
 * A listing that fails stops the listings still to come and the pulls not started yet; the
 * pulls under way finish (no write is left half done when the caller removes the folder). The
 * failure is returned with what was done, for the caller to settle and then throw.
 */
export interface FolderDownloadDeps {
  client: StoreClient;
  storeId: string;
  /** The download's: its listings and the pulls not started yet stop when it aborts. */
  signal: AbortSignal;
  /** Aborts `signal` (a listing failed: the rest is for nothing). */
  abort(reason: unknown): void;
  /** The store's transfer slots: each folder listing takes one for its walk. */
  pool: TransferSlots;
  budget: ContentLane;
  /** Performs a batch's transfers (the download's `TransferStream`), resolving with their outcomes. */
  run(transfers: readonly Transfer[]): Promise<Outcome[]>;
  /** The download's plan for some of the store's memories (nothing local, no baseline: every one a pull). */
  plan(remote: Map<string, RemoteEntry>): Plan;
}

export interface FolderDownload {
  /** Every memory listed, without content, in `listStore`'s order: the level's, then each folder's. */
  listed: ListedMemory[];
  /** When the listing began and when its last folder answered (performance.now). */
  listedFrom: number;
  listedUntil: number;
  /** What was planned, by path, without content. */
  remote: Map<string, RemoteEntry>;
  /** What the index refused (warned about by the caller). */
  refused: PathReport[];
  /** Memories whose size says they are over the limit: never fetched nor planned. */
  oversize: PathReport[];
  /**
   * Each batch's plan, but for its transfers (each outcome names its own, without content: one
   * copy of each is kept, not two), and the outcomes of every batch's transfers.
   */
  plans: Plan[];
  outcomes: Outcome[];
  /** The listing that failed, if one did: the download fails with it once what was done is settled. */
  failure?: { error: unknown };
}

/** Null: the store cannot be fanned out (no `listFolder`, or a roll-up that is not a sub-folder), and nothing was written. */
export async function downloadByFolder(deps: FolderDownloadDeps): Promise<FolderDownload | null> {
  const { client, storeId, signal, pool, budget } = deps;
  const listedFrom = performance.now();
  const level = await fanOutLevel(client, storeId, { withContent: true, signal });
  if (level === null) return null;

  const result: FolderDownload = { listed: [], listedFrom, listedUntil: listedFrom, remote: new Map(), refused: [], oversize: [], plans: [], outcomes: [] };
  /** Paths a batch planned: each is written by that batch or by none. */
  const planned = new Set<string>();
  const batches: Promise<void>[] = [];
  /** Runs one batch's memories, already validated by `indexRemote`, and notes what it planned. */
  const runBatch = (memories: readonly StoreMemory[], index: ReturnType<typeof indexRemote>): Promise<void> => {
    const remote = new Map<string, RemoteEntry>();
    // The memory each entry stands for: the first listed at its path with its id, as the index kept.
    const byPath = new Map<string, StoreMemory>();
    for (const m of memories) if (!byPath.has(m.path) && index.remote.get(m.path)?.id === m.id) byPath.set(m.path, m);
    for (const [path, entry] of index.remote) {
      const memory = byPath.get(path);
      const size = memory?.content_size_bytes ?? 0;
      if (size > MAX_MEMORY_BYTES) {
        result.oversize.push({ path, code: 'remote_too_large', reason: `it is ${size} bytes, over the ${MAX_MEMORY_BYTES}-byte limit` });
        continue;
      }
      remote.set(path, typeof memory?.content === 'string' ? { ...entry, content: memory.content } : entry);
      result.remote.set(path, entry);
      planned.add(path);
    }
    result.refused.push(...index.skipped);
    const plan = deps.plan(remote);
    result.plans.push({ ...plan, transfers: [] });
    return deps.run(plan.transfers).then((outcomes) => {
      for (const outcome of outcomes) result.outcomes.push(outcome);
    });
  };

  const folderNames = new Set(level.folders.map((folder) => folder.slice(0, -1)));
  const direct: StoreMemory[] = [];
  const deferred: StoreMemory[] = [];
  for (const m of level.memories) (isDirectlyIn(level.folder, m.path) && !folderNames.has(m.path) ? direct : deferred).push(m);
  batches.push(runBatch(direct, indexRemote(direct)));

  // Each folder's listing, in `listStore`'s order once all are in.
  const folderListings: ListedMemory[][] = level.folders.map(() => []);
  /** A folder's listing answered: its batch starts, and nothing here keeps its memories while the batch runs. */
  const startFolder = (prefix: string, i: number, memories: readonly StoreMemory[]): Promise<void> => {
    folderListings[i] = memories.map(listedOnly);
    const inside = memories.filter((m) => m.path.startsWith(prefix));
    for (const m of memories) if (!m.path.startsWith(prefix)) deferred.push(m);
    const batch = runBatch(inside, indexRemote(inside));
    batches.push(batch);
    return batch;
  };
  const listings = level.folders.map(async (prefix, i) => {
    const ticket = await budget.admit(signal);
    try {
      // The listing's memories (their content) go only to the batch, and from it to each
      // transfer, let go once written: held here across the batch, every memory of the folder
      // would stay in memory until the last of them is on disk.
      const batch = await pool
        .runExclusive(() => listWhole(client, storeId, { withContent: true, signal, pathPrefix: prefix }))
        .then((memories) => {
          result.listedUntil = Math.max(result.listedUntil, performance.now());
          ticket.carried(memories.reduce((sum, m) => sum + (typeof m.content === 'string' ? m.content.length : 0), 0));
          return startFolder(prefix, i, memories);
        });
      await batch;
    } finally {
      ticket.release();
    }
  });
  const settled = await Promise.allSettled(listings.map((listing) => listing.catch((err: unknown) => {
    // The first listing to fail stops the rest; the ones it stops fail with its abort.
    if (!signal.aborted) deps.abort(err);
    throw err;
  })));
  // The batches whose listing answered run to their end, stopped or not.
  await Promise.all(batches);
  result.listed = [...level.memories.map(listedOnly), ...folderListings.flat()];
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    result.failure = { error: signal.aborted ? signal.reason : failed.reason };
    return result;
  }

  // What waited for the whole listing: judged against all of it, and against what was written.
  if (deferred.length > 0) {
    const whole = indexRemote(result.listed);
    const mine = new Set(deferred.map((m) => m.path));
    const lateRemote = new Map<string, RemoteEntry>();
    for (const path of mine) {
      const entry = whole.remote.get(path);
      if (planned.has(path)) result.refused.push({ path, code: 'listed_twice', reason: 'listed twice by the store' });
      else if (entry) lateRemote.set(path, entry);
    }
    const late = deferred.filter((m) => lateRemote.get(m.path)?.id === m.id);
    await runBatch(late, { remote: lateRemote, skipped: whole.skipped.filter((s) => mine.has(s.path) && !planned.has(s.path)) });
  }
  return result;
}

/** `path` names an entry directly in `folder` (wire form with its trailing `/`), not below a sub-folder of it. */
function isDirectlyIn(folder: string, path: string): boolean {
  return path.startsWith(folder) && !path.slice(folder.length).includes('/');
}

/** The listing's facts about a memory, without its content: what the remote view keeps. */
function listedOnly(memory: StoreMemory): ListedMemory {
  return {
    id: memory.id,
    path: memory.path,
    content_sha256: memory.content_sha256,
    ...(memory.updated_at !== undefined && { updated_at: memory.updated_at }),
    ...(memory.memory_version_id !== undefined && { memory_version_id: memory.memory_version_id }),
  };
}
