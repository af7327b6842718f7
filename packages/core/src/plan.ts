import type { LocalFile } from './scan.js';
import { ancestorPaths } from './memory-path.js';
import { detectRenames } from './renames.js';
import type { Access, DeletionMode } from './types.js';

/**
 * The planner: a pure function from what is known about one store to the actions that bring
 * the folder and the store together. No I/O, no clock of its own, no randomness: the same
 * input always gives the same plan, which is what lets every row of SPEC 4.2 be tested alone.
 */

/** A memory in the store's content-free listing, by wire path. */
export interface RemoteEntry {
  id: string;
  sha: string;
}

export interface PlanInput {
  access: Access;
  deletionMode: DeletionMode;
  /** Clock (ms) of this pass. */
  now: number;
  /** How long a file must stay missing before its remote delete; 0 when waived (finalize). */
  graceMs: number;
  /** Push-only flush: pushes (and refusals) only; no pulls, no deletes, no baseline moves. */
  pushOnly: boolean;
  /** path -> sha both sides agreed on after the last successful transfer. */
  baseline: ReadonlyMap<string, string>;
  /**
   * path -> id of the memory each baseline entry was agreed with, so a memory the store renamed
   * is followed rather than re-downloaded (renames.ts). Absent or partial: those paths are
   * judged by the rows alone.
   */
  baselineIds?: ReadonlyMap<string, string>;
  localFiles: ReadonlyMap<string, LocalFile>;
  /** Wire paths the scan could not see into (symlinks, special files, unreadable folders). */
  localBlocked: ReadonlyMap<string, string>;
  remote: ReadonlyMap<string, RemoteEntry>;
  /** path -> clock (ms) when the file was first seen missing while its memory was unchanged. */
  missingSince: ReadonlyMap<string, number>;
  /** path -> sha of local content already refused (by us or the server): not retried until it changes. */
  refused: ReadonlyMap<string, string>;
  /**
   * A new local file modified after this instant (host clock, ms) is left for the next pass;
   * `null` takes every file as it is (the final passes).
   */
  settleAfter: number | null;
}

export type PullReason = 'remote_changed' | 'new_remote' | 'conflict' | 'restore';
export type PushReason = 'local_changed' | 'new_local' | 'recreate';

export type Action =
  /** Fetch the memory and write it to disk, if the local file still is `expectLocal` (null: absent). */
  | { type: 'pull'; path: string; memoryId: string; remoteSha: string; expectLocal: string | null; reason: PullReason }
  /** Both sides already hold `sha`: record it, transfer nothing. */
  | { type: 'adopt'; path: string; sha: string }
  /** Send the file. With `memoryId`, an update guarded by `expectedRemoteSha`; without, a create. */
  | { type: 'push'; path: string; localSha: string; memoryId?: string; expectedRemoteSha?: string; reason: PushReason }
  /**
   * The store renamed this memory from `from` to `path`: the file moves on disk (if it still is
   * `expectLocal`), no content transferred; the baseline's `baseSha` moves with it. An edit made
   * on either side meanwhile is then settled at the new path by `then` (a local edit is pushed to
   * the same memory, by id), as the table would settle it there.
   */
  | {
      type: 'rename_local';
      path: string;
      from: string;
      memoryId: string;
      expectLocal: string;
      baseSha: string;
      /** The file is already at `path` (moved alike on both sides): only the baseline follows. */
      alreadyMoved?: true;
      /** What the table says at the new path once the file is there (an edit on either side); run only after the move. */
      then?: Action;
    }
  /** The agent renamed `from` to `path` (same content `sha`): the memory's path is updated, guarded by `sha`. */
  | { type: 'rename_remote'; path: string; from: string; memoryId: string; sha: string }
  /** Remove the local file, if it still is `expectLocal`. */
  | { type: 'delete_local'; path: string; expectLocal: string }
  /** Delete the memory, guarded by `expectedRemoteSha`, after a fresh re-check. `log_only`: log, never send. */
  | { type: 'delete_remote'; path: string; memoryId: string; expectedRemoteSha: string; mode: 'send' | 'log_only' }
  /** Gone on both sides: drop from the baseline. */
  | { type: 'forget'; path: string }
  /** Local content that must not be pushed. `firstTime`: warn now; otherwise it was warned already. */
  | { type: 'refuse'; path: string; localSha: string; reason: string; firstTime: boolean }
  /** A read-only store's local change: kept on disk, never pushed. `warn` for the only copy of a memory. */
  | { type: 'keep_local'; path: string; localSha: string; warn: boolean }
  /** A conflict seen by a push-only flush: the store wins, but nothing may be pulled now. Reported, never pushed. */
  | { type: 'note_conflict'; path: string };

export interface Plan {
  actions: Action[];
  /** The candidate list after this pass: a file that reappeared has left it. */
  missingSince: Map<string, number>;
  /** Local deletions not sent this pass (grace, cap, `log_only`, `disabled`). */
  pendingDeletions: string[];
  /** Paths left alone because the scan could not see them, with the reason. */
  skipped: { path: string; reason: string }[];
}

/** The rows of SPEC 4.2, in the table's order. B = baseline, L = local, R = remote sha. */
export type Row =
  | 'unchanged' //                   L = B = R
  | 'local_changed' //               only L changed
  | 'remote_changed' //              only R changed
  | 'both_changed_same' //           both changed, L = R
  | 'both_changed_differ' //         both changed, L != R
  | 'local_missing' //               L missing, R = B
  | 'local_missing_remote_changed' //L missing, R changed
  | 'both_missing' //                L missing, R missing
  | 'remote_missing' //              R missing, L = B
  | 'remote_missing_local_edited' // R missing, L edited
  | 'new_local' //                   new local file
  | 'new_remote'; //                 new remote memory

type Sha = string | undefined;

/**
 * Which row of the table a path is in. `undefined` means absent on that side. Rows 1-5 need L
 * and R present; a path with no baseline but the same content on both sides is row 4 (both
 * sides created it alike), with different content row 5.
 */
export function classify(b: Sha, l: Sha, r: Sha): Row {
  if (l !== undefined && r !== undefined) {
    if (l === b && r === b) return 'unchanged';
    if (r === b) return 'local_changed';
    if (l === b) return 'remote_changed';
    return l === r ? 'both_changed_same' : 'both_changed_differ';
  }
  if (b !== undefined && l === undefined) {
    if (r === b) return 'local_missing';
    if (r !== undefined) return 'local_missing_remote_changed';
    return 'both_missing';
  }
  if (b !== undefined) return l === b ? 'remote_missing' : 'remote_missing_local_edited';
  // No baseline, one side only.
  if (l !== undefined) return 'new_local';
  if (r !== undefined) return 'new_remote';
  throw new Error('classify: a path absent everywhere has no row');
}

/** Remote deletes one pass may send: a quarter of the baseline, never fewer than 8 nor more than 50. */
export function deleteCap(baselineSize: number): number {
  return Math.min(50, Math.max(8, Math.floor(baselineSize / 4)));
}

export function planStore(input: PlanInput): Plan {
  const { access, deletionMode, now, graceMs, pushOnly, baseline, localFiles, remote, missingSince, refused } = input;
  const actions: Action[] = [];
  const nextMissingSince = new Map<string, number>();
  const pendingDeletions: string[] = [];
  const skipped: Plan['skipped'] = [];
  const cap = deleteCap(baseline.size);
  let deletesThisPass = 0;
  const readWrite = access === 'read_write';

  // Pushing a path: the one place that decides whether content may go out.
  // `refusedAs`: the path whose refusal record applies (the file's old path, for a rename).
  const pushAction = (path: string, local: LocalFile, reason: PushReason, target?: RemoteEntry, refusedAs = path): Action => {
    if (local.unpushable || refused.get(refusedAs) === local.sha) {
      const why = local.unpushable ?? 'refused by the store';
      return { type: 'refuse', path, localSha: local.sha, reason: why, firstTime: refused.get(refusedAs) !== local.sha };
    }
    return target
      ? { type: 'push', path, localSha: local.sha, memoryId: target.id, expectedRemoteSha: target.sha, reason }
      : { type: 'push', path, localSha: local.sha, reason };
  };
  const push = (path: string, local: LocalFile, reason: PushReason, target?: RemoteEntry): void => {
    actions.push(pushAction(path, local, reason, target));
  };
  const pull = (path: string, r: RemoteEntry, l: Sha, reason: PullReason): void => {
    if (!pushOnly) actions.push({ type: 'pull', path, memoryId: r.id, remoteSha: r.sha, expectLocal: l ?? null, reason });
  };
  const keep = (path: string, local: LocalFile, warn: boolean): void => {
    if (!pushOnly) actions.push({ type: 'keep_local', path, localSha: local.sha, warn });
  };

  // Renames first: the paths they claim are not judged again by the rows below.
  const renames = detectRenames({
    baseline,
    baselineIds: input.baselineIds ?? new Map(),
    localFiles,
    blocked: (path) => blockedReason(path, input.localBlocked),
    remote,
    readWrite,
    refused,
  });
  const claimed = new Set<string>();
  for (const r of renames.remote) {
    claimed.add(r.from).add(r.to);
    // The file as scanned: still at `from`, or already at `to`.
    const local = localFiles.get(r.alreadyMoved ? r.to : r.from)!;
    const where = r.alreadyMoved ? r.to : r.from;
    const target: RemoteEntry = { id: r.memoryId, sha: r.remoteSha };
    const row = classify(r.baseSha, local.sha, r.remoteSha);
    if (pushOnly) {
      // A flush moves nothing on disk; a local edit still goes to the memory where it now is.
      if (row === 'local_changed' && readWrite) actions.push(pushAction(where, local, 'local_changed', target, r.from));
      else if (row === 'both_changed_differ') actions.push({ type: 'note_conflict', path: where });
      continue;
    }
    // The row the new path is in once the file is there: B moves with the file.
    let then: Action | undefined;
    switch (row) {
      case 'local_changed':
        then = readWrite ? pushAction(r.to, local, 'local_changed', target, r.from) : { type: 'keep_local', path: r.to, localSha: local.sha, warn: false };
        break;
      case 'remote_changed':
        then = { type: 'pull', path: r.to, memoryId: r.memoryId, remoteSha: r.remoteSha, expectLocal: local.sha, reason: 'remote_changed' };
        break;
      case 'both_changed_same':
        then = { type: 'adopt', path: r.to, sha: local.sha };
        break;
      case 'both_changed_differ':
        then = { type: 'pull', path: r.to, memoryId: r.memoryId, remoteSha: r.remoteSha, expectLocal: local.sha, reason: 'conflict' };
        break;
      default:
        break;
    }
    actions.push({
      type: 'rename_local',
      path: r.to,
      from: r.from,
      memoryId: r.memoryId,
      expectLocal: local.sha,
      baseSha: r.baseSha,
      ...(r.alreadyMoved && { alreadyMoved: true as const }),
      ...(then && { then }),
    });
  }
  for (const r of renames.local) {
    claimed.add(r.from).add(r.to);
    actions.push({ type: 'rename_remote', path: r.to, from: r.from, memoryId: r.memoryId, sha: r.sha });
  }

  for (const path of allPaths(baseline, localFiles, remote)) {
    if (claimed.has(path)) continue;
    const blockedBy = blockedReason(path, input.localBlocked);
    if (blockedBy) {
      // The scan could not see this path: absent is not known to mean deleted. Hands off.
      skipped.push({ path, reason: blockedBy });
      continue;
    }
    const b = baseline.get(path);
    const local = localFiles.get(path);
    const r = remote.get(path);
    const l = local?.sha;

    switch (classify(b, l, r?.sha)) {
      case 'unchanged':
        break;

      case 'local_changed':
        // L != B = R: the agent edited; the store still holds what we last agreed on.
        if (readWrite) push(path, local!, 'local_changed', r!);
        else keep(path, local!, false);
        break;

      case 'remote_changed':
        // L = B != R: another writer edited; the file is as we left it.
        pull(path, r!, l, 'remote_changed');
        break;

      case 'both_changed_same':
        // L = R != B: both sides reached the same content; only the baseline is behind.
        if (!pushOnly) actions.push({ type: 'adopt', path, sha: l! });
        break;

      case 'both_changed_differ':
        // L != R, both != B: a real conflict. The store is the source of truth and wins. A
        // push-only flush cannot pull, but the local edit it will not send must still be named.
        if (pushOnly) actions.push({ type: 'note_conflict', path });
        else pull(path, r!, l, 'conflict');
        break;

      case 'local_missing': {
        // L gone, R = B: the agent deleted the file. Candidate for a remote delete (SPEC 4.3).
        // Tracked for read-only stores too (never deleted there): a folder emptied one file at a
        // time must not read as a wipe to the trust check.
        const since = missingSince.get(path) ?? now;
        nextMissingSince.set(path, since);
        if (!readWrite || pushOnly) break;
        const due = deletionMode !== 'disabled' && now - since >= graceMs && deletesThisPass < cap;
        if (!due) {
          pendingDeletions.push(path);
          break;
        }
        deletesThisPass++;
        const mode = deletionMode === 'enabled' ? 'send' : 'log_only';
        if (mode === 'log_only') pendingDeletions.push(path);
        actions.push({ type: 'delete_remote', path, memoryId: r!.id, expectedRemoteSha: b!, mode });
        break;
      }

      case 'local_missing_remote_changed':
        // L gone, R != B: the store has news the agent never saw. Restore rather than delete it.
        pull(path, r!, undefined, 'restore');
        break;

      case 'both_missing':
        if (!pushOnly) actions.push({ type: 'forget', path });
        break;

      case 'remote_missing':
        // R gone, L = B: deleted in the store, untouched here. Follow the store.
        if (!pushOnly) actions.push({ type: 'delete_local', path, expectLocal: l! });
        break;

      case 'remote_missing_local_edited':
        // R gone, L != B: the file is now the only copy of this memory. Never drop it.
        if (readWrite) push(path, local!, 'recreate');
        else keep(path, local!, true);
        break;

      case 'new_local':
        // Written a moment ago: it may still be mid-write (a tool's temp file renamed in, an
        // append in progress). Left for the next pass; the final passes take it as it is.
        if (input.settleAfter !== null && local!.mtimeMs > input.settleAfter) {
          skipped.push({ path, reason: 'written less than a moment ago; left for the next pass' });
          break;
        }
        if (readWrite) push(path, local!, 'new_local');
        else keep(path, local!, false);
        break;

      case 'new_remote':
        pull(path, r!, undefined, 'new_remote');
        break;
    }
  }
  return { actions, missingSince: nextMissingSince, pendingDeletions, skipped };
}

/**
 * Settles writes whose outcome was unknown (`unavailable`): a memory that now holds exactly the
 * sha we sent is our write, so the baseline takes it, and it is not mistaken for a remote edit.
 * A memory holding anything else leaves the baseline as it was and the table decides.
 */
export function settleUnknownWrites(
  baseline: ReadonlyMap<string, string>,
  sent: ReadonlyMap<string, string>,
  remote: ReadonlyMap<string, RemoteEntry>,
): Map<string, string> {
  const settled = new Map(baseline);
  for (const [path, sha] of sent) {
    if (remote.get(path)?.sha === sha) settled.set(path, sha);
  }
  return settled;
}

function allPaths(...maps: ReadonlyMap<string, unknown>[]): string[] {
  const paths = new Set<string>();
  for (const map of maps) for (const path of map.keys()) paths.add(path);
  return [...paths].sort();
}

/** Why `path` (or a folder above it) could not be seen, or undefined. `/` blocks everything. */
function blockedReason(path: string, blocked: ReadonlyMap<string, string>): string | undefined {
  if (blocked.size === 0) return undefined;
  const own = blocked.get(path) ?? blocked.get('/');
  if (own) return own;
  for (const folder of ancestorPaths(path)) {
    const reason = blocked.get(folder);
    if (reason) return `${folder} ${reason}`;
  }
  return undefined;
}
