import type { LocalFile } from '../local/scan.js';
import { ancestorPaths } from '../model/memory-path.js';
import { EMPTY_SHA } from '../model/sha256.js';

/**
 * Rename detection: which differences between the baseline and the two sides are one memory
 * that changed its path, rather than a deletion and a creation. Pure, like the planner it feeds.
 *
 * Why: a delete + create loses the memory's id and version history, re-downloads a file the
 * disk already holds, and, when the file was edited while the store renamed it, leaves both
 * copies in the store. A rename found here keeps the memory; anything this module does not
 * claim goes through the table's rows as before, which lose nothing. So every rule below is
 * conservative: a doubt (a name taken on either side, two candidates alike, a path the scan
 * could not see) leaves the paths to the rows.
 *
 * - **Remote rename**: the memory the baseline holds at `from` (by the id recorded with the
 *   baseline) is now at `to` in the store, and nothing else is at `from`. The file at `from`
 *   moves to `to` on disk; no content is transferred.
 * - **Local rename**: the baseline's file at `from` is gone, its memory is untouched in the
 *   store, and exactly one new file elsewhere holds the same content (`sha`). The memory's path
 *   is updated, guarded by that sha; its id and history stay. A folder moved as a whole is one
 *   such rename per file. When several vanished files share a content, they pair with the new
 *   ones by file name, and only where that name is unique on both sides.
 * - **Empty content carries no identity**: an empty file matches every empty memory by chance,
 *   so it never pairs a local rename, and a memory agreed empty is not followed as a remote
 *   rename either (nor moved alike on both sides onto an empty file). The rows then delete and
 *   create, or delete locally and pull: an empty memory, nothing to lose.
 *
 * Whether a local rename found here is sent as one is the planner's call (`deletionMode`): a
 * rename makes the old path leave the store, which deletions turned off must never do.
 */

/** A memory in the store's listing without contents, by wire path: its id and sha. */
export interface RemoteSide {
  id: string;
  sha: string;
}

export interface RenameInput {
  /** path -> sha both sides agreed on. */
  baseline: ReadonlyMap<string, string>;
  /** path -> id of the memory the baseline's entry was agreed with. */
  baselineIds: ReadonlyMap<string, string>;
  localFiles: ReadonlyMap<string, LocalFile>;
  /** `(path) => reason` when the scan could not see the path or a folder above it. */
  blocked: (path: string) => string | undefined;
  remote: ReadonlyMap<string, RemoteSide>;
  /** A read-only store never renames a memory (it never writes the store). */
  readWrite: boolean;
  /** path -> sha of local content already refused. */
  refused: ReadonlyMap<string, string>;
}

/** The store renamed a memory: the file follows on disk (or is already there). */
export interface RemoteRename {
  from: string;
  to: string;
  memoryId: string;
  /** The baseline's sha, which moves with the file. */
  baseSha: string;
  /** The file at `from` as scanned (the move re-checks it). */
  localSha: string;
  /** The memory's sha at `to`. */
  remoteSha: string;
  /**
   * The file is already at `to` and gone from `from` (the agent made the same move, or a pass
   * that moved it was killed before its state was recorded): only the baseline follows.
   */
  alreadyMoved?: true;
}

/** The agent renamed a file: the memory follows in the store. */
export interface LocalRename {
  from: string;
  to: string;
  memoryId: string;
  /** The content both paths hold: the baseline's at `from`, the file's at `to`, the memory's. */
  sha: string;
}

/**
 * The store renamed a memory onto a name the agent has just taken on disk with a new file, and
 * the memory holds exactly the content the baseline agreed on at its old path: the rename
 * brought the name and no content. The folder still holds that content at `from`, so both
 * files are kept and pushed rather than the memory pulled over the agent's new file.
 */
export interface RenameOntoNewFile {
  from: string;
  to: string;
  memoryId: string;
  /** The memory's sha at `to`, which is the baseline's at `from`. */
  remoteSha: string;
  /** No memory is at `from` any more: the file there is created again. Otherwise one holds it already. */
  recreateFrom: boolean;
}

export interface Renames {
  remote: RemoteRename[];
  local: LocalRename[];
  /** Read-write stores only: a read-only store never pushes, and the rows keep the local file. */
  ontoNewFile: RenameOntoNewFile[];
}

export function detectRenames(input: RenameInput): Renames {
  const ontoNewFile: RenameOntoNewFile[] = [];
  const remote = remoteRenames(input, ontoNewFile);
  // A path claimed by a remote rename is not also a local one (they never share a path by
  // construction, but the guard keeps that from resting on it).
  const claimed = new Set([...remote, ...ontoNewFile].flatMap((r) => [r.from, r.to]));
  const local = input.readWrite ? localRenames(input, claimed) : [];
  return { remote, local, ontoNewFile };
}

function remoteRenames(input: RenameInput, ontoNewFile: RenameOntoNewFile[]): RemoteRename[] {
  const { baseline, baselineIds, localFiles, remote } = input;
  if (baselineIds.size === 0) return [];
  // Only a baseline path whose memory is no longer there can be a rename's source (another
  // memory may have taken the path: B19's copy back): when every path still holds its memory (an
  // idle pass), nothing below is built.
  let moved = false;
  for (const [from, id] of baselineIds) {
    if (baseline.has(from) && remote.get(from)?.id !== id) {
      moved = true;
      break;
    }
  }
  if (!moved) return [];
  // Where each memory is now. An id at two paths (never, from one store) is no one's rename.
  const pathById = new Map<string, string | null>();
  for (const [path, entry] of remote) pathById.set(entry.id, pathById.has(entry.id) ? null : path);
  const idCount = new Map<string, number>();
  for (const id of baselineIds.values()) idCount.set(id, (idCount.get(id) ?? 0) + 1);

  let localFolders: Set<string> | null = null;
  const isLocalFolder = (path: string): boolean => {
    localFolders ??= new Set([...localFiles.keys()].flatMap(ancestorPaths));
    return localFolders.has(path);
  };

  const found: RemoteRename[] = [];
  for (const [from, baseSha] of baseline) {
    const memoryId = baselineIds.get(from);
    if (memoryId === undefined || idCount.get(memoryId) !== 1) continue;
    const to = pathById.get(memoryId);
    if (to === undefined || to === null || to === from) continue;
    // `to` had a baseline of its own (a memory that moved away or was deleted): conservative.
    if (baseline.has(to)) continue;
    if (input.blocked(from) !== undefined || input.blocked(to) !== undefined) continue;
    if (baseSha === EMPTY_SHA) continue;
    const local = localFiles.get(from);
    const target = remote.get(to)!;
    const atFrom = remote.get(from);
    // The name is taken on disk by a new file of the agent's (other content than the memory's:
    // the same is adopted by the rows), and the memory brought no content of its own: it holds
    // what the baseline agreed on at `from` (the other writer's rename alone, or the engine's
    // own push, landed by id after a rename it had not seen yet). Store-wins would replace the
    // agent's only copy with content that is no remote edit. Both are kept instead, provided the
    // file at `from` stays safe too: no memory is at `from` (it is created again), or one holding
    // exactly that file (the rows find it in sync). Invariant: a rename alone never wins over a
    // local file.
    const newFile = localFiles.get(to);
    if (
      input.readWrite &&
      local !== undefined &&
      newFile !== undefined &&
      newFile.sha !== target.sha &&
      target.sha === baseSha &&
      (atFrom === undefined || atFrom.sha === local.sha)
    ) {
      ontoNewFile.push({ from, to, memoryId, remoteSha: target.sha, recreateFrom: atFrom === undefined });
      continue;
    }
    // Another memory took `from` (a swap, or a replace): the rows judge both paths.
    if (atFrom !== undefined) continue;
    if (local === undefined) {
      // Moved alike on both sides: the baseline follows, and the rows judge the file at `to`
      // against it (an edit made with the move is then a local change, not a conflict). An
      // empty file there says nothing of where it came from.
      const there = localFiles.get(to);
      if (there !== undefined && there.sha !== EMPTY_SHA) found.push({ from, to, memoryId, baseSha, localSha: there.sha, remoteSha: target.sha, alreadyMoved: true });
      // Otherwise the agent deleted the file meanwhile: the rows restore it at its new name.
      continue;
    }
    // The name is taken on disk (a file, or a folder of files), or a folder on its way is a file.
    if (localFiles.has(to) || isLocalFolder(to) || ancestorPaths(to).some((folder) => localFiles.has(folder))) continue;
    found.push({ from, to, memoryId, baseSha, localSha: local.sha, remoteSha: target.sha });
  }
  return found;
}

function localRenames(input: RenameInput, claimed: ReadonlySet<string>): LocalRename[] {
  const { baseline, localFiles, remote, refused } = input;
  // Vanished: the baseline's file is gone, and its memory is in the store as we last agreed.
  const vanished = new Map<string, { path: string; memoryId: string }[]>();
  for (const [path, sha] of baseline) {
    if (sha === EMPTY_SHA || localFiles.has(path) || claimed.has(path) || input.blocked(path) !== undefined) continue;
    const r = remote.get(path);
    if (r === undefined || r.sha !== sha) continue;
    // Recorded with another memory than the one there now: the store replaced it; the rows judge.
    const recorded = input.baselineIds.get(path);
    if (recorded !== undefined && recorded !== r.id) continue;
    push(vanished, sha, { path, memoryId: r.id });
  }
  if (vanished.size === 0) return [];
  // Appeared: a new file (no baseline, no memory) that holds one of those contents.
  const appeared = new Map<string, string[]>();
  for (const [path, file] of localFiles) {
    if (!vanished.has(file.sha) || baseline.has(path) || remote.has(path) || claimed.has(path)) continue;
    if (file.unpushable !== undefined || refused.get(path) === file.sha || input.blocked(path) !== undefined) continue;
    push(appeared, file.sha, path);
  }

  const found: LocalRename[] = [];
  for (const [sha, targets] of appeared) {
    const sources = vanished.get(sha)!;
    if (sources.length === 1 && targets.length === 1) {
      found.push({ from: sources[0]!.path, to: targets[0]!, memoryId: sources[0]!.memoryId, sha });
      continue;
    }
    // Same content more than once: pair only where the file name tells them apart on both sides.
    const sourceByName = uniqueByName(sources.map((s) => s.path));
    const targetByName = uniqueByName(targets);
    for (const [name, to] of targetByName) {
      const from = sourceByName.get(name);
      if (from === undefined) continue;
      found.push({ from, to, memoryId: sources.find((s) => s.path === from)!.memoryId, sha });
    }
  }
  return found.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
}

/** File name -> path, for the names only one path has. */
function uniqueByName(paths: readonly string[]): Map<string, string> {
  const byName = new Map<string, string | null>();
  for (const path of paths) {
    const name = path.slice(path.lastIndexOf('/') + 1);
    byName.set(name, byName.has(name) ? null : path);
  }
  const unique = new Map<string, string>();
  for (const [name, path] of byName) if (path !== null) unique.set(name, path);
  return unique;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * The ids the baseline was agreed with, after a pass: for each baseline path, the memory the
 * store holds there when it holds the baseline's content (or when no id was known); otherwise
 * the id already recorded, so a memory renamed while the pass ran is still found as a rename by
 * the next one. Paths no longer in the baseline drop out.
 */
export function baselineIdsAfter(
  baseline: ReadonlyMap<string, string>,
  previous: ReadonlyMap<string, string>,
  remote: ReadonlyMap<string, RemoteSide>,
): Map<string, string> {
  const ids = new Map<string, string>();
  for (const [path, sha] of baseline) {
    const r = remote.get(path);
    const old = previous.get(path);
    if (r !== undefined && (r.sha === sha || old === undefined)) ids.set(path, r.id);
    else if (old !== undefined) ids.set(path, old);
  }
  return ids;
}

/** A move the agent made alike to the store's, whose memory the store then deleted at its new path. */
export interface MovedThenDeleted {
  from: string;
  to: string;
  memoryId: string;
  sha: string;
}

/**
 * The baseline's memory at `from` was moved by another writer to `to` and then deleted there,
 * and the agent made the same move meanwhile: the file at `from` is gone and `to` holds exactly
 * the baseline's content, with no baseline and no memory of its own. It is the remote rename
 * "moved alike" (above), followed by the store's deletion: the baseline follows to `to`, and
 * the rows then follow the deletion there (the file goes, guarded by that very content). Without
 * this, the file at `to` read as a new file and was created again: the deleted memory back (B44).
 *
 * Conservative, as the rest of this module: only the feed's word on where and with what content
 * the memory was deleted (`deletedAs`) claims a pair; an edit made with the move, an empty file,
 * a path the scan could not see or another memory at `to` leaves both paths to the rows, which
 * keep the file. Pure.
 */
export function movedAlikeThenDeleted(input: {
  baseline: ReadonlyMap<string, string>;
  baselineIds: ReadonlyMap<string, string>;
  localFiles: ReadonlyMap<string, LocalFile>;
  remote: ReadonlyMap<string, unknown>;
  blocked: (path: string) => string | undefined;
  deletedAs: (memoryId: string) => { path: string; sha: string } | undefined;
}): MovedThenDeleted[] {
  const found: MovedThenDeleted[] = [];
  const taken = new Set<string>();
  for (const [from, sha] of input.baseline) {
    const memoryId = input.baselineIds.get(from);
    if (memoryId === undefined || sha === EMPTY_SHA || input.localFiles.has(from) || input.remote.has(from)) continue;
    const last = input.deletedAs(memoryId);
    if (last === undefined || last.path === from || last.sha !== sha) continue;
    const to = last.path;
    if (input.localFiles.get(to)?.sha !== sha || input.baseline.has(to) || input.remote.has(to) || taken.has(to)) continue;
    if (input.blocked(from) !== undefined || input.blocked(to) !== undefined) continue;
    taken.add(to);
    found.push({ from, to, memoryId, sha });
  }
  return found;
}
