import type { LocalFile } from '../local/scan.js';
import { judgeAbsence, MAX_ABSENCE_GETS, type AbsenceEvidence } from './absence.js';
import { ancestorPaths } from '../model/memory-path.js';
import { detectRenames } from './renames.js';
import type { PathReasonCode, Reason } from '../model/reasons.js';
import type { PathReport } from '../model/reports.js';
import type { Access, DeletionMode } from '../model/types.js';
import { flushedConflict, isConflictResolution, resolveConflict } from './conflict-rule.js';

/**
 * The planner: a pure function from what is known about one store to the actions that bring
 * the folder and the store together. No I/O, no clock of its own, no randomness: the same
 * input always gives the same plan, which is what lets every row of SPEC 4.2 be tested alone.
 */

/** A memory in the store's listing, by wire path. */
export interface RemoteEntry {
  id: string;
  sha: string;
  /** The version (`memver_…`) that holds `sha`, when the listing or feed said: only told to listeners. */
  versionId?: string;
  /**
   * The content, when the listing carried it (the download lists with content): a pull of it
   * then writes this instead of fetching the memory again. The executor still checks its sha.
   */
  content?: string;
}

export interface PlanInput {
  access: Access;
  deletionMode: DeletionMode;
  /** Clock (ms) of this pass. */
  now: number;
  /** How long a file must stay missing before its remote delete; 0 when waived (finalize). */
  graceMs: number;
  /** path -> sha both sides agreed on after the last successful transfer. */
  baseline: ReadonlyMap<string, string>;
  /**
   * path -> id of the memory each baseline entry was agreed with, so a memory the store renamed
   * is followed rather than re-downloaded. Absent or partial: those paths are
   * judged by the rows alone.
   */
  baselineIds?: ReadonlyMap<string, string>;
  localFiles: ReadonlyMap<string, LocalFile>;
  /** Wire paths the scan could not see into (symlinks, special files, unreadable folders). */
  localBlocked: ReadonlyMap<string, Reason<PathReasonCode>>;
  remote: ReadonlyMap<string, RemoteEntry>;
  /** path -> clock (ms) when the file was first seen missing while its memory was unchanged. */
  missingSince: ReadonlyMap<string, number>;
  /** path -> sha of local content already refused (by us or the server): not retried until it changes. */
  refused: ReadonlyMap<string, string>;
  /**
   * What corroborates that a memory missing from `remote` is gone from the store (absence.ts).
   * Absent: nothing does but the memory's id being nowhere in `remote`, so every `remote_missing`
   * path is confirmed with the store before its file is deleted.
   */
  absence?: AbsenceEvidence;
  /**
   * A new local file modified after this instant (host clock, ms) is left for the next pass;
   * `null` takes every file as it is (the final passes).
   */
  settleAfter: number | null;
  /**
   * The host clock (ms) when the pass planned, as `settleAfter` is on. A file modified after it is
   * dated in the future (the clock was set back since): its time says nothing, and it is taken as
   * settled rather than left waiting until the clock catches up. Absent: no such check.
   */
  hostNow?: number;
}

export type PullReason = 'remote_changed' | 'new_remote' | 'conflict' | 'restore';

/**
 * Actions come in three kinds, kept in three lists of the plan so that what needs I/O is
 * visible at a glance: transfers (the executor performs them and reports an outcome each),
 * baseline-only moves and report-only notes (both settled without any I/O). A new kind of
 * action (a `rename`) joins one union below; the exhaustive switches of `applyPlan` and
 * `settle` then name every place that must learn it.
 */

/** Fetch the memory (or take the `content` the listing carried) and write it, if the local file still is `expectLocal` (null: absent). */
export interface Pull {
  type: 'pull';
  path: string;
  memoryId: string;
  remoteSha: string;
  expectLocal: string | null;
  reason: PullReason;
  content?: string;
  /** The version that holds `remoteSha`, when known: the `pulled` event's, unless the pull fetches the memory. */
  versionId?: string;
}
/** Send the file as the new content of `memoryId`, guarded by `expectedRemoteSha` (the store's sha, which is the baseline's). */
export interface Update {
  type: 'update';
  path: string;
  localSha: string;
  memoryId: string;
  expectedRemoteSha: string;
}
/** Create a memory from the file: a new file, or the only copy of a memory deleted in the store (`recreate`). */
export interface Create {
  type: 'create';
  path: string;
  localSha: string;
  reason: 'new_local' | 'recreate';
}
/**
 * Remove the local file, if it still is `expectLocal`. `corroborate`: the memory was absent from
 * one listing only (absence.ts), so the executor first asks the store for it by id and deletes
 * only on `not_found`; a memory found (at this path or another) is learned and the file kept.
 */
export interface DeleteLocal {
  type: 'delete_local';
  path: string;
  expectLocal: string;
  corroborate?: { memoryId: string };
  /**
   * Without `corroborate`: the memory the store deleted, when the baseline's id for the path is
   * known (only told to listeners; with `corroborate`, its id is that one).
   */
  memoryId?: string;
}
/** Delete the memory, guarded by `expectedRemoteSha`, after a fresh re-check. `log_only`: log, never send. */
export interface DeleteRemote {
  type: 'delete_remote';
  path: string;
  memoryId: string;
  expectedRemoteSha: string;
  mode: 'send' | 'log_only';
}
/**
 * The store renamed this memory from `from` to `path`: the file moves on disk (if it still is
 * `expectLocal`), no content transferred; the baseline's `baseSha` moves with it. An edit made
 * on either side meanwhile is then settled at the new path by `then`, as the table would settle
 * it there (a local edit is an update of the same memory, by id), only once the move is done.
 */
export interface RenameLocal {
  type: 'rename_local';
  path: string;
  from: string;
  memoryId: string;
  expectLocal: string;
  baseSha: string;
  /** The version that holds the memory at `path`, when known: only told to listeners. */
  versionId?: string;
  /** The file is already at `path` (moved alike on both sides): only the baseline follows. */
  alreadyMoved?: true;
  then?: Pull | Update | Adopt | Refuse | KeepLocal;
}
/** The agent renamed `from` to `path` (same content `sha`): the memory's path is updated, guarded by `sha`. */
export interface RenameRemote {
  type: 'rename_remote';
  path: string;
  from: string;
  memoryId: string;
  sha: string;
}
export type Transfer = Pull | Update | Create | DeleteLocal | DeleteRemote | RenameLocal | RenameRemote;

/** Both sides already hold `sha`: record it, transfer nothing. */
export interface Adopt {
  type: 'adopt';
  path: string;
  sha: string;
}
/** Gone on both sides: drop from the baseline. */
export interface Forget {
  type: 'forget';
  path: string;
}
export type BaselineAction = Adopt | Forget;

/** Local content that must not be pushed, and why. `firstTime`: warn now; otherwise it was warned already. */
export interface Refuse {
  type: 'refuse';
  path: string;
  localSha: string;
  code: PathReasonCode;
  detail: string;
  firstTime: boolean;
  /** The memory the content would have updated, when there is one: only told to listeners. */
  memoryId?: string;
}
/** A read-only store's local change: kept on disk, never pushed. `warn` for the only copy of a memory. */
export interface KeepLocal {
  type: 'keep_local';
  path: string;
  localSha: string;
  warn: boolean;
}
/**
 * A conflict seen by a push-only flush: the store wins, but nothing may be pulled now. Reported,
 * never pushed; its loser is handed to `conflict` listeners (`handOverNotedConflicts`).
 * `storeSha`: the store's version, which wins.
 */
export interface NoteConflict {
  type: 'note_conflict';
  path: string;
  storeSha: string;
  /** The memory whose store version wins, and that version when known: only told to listeners. */
  memoryId?: string;
  versionId?: string;
}
/**
 * `log_only`: the agent moved a file (`from` -> `path`, same content) that `enabled` would send
 * as a rename. The rows create the memory at `path` and leave the old one; this is the log of the
 * rename it would have made, once per move.
 */
export interface NoteMove {
  type: 'note_move';
  path: string;
  from: string;
  sha: string;
}
export type ReportAction = Refuse | KeepLocal | NoteConflict | NoteMove;

export type Action = Transfer | BaselineAction | ReportAction;

export interface Plan {
  /** What needs I/O, in path order: the executor's work. */
  transfers: Transfer[];
  /** Baseline moves that need no I/O. */
  baselineOnly: BaselineAction[];
  /** Things to report (and warn about) that change nothing on either side. */
  reportOnly: ReportAction[];
  /** The candidate list after this pass: a file that reappeared has left it. */
  missingSince: Map<string, number>;
  /** Local deletions not sent this pass (grace, cap, `log_only`, `disabled`). */
  pendingDeletions: string[];
  /**
   * path -> serial of the first full listing its memory was missing from, for every path whose
   * absence is still unconfirmed after this plan (absence.ts): the next `absentFrom`.
   */
  absentFrom: Map<string, number>;
  /**
   * Paths left alone, with why: under a folder the scan could not see into, or written too
   * recently. (A path the scan itself blocked is reported by the scan, not repeated here.)
   */
  skipped: PathReport[];
}

/**
 * One plan of several made for disjoint sets of paths (a download plans each folder as its
 * listing arrives): every list joined, every map merged. Transfers keep their plans' order, not
 * path order: the executor schedules them its own way, and settling takes outcomes in any order.
 */
export function mergePlans(plans: readonly Plan[]): Plan {
  const merged: Plan = { transfers: [], baselineOnly: [], reportOnly: [], missingSince: new Map(), pendingDeletions: [], absentFrom: new Map(), skipped: [] };
  // Element by element: a plan of many thousands of transfers is too long for one push(...spread).
  for (const plan of plans) {
    for (const transfer of plan.transfers) merged.transfers.push(transfer);
    for (const action of plan.baselineOnly) merged.baselineOnly.push(action);
    for (const action of plan.reportOnly) merged.reportOnly.push(action);
    for (const [path, at] of plan.missingSince) merged.missingSince.set(path, at);
    for (const path of plan.pendingDeletions) merged.pendingDeletions.push(path);
    for (const [path, serial] of plan.absentFrom) merged.absentFrom.set(path, serial);
    for (const report of plan.skipped) merged.skipped.push(report);
  }
  return merged;
}

/** The rows of the reconcile table (docs/reconcile.md), in its order. B = baseline, L = local, R = remote sha. */
export type Row = Cell<unknown, unknown>['row'];

/**
 * A path's row, holding the sides that row has (and only those): the planner reads the local
 * file and the remote entry off the row itself, never off a lookup it must assert.
 */
export type Cell<L, R> =
  | { row: 'unchanged' } //                                      L = B = R
  | { row: 'local_changed'; local: L; remote: R } //             only L changed (R = B)
  | { row: 'remote_changed'; local: L; remote: R } //            only R changed (L = B)
  | { row: 'both_changed_same'; local: L; remote: R } //         both changed, L = R
  | { row: 'both_changed_differ'; local: L; remote: R } //       both changed, L != R
  | { row: 'local_missing'; baseline: string; remote: R } //     L missing, R = B
  | { row: 'local_missing_remote_changed'; remote: R } //        L missing, R changed
  | { row: 'both_missing' } //                                   L missing, R missing
  | { row: 'remote_missing'; local: L } //                       R missing, L = B
  | { row: 'remote_missing_local_edited'; local: L } //          R missing, L edited
  | { row: 'new_local'; local: L } //                            new local file
  | { row: 'new_remote'; remote: R }; //                         new remote memory

/**
 * Which row of the table a path is in. `undefined` means absent on that side. Rows 1-5 need L
 * and R present; a path with no baseline but the same content on both sides is row 4 (both
 * sides created it alike), with different content row 5.
 */
export function classify<L extends { sha: string }, R extends { sha: string }>(
  b: string | undefined,
  local: L | undefined,
  remote: R | undefined,
): Cell<L, R> {
  if (local !== undefined && remote !== undefined) {
    const l = local.sha;
    const r = remote.sha;
    if (l === b && r === b) return { row: 'unchanged' };
    if (r === b) return { row: 'local_changed', local, remote };
    if (l === b) return { row: 'remote_changed', local, remote };
    return { row: l === r ? 'both_changed_same' : 'both_changed_differ', local, remote };
  }
  if (b !== undefined && local === undefined) {
    if (remote === undefined) return { row: 'both_missing' };
    return remote.sha === b ? { row: 'local_missing', baseline: b, remote } : { row: 'local_missing_remote_changed', remote };
  }
  if (b !== undefined && local !== undefined) {
    return local.sha === b ? { row: 'remote_missing', local } : { row: 'remote_missing_local_edited', local };
  }
  // No baseline, one side only.
  if (local !== undefined) return { row: 'new_local', local };
  if (remote !== undefined) return { row: 'new_remote', remote };
  throw new Error('classify: a path absent everywhere has no row');
}

/** Remote deletes one pass may send: a quarter of the baseline, never fewer than 8 nor more than 50. */
export function deleteCap(baselineSize: number): number {
  return Math.min(50, Math.max(8, Math.floor(baselineSize / 4)));
}

export function planStore(input: PlanInput): Plan {
  const { access, deletionMode, now, graceMs, baseline, localFiles, remote, missingSince, refused } = input;
  const plan: Plan = { transfers: [], baselineOnly: [], reportOnly: [], missingSince: new Map(), pendingDeletions: [], absentFrom: new Map(), skipped: [] };
  const cap = deleteCap(baseline.size);
  let deletesThisPass = 0;
  const readWrite = access === 'read_write';

  // Pushing a path: the one place that decides whether content may go out.
  const push = (path: string, local: LocalFile, send: Update | Create): void => {
    const refusedBefore = refused.get(path) === local.sha;
    if (local.unpushable || refusedBefore) {
      const why = local.unpushable ?? { code: 'rejected' as const, detail: 'refused by the store' };
      plan.reportOnly.push({
        type: 'refuse',
        path,
        localSha: local.sha,
        code: why.code,
        detail: why.detail,
        firstTime: !refusedBefore,
        ...(send.type === 'update' && { memoryId: send.memoryId }),
      });
      return;
    }
    plan.transfers.push(send);
  };
  const pull = (path: string, r: RemoteEntry, expectLocal: string | null, reason: PullReason): void => {
    plan.transfers.push({
      type: 'pull',
      path,
      memoryId: r.id,
      remoteSha: r.sha,
      expectLocal,
      reason,
      ...(r.content !== undefined && { content: r.content }),
      ...(r.versionId !== undefined && { versionId: r.versionId }),
    });
  };
  // The content the read carried for what the store holds at `path`, when it holds `sha` there.
  const carriedAt = (path: string, sha: string): { content?: string; versionId?: string } => {
    const entry = remote.get(path);
    if (entry?.sha !== sha) return {};
    return { ...(entry.content !== undefined && { content: entry.content }), ...(entry.versionId !== undefined && { versionId: entry.versionId }) };
  };
  const keep = (path: string, local: LocalFile, warn: boolean): void => {
    plan.reportOnly.push({ type: 'keep_local', path, localSha: local.sha, warn });
  };

  // Renames first (renames.ts): the paths they claim are not judged again by the rows below.
  const renames = detectRenames({
    baseline,
    baselineIds: input.baselineIds ?? new Map(),
    localFiles,
    blocked: (path) => {
      const why = blockedReason(path, input.localBlocked);
      return why === undefined ? undefined : why === 'self' ? 'blocked' : why.detail;
    },
    remote,
    readWrite,
    refused,
  });
  const claimed = new Set<string>();
  const absence: AbsenceEvidence = input.absence ?? { gone: new Set(), held: new Set([...remote.values()].map((r) => r.id)), listing: 0, absentFrom: new Map() };
  /** `remote_missing` paths whose absence is not corroborated: decided together once the rows ran. */
  const unconfirmed: { path: string; expectLocal: string; memoryId: string | undefined }[] = [];
  /** `remote_missing` paths a second listing missed too, with an id to ask the store about. */
  const secondListing: { path: string; expectLocal: string; memoryId: string }[] = [];
  for (const r of renames.remote) {
    claimed.add(r.from).add(r.to);
    const local = localFiles.get(r.alreadyMoved ? r.to : r.from)!;
    const target: RemoteEntry = { id: r.memoryId, sha: r.remoteSha };
    // The row the new path is in once the file is there: B moves with the file.
    const cell = classify(r.baseSha, local, target);
    let then: RenameLocal['then'];
    switch (cell.row) {
      case 'local_changed': {
        if (!readWrite) {
          then = { type: 'keep_local', path: r.to, localSha: local.sha, warn: false };
          break;
        }
        // Refused content stays refused under its new name (the record is kept by the old one).
        const refusedBefore = refused.get(r.from) === local.sha || refused.get(r.to) === local.sha;
        if (local.unpushable || refusedBefore) {
          const why = local.unpushable ?? { code: 'rejected' as const, detail: 'refused by the store' };
          then = { type: 'refuse', path: r.to, localSha: local.sha, code: why.code, detail: why.detail, firstTime: !refusedBefore, memoryId: r.memoryId };
        } else then = { type: 'update', path: r.to, localSha: local.sha, memoryId: r.memoryId, expectedRemoteSha: r.remoteSha };
        break;
      }
      case 'remote_changed':
        then = { type: 'pull', path: r.to, memoryId: r.memoryId, remoteSha: r.remoteSha, expectLocal: local.sha, reason: 'remote_changed', ...carriedAt(r.to, r.remoteSha) };
        break;
      case 'both_changed_same':
        then = { type: 'adopt', path: r.to, sha: local.sha };
        break;
      case 'both_changed_differ':
        then = resolveConflict({ path: r.to, memoryId: r.memoryId, remoteSha: r.remoteSha, localSha: local.sha, ...carriedAt(r.to, r.remoteSha) });
        break;
      default:
        break;
    }
    const versionId = remote.get(r.to)?.id === r.memoryId ? remote.get(r.to)?.versionId : undefined;
    plan.transfers.push({
      type: 'rename_local',
      path: r.to,
      from: r.from,
      memoryId: r.memoryId,
      expectLocal: local.sha,
      baseSha: r.baseSha,
      ...(versionId !== undefined && { versionId }),
      ...(r.alreadyMoved && { alreadyMoved: true as const }),
      ...(then && { then }),
    });
  }
  for (const r of renames.ontoNewFile) {
    // Both files are kept: the agent's new file goes to the memory at its name (guarded by the
    // sha it holds, so a remote edit made meanwhile still wins), and the file at the old name,
    // when no memory holds it any more, is created again there (SPEC 6.6: doubt keeps data).
    claimed.add(r.to);
    if (r.recreateFrom) claimed.add(r.from);
    const atTo = localFiles.get(r.to)!;
    const atFrom = localFiles.get(r.from)!;
    if (stillSettling(atTo, input)) {
      plan.skipped.push({ path: r.to, code: 'settling', reason: settlingReason(atTo.mtimeMs, input.settleAfter!) });
      continue;
    }
    push(r.to, atTo, { type: 'update', path: r.to, localSha: atTo.sha, memoryId: r.memoryId, expectedRemoteSha: r.remoteSha });
    if (r.recreateFrom) push(r.from, atFrom, { type: 'create', path: r.from, localSha: atFrom.sha, reason: 'recreate' });
  }
  // A rename makes the old path leave the store: only with deletions on (SPEC 6.6). Otherwise
  // the rows judge both paths: the old one is a deletion candidate never sent (pending, or
  // logged), the new one a new file, created; `log_only` also says which rename it would send.
  for (const r of renames.local) {
    if (deletionMode !== 'enabled') {
      if (deletionMode === 'log_only') plan.reportOnly.push({ type: 'note_move', path: r.to, from: r.from, sha: r.sha });
      continue;
    }
    claimed.add(r.from).add(r.to);
    plan.transfers.push({ type: 'rename_remote', path: r.to, from: r.from, memoryId: r.memoryId, sha: r.sha });
  }

  for (const path of pathsToJudge(baseline, localFiles, remote, input.localBlocked)) {
    if (claimed.has(path)) continue;
    const blocked = blockedReason(path, input.localBlocked);
    if (blocked) {
      // The scan could not see this path: absent is not known to mean deleted. Hands off.
      if (blocked !== 'self') plan.skipped.push({ path, code: blocked.code, reason: blocked.detail });
      continue;
    }
    const cell = classify(baseline.get(path), localFiles.get(path), remote.get(path));
    switch (cell.row) {
      case 'unchanged':
        break;

      case 'local_changed':
        // L != B = R: the agent edited; the store still holds what we last agreed on.
        if (readWrite) push(path, cell.local, { type: 'update', path, localSha: cell.local.sha, memoryId: cell.remote.id, expectedRemoteSha: cell.remote.sha });
        else keep(path, cell.local, false);
        break;

      case 'remote_changed':
        // L = B != R: another writer edited; the file is as we left it.
        pull(path, cell.remote, cell.local.sha, 'remote_changed');
        break;

      case 'both_changed_same':
        // L = R != B: both sides reached the same content; only the baseline is behind.
        plan.baselineOnly.push({ type: 'adopt', path, sha: cell.local.sha });
        break;

      case 'both_changed_differ':
        // L != R, both != B: a real conflict (conflict-rule.ts).
        plan.transfers.push(
          resolveConflict({
            path,
            memoryId: cell.remote.id,
            remoteSha: cell.remote.sha,
            localSha: cell.local.sha,
            ...(cell.remote.content !== undefined && { content: cell.remote.content }),
            ...(cell.remote.versionId !== undefined && { versionId: cell.remote.versionId }),
          }),
        );
        break;

      case 'local_missing': {
        // L gone, R = B: the agent deleted the file. Candidate for a remote delete (SPEC 4.3).
        // Tracked for read-only stores too (never deleted there): a folder emptied one file at a
        // time must not read as a wipe to the trust check.
        const since = missingSince.get(path) ?? now;
        plan.missingSince.set(path, since);
        if (!readWrite) break;
        const due = deletionMode !== 'disabled' && now - since >= graceMs && deletesThisPass < cap;
        if (!due) {
          plan.pendingDeletions.push(path);
          break;
        }
        deletesThisPass++;
        const mode = deletionMode === 'enabled' ? 'send' : 'log_only';
        if (mode === 'log_only') plan.pendingDeletions.push(path);
        plan.transfers.push({ type: 'delete_remote', path, memoryId: cell.remote.id, expectedRemoteSha: cell.baseline, mode });
        break;
      }

      case 'local_missing_remote_changed':
        // L gone, R != B: the store has news the agent never saw. Restore rather than delete it.
        pull(path, cell.remote, null, 'restore');
        break;

      case 'both_missing': {
        // L gone, R gone: agreed gone, once the store's side is corroborated (absence.ts). A
        // listing that missed the memory would otherwise take the agent's deletion for agreed:
        // the memory would stay in the store, come back at the next listing (the deletion undone),
        // and meet a file the agent writes there meanwhile as "both created" (a false conflict).
        // Until then the baseline stays and the file counts as missing, as a deletion candidate's.
        const memoryId = input.baselineIds?.get(path);
        const verdict = judgeAbsence(path, memoryId, absence);
        if (verdict.kind === 'corroborated') plan.baselineOnly.push({ type: 'forget', path });
        else {
          plan.absentFrom.set(path, verdict.firstListing);
          plan.missingSince.set(path, missingSince.get(path) ?? now);
        }
        break;
      }

      case 'remote_missing': {
        // R gone, L = B: deleted in the store, untouched here. Follow the store, once the absence
        // is corroborated (absence.ts): a listing can miss a memory that is still there.
        const memoryId = input.baselineIds?.get(path);
        const verdict = judgeAbsence(path, memoryId, absence);
        if (verdict.kind === 'corroborated' && verdict.by === 'second_listing' && memoryId !== undefined) secondListing.push({ path, expectLocal: cell.local.sha, memoryId });
        else if (verdict.kind === 'corroborated') plan.transfers.push({ type: 'delete_local', path, expectLocal: cell.local.sha, ...(memoryId !== undefined && { memoryId }) });
        else {
          plan.absentFrom.set(path, verdict.firstListing);
          unconfirmed.push({ path, expectLocal: cell.local.sha, memoryId });
        }
        break;
      }

      case 'remote_missing_local_edited':
        // R gone, L != B: the file is now the only copy of this memory. Never drop it.
        if (readWrite) push(path, cell.local, { type: 'create', path, localSha: cell.local.sha, reason: 'recreate' });
        else keep(path, cell.local, true);
        break;

      case 'new_local':
        // Written a moment ago: it may still be mid-write (a tool's temp file renamed in, an
        // append in progress). Left for the next pass; the final passes take it as it is.
        if (stillSettling(cell.local, input)) {
          plan.skipped.push({ path, code: 'settling', reason: settlingReason(cell.local.mtimeMs, input.settleAfter!) });
          break;
        }
        if (readWrite) push(path, cell.local, { type: 'create', path, localSha: cell.local.sha, reason: 'new_local' });
        else keep(path, cell.local, false);
        break;

      case 'new_remote':
        pull(path, cell.remote, null, 'new_remote');
        break;
    }
  }

  // Unconfirmed absences: each asked about by id just before its delete, while they are few;
  // many at once (more likely one short listing than many deletions), or one with no id to ask
  // about, wait for the next full listing. Either way the file stays until the store confirms.
  const ask = unconfirmed.length <= MAX_ABSENCE_GETS;
  for (const { path, expectLocal, memoryId } of unconfirmed) {
    if (ask && memoryId !== undefined) plan.transfers.push({ type: 'delete_local', path, expectLocal, corroborate: { memoryId } });
    else {
      const why = memoryId === undefined ? 'no memory id is recorded for it' : `${unconfirmed.length} memories were missing at once`;
      plan.skipped.push({ path, code: 'absence_unconfirmed', reason: `missing from one listing only (${why}); kept until a second listing confirms the deletion` });
    }
  }
  // Missing from a second listing too: while the gets fit (those asked above counted), each is
  // still asked about by id before its delete, since two listings can both miss a memory while
  // other writers act (B47); many at once are taken as the deletions two listings say they are.
  const askSecond = (ask ? unconfirmed.length : 0) + secondListing.length <= MAX_ABSENCE_GETS;
  for (const { path, expectLocal, memoryId } of secondListing) {
    plan.transfers.push({ type: 'delete_local', path, expectLocal, memoryId, ...(askSecond && { corroborate: { memoryId } }) });
  }
  return plan;
}

/**
 * The push-only view of a plan (finalize's flush, crash recovery): its pushes and refusals,
 * nothing else. No pulls, no deletes, no baseline moves; a conflict, which the full plan
 * settles with a pull, is only noted (the store wins it, and the local edit is not sent; the
 * executor hands its loser over, `handOverNotedConflicts`). The
 * deletion candidates are kept as they are, and none is pending: a flush never deletes.
 */
export function pushOnlyView(plan: Plan): Plan {
  const transfers: Transfer[] = [];
  const reportOnly: ReportAction[] = plan.reportOnly.filter((a) => a.type === 'refuse' || a.type === 'note_move');
  for (const t of plan.transfers) {
    if (t.type === 'update' || t.type === 'create' || t.type === 'rename_remote') transfers.push(t);
    else if (isConflictResolution(t)) reportOnly.push(flushedConflict(t));
    else if (t.type === 'rename_local') {
      // Nothing moves on disk: the edit still goes to the memory where it now is, read from
      // where the file is (its old path, unless it was already moved).
      const where = t.alreadyMoved ? t.path : t.from;
      const then = t.then;
      if (then?.type === 'update') transfers.push({ ...then, path: where });
      else if (then?.type === 'refuse') reportOnly.push({ ...then, path: where });
      else if (then && isConflictResolution(then)) reportOnly.push(flushedConflict(then, where));
    }
  }
  // A flush never deletes, so an absence waiting for confirmation is not its news.
  const skipped = plan.skipped.filter((s) => s.code !== 'absence_unconfirmed');
  return { transfers, baselineOnly: [], reportOnly, missingSince: plan.missingSince, pendingDeletions: [], absentFrom: plan.absentFrom, skipped };
}

/** Every action of a plan, in one list (transfers first). */
export function planActions(plan: Plan): Action[] {
  return [...plan.transfers, ...plan.baselineOnly, ...plan.reportOnly];
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

/**
 * The writes of unknown outcome that stay unknown after this read: the store shows their path
 * as it was before the write (absent, or at the baseline's sha), so the write may still land —
 * a request that timed out can reach the store after the next read, and a change feed may show
 * a version late. Kept, so that when it does land it is recognised as ours rather than taken for
 * a remote edit (which would win over the agent's later edits as a "conflict"). A write the
 * store shows, or that something else replaced, is settled: `settleUnknownWrites` decides.
 */
export function stillUnknownWrites(
  baseline: ReadonlyMap<string, string>,
  sent: ReadonlyMap<string, string>,
  remote: ReadonlyMap<string, RemoteEntry>,
): Map<string, string> {
  const unknown = new Map<string, string>();
  for (const [path, sha] of sent) {
    const there = remote.get(path)?.sha;
    if (there === undefined || (there === baseline.get(path) && there !== sha)) unknown.set(path, sha);
  }
  return unknown;
}

/**
 * A new local file written after `settleAfter` may still be mid-write: left for the next pass.
 * One dated after `hostNow` (the host clock was set back since) says nothing by its time, and
 * is taken as settled rather than left waiting until the clock catches up.
 */
function stillSettling(local: LocalFile, input: Pick<PlanInput, 'settleAfter' | 'hostNow'>): boolean {
  if (input.settleAfter === null || local.mtimeMs <= input.settleAfter) return false;
  return !(input.hostNow !== undefined && local.mtimeMs > input.hostNow);
}

/**
 * Every path of the three sides, in order, less those the rows would leave alone anyway: a path
 * whose file and memory both still hold the baseline's sha, where the scan blocked nothing
 * (`unchanged`, and no folder above it blocked). What an idle pass of a large store judges is
 * then nothing, and sorting it costs nothing either.
 */
function pathsToJudge(
  baseline: ReadonlyMap<string, string>,
  localFiles: ReadonlyMap<string, { sha: string }>,
  remote: ReadonlyMap<string, { sha: string }>,
  blocked: ReadonlyMap<string, unknown>,
): string[] {
  const paths = new Set<string>();
  for (const [path, sha] of baseline) {
    if (blocked.size === 0 && localFiles.get(path)?.sha === sha && remote.get(path)?.sha === sha) continue;
    paths.add(path);
  }
  for (const path of localFiles.keys()) if (!baseline.has(path)) paths.add(path);
  for (const path of remote.keys()) if (!baseline.has(path)) paths.add(path);
  return [...paths].sort();
}

/**
 * Why `path` could not be seen: `self` when the scan blocked the path itself (and reports it),
 * the folder's reason when a folder above it was blocked, or undefined. `/` blocks everything.
 */
export function blockedReason(path: string, blocked: ReadonlyMap<string, Reason<PathReasonCode>>): Reason<PathReasonCode> | 'self' | undefined {
  if (blocked.size === 0) return undefined;
  if (blocked.has(path)) return 'self';
  const root = blocked.get('/');
  if (root) return root;
  for (const folder of ancestorPaths(path)) {
    const reason = blocked.get(folder);
    if (reason) return { code: reason.code, detail: `${folder} ${reason.detail}` };
  }
  return undefined;
}

/**
 * Why a new file waits: it names the option that holds it and both instants, so an operator can
 * tell a file still being written from a clock that runs behind the disk's.
 */
function settlingReason(mtimeMs: number, settleAfter: number): string {
  return (
    `new file modified within newFileSettle (at ${new Date(mtimeMs).toISOString()}; this pass takes new files ` +
    `modified by ${new Date(settleAfter).toISOString()}); left for the next pass`
  );
}
