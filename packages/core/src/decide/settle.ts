import type { Outcome } from './outcome.js';
import type { Action, Plan, Transfer } from './plan.js';
import type { PathReasonCode } from '../model/reasons.js';
import type { StoreSyncReport } from '../model/reports.js';
import type { SyncState } from '../model/sync-state.js';
import { refusedUntilContentChanges } from './retry-policy.js';
import { isConflictResolution } from './conflict-rule.js';

/**
 * Settling a pass: a pure function from the state before it, its plan and what became of each
 * transfer, to the state after it and its report. The one place the baseline moves.
 *
 * Invariants (Unison's archive rule):
 * - a path's baseline moves only for a transfer `done` on it, or a baseline-only action (both
 *   sides already agree, or both are gone); a transfer skipped, failed or cut off leaves it as
 *   it was, so the next pass sees the same difference and decides again;
 * - every planned action appears in the report exactly where its outcome puts it;
 * - the input state is never changed: the maps returned are new.
 *
 * What to log and which `refused` events to emit come back as `notices`, for the caller to
 * send: settling itself does no I/O.
 */

/** The parts of the engine's state a pass moves. */
export type SettledState = Pick<SyncState, 'baseline' | 'missingSince' | 'absentFrom' | 'refused' | 'unknownWrites' | 'warned'>;

/** What one pass did, as the store report lists it. */
export type PassReport = Pick<
  StoreSyncReport,
  'pulled' | 'pushed' | 'deletedLocal' | 'deletedRemote' | 'renamed' | 'conflicts' | 'refused' | 'pendingDeletions' | 'skippedPaths' | 'errors' | 'cutOff'
>;

/**
 * A line to log (with `memory_store_id` added by the caller's logger), and optionally a `refused`
 * event (with the memory the content would have updated, when there is one).
 */
export interface Notice {
  level: 'debug' | 'info' | 'warn';
  message: string;
  fields: { path: string } & Record<string, unknown>;
  refused?: { code: PathReasonCode; reason: string; memoryId?: string };
}

export interface Settled {
  state: SettledState;
  report: PassReport;
  notices: Notice[];
}

const READ_ONLY_REASON = 'read-only store: local changes are never pushed';

export function emptyPassReport(): PassReport {
  return {
    pulled: [],
    pushed: [],
    deletedLocal: [],
    deletedRemote: [],
    renamed: [],
    conflicts: [],
    refused: [],
    pendingDeletions: [],
    skippedPaths: [],
    errors: [],
    cutOff: [],
  };
}

/**
 * Folds a pass into the state. `outcomes` are the executor's, one per transfer of `plan` (any
 * order: each names its action); baseline-only and report-only actions need none.
 */
/** The state a fold starts from: only read, and copied. */
export interface SettleFrom {
  readonly baseline: ReadonlyMap<string, string>;
  readonly refused: ReadonlyMap<string, string>;
  readonly unknownWrites: ReadonlyMap<string, string>;
  readonly warned: ReadonlySet<string>;
}

export function settle(before: SettleFrom, plan: Plan, outcomes: readonly Outcome[]): Settled {
  const state: SettledState = {
    baseline: new Map(before.baseline),
    missingSince: new Map(plan.missingSince),
    absentFrom: new Map(plan.absentFrom),
    refused: new Map(before.refused),
    unknownWrites: new Map(before.unknownWrites),
    warned: new Set(before.warned),
  };
  const report = emptyPassReport();
  report.pendingDeletions.push(...plan.pendingDeletions);
  report.skippedPaths.push(...plan.skipped);
  const notices: Notice[] = [];
  const warnOnce = (key: string, notice: Notice) => {
    if (state.warned.has(key)) return;
    state.warned.add(key);
    notices.push(notice);
  };

  for (const outcome of outcomes) settleTransfer(outcome, state, report, notices, warnOnce);
  for (const action of [...plan.baselineOnly, ...plan.reportOnly]) settleAction(action, state, report, notices, warnOnce);
  return { state, report, notices };
}

type WarnOnce = (key: string, notice: Notice) => void;

function settleTransfer(outcome: Outcome, state: SettledState, report: PassReport, notices: Notice[], warnOnce: WarnOnce): void {
  const { action, result } = outcome;
  const { path } = action;
  // A rename on disk done, then what was settled at the new path (after the move, as it ran).
  if (action.type === 'rename_local' && result.kind === 'done') {
    settleDone(action, result.sha, true, state, report, notices);
    const next = action.then;
    if (outcome.then) settleTransfer(outcome.then, state, report, notices, warnOnce);
    else if (next && next.type !== 'pull' && next.type !== 'update') settleAction(next, state, report, notices, warnOnce);
    return;
  }
  switch (result.kind) {
    case 'cut_off':
      report.cutOff.push(path);
      return;

    case 'skipped':
      report.skippedPaths.push({ path, code: result.code, reason: result.detail });
      if (result.code === 'absence_unconfirmed') {
        // The store still holds the memory one listing missed: that absence is refuted, the file kept.
        state.absentFrom.delete(path);
        notices.push({ level: 'info', message: 'kept: the memory was missing from the listing, but the store still holds it', fields: { path, detail: result.detail } });
      } else if (result.code === 'remote_too_large') {
        // A lasting condition: warned once per path and size, not every pass.
        warnOnce(`skip:${result.code}:${path}:${result.detail}`, { level: 'warn', message: 'remote memory over the size limit; not written to disk', fields: { path, detail: result.detail } });
      } else if (result.code === 'conflict_copy_failed' || result.code === 'conflict_loser_unread') {
        // Lasting while the disk refuses the copy (full, read-only): warned once per path and
        // local content; every pass tries again, and the report names it each time.
        const local = action.type === 'pull' ? action.expectLocal : null;
        warnOnce(`skip:${result.code}:${path}:${local}`, {
          level: 'warn',
          message:
            result.code === 'conflict_copy_failed'
              ? 'conflict not resolved: the conflict copy could not be written, so the local file is kept and the store version not pulled'
              : 'conflict not resolved: the local file is not read (too large, or hard-linked), so it cannot be handed over; it is kept and the store version not pulled',
          fields: { path, detail: result.detail },
        });
      } else {
        notices.push({ level: 'debug', message: result.detail, fields: { path } });
      }
      // The delete is still due: it stays pending until a marker check passes.
      if (result.code === 'marker_check_failed' && action.type === 'delete_remote' && action.mode === 'send') report.pendingDeletions.push(path);
      return;

    case 'failed': {
      const pushing = action.type === 'update' || action.type === 'create';
      if (pushing && refusedUntilContentChanges(result.error)) {
        // The store will refuse this content again: not sent again until it changes.
        const reason = `rejected by the store: ${result.message}`;
        state.refused.set(path, action.localSha);
        report.refused.push({ path, code: 'rejected', reason });
        const memoryId = action.type === 'update' ? { memoryId: action.memoryId } : {};
        notices.push({ level: 'warn', message: 'the store rejected this file; it is not sent again until it changes', fields: { path, error: result.message }, refused: { code: 'rejected', reason, ...memoryId } });
        return;
      }
      if (result.cutOff) report.cutOff.push(path);
      // Sent, outcome unknown (a lost answer, or a repeat that may have met this very write:
      // BoundedStoreClient reports both as unavailable): the next listing tells whether it landed
      // (settleUnknownWrites).
      if (pushing && result.error === 'unavailable') state.unknownWrites.set(path, action.localSha);
      // A rename of unknown outcome: a memory holding `sha` at the new path next pass is it.
      if (action.type === 'rename_remote' && result.error === 'unavailable') state.unknownWrites.set(path, action.sha);
      const operation = operationName(action);
      report.errors.push({ path, operation, kind: result.error, message: result.message });
      if (result.error === 'filesystem') {
        notices.push({ level: 'warn', message: `${operation} failed on disk`, fields: { path, error: result.message } });
      } else {
        const quiet = result.error === 'precondition_failed' || result.error === 'path_conflict';
        notices.push({ level: quiet ? 'info' : 'warn', message: `${operation} failed: ${result.error}`, fields: { path, error: result.message } });
      }
      return;
    }

    case 'done':
      if (result.already && result.sha !== undefined) {
        // Both sides already held this content: the baseline takes it, and nothing was pulled.
        state.baseline.set(path, result.sha);
        state.refused.delete(path);
        return;
      }
      settleDone(action, result.sha, result.sent !== false, state, report, notices);
      return;
  }
}

function settleDone(action: Transfer, sha: string | undefined, sent: boolean, state: SettledState, report: PassReport, notices: Notice[]): void {
  const { path } = action;
  switch (action.type) {
    case 'pull':
      // The sha written, which is the store's: the baseline is what both sides now hold.
      state.baseline.set(path, sha ?? action.remoteSha);
      state.refused.delete(path);
      report.pulled.push(path);
      if (isConflictResolution(action)) {
        report.conflicts.push(path);
        notices.push({ level: 'warn', message: 'conflict: the file and the memory both changed; the store wins and the local edit is replaced', fields: { path } });
      } else if (action.reason === 'restore') {
        notices.push({ level: 'warn', message: 'restored: the file was deleted locally but the memory changed in the store', fields: { path } });
      }
      return;

    case 'update':
    case 'create':
      state.baseline.set(path, action.localSha);
      state.unknownWrites.delete(path);
      state.refused.delete(path);
      report.pushed.push(path);
      return;

    case 'delete_local':
      state.baseline.delete(path);
      state.absentFrom.delete(path);
      report.deletedLocal.push(path);
      return;

    case 'rename_local':
      // The file moved (or was already there); the baseline's sha moves with it.
      state.baseline.delete(action.from);
      state.baseline.set(path, action.baseSha);
      state.refused.delete(action.from);
      report.renamed.push({ from: action.from, to: path, side: 'local' });
      notices.push({
        level: 'info',
        message: action.alreadyMoved ? 'renamed alike on disk and in the store' : 'renamed on disk: the memory was renamed in the store',
        fields: { path, from: action.from },
      });
      return;

    case 'rename_remote':
      state.baseline.delete(action.from);
      state.baseline.set(path, action.sha);
      state.missingSince.delete(action.from);
      state.unknownWrites.delete(path);
      state.refused.delete(path);
      report.renamed.push({ from: action.from, to: path, side: 'remote' });
      notices.push({ level: 'info', message: 'renamed in the store: the file was renamed locally', fields: { path, from: action.from } });
      return;

    case 'delete_remote':
      if (!sent) {
        // log_only: the checks passed; it stays pending (the planner listed it) and the baseline stays.
        notices.push({ level: 'info', message: 'log_only: would delete this memory in the store', fields: { path } });
        return;
      }
      state.baseline.delete(path);
      state.missingSince.delete(path);
      report.deletedRemote.push(path);
      notices.push({ level: 'info', message: 'deleted in the store: the file was deleted locally', fields: { path } });
      return;
    default:
      return unsettled(action);
  }
}

function settleAction(action: Exclude<Action, Transfer>, state: SettledState, report: PassReport, notices: Notice[], warnOnce: WarnOnce): void {
  const { path } = action;
  switch (action.type) {
    case 'adopt':
      state.baseline.set(path, action.sha);
      return;

    case 'forget':
      state.baseline.delete(path);
      return;

    case 'refuse':
      state.refused.set(path, action.localSha);
      report.refused.push({ path, code: action.code, reason: action.detail });
      if (action.firstTime) {
        const memoryId = action.memoryId !== undefined ? { memoryId: action.memoryId } : {};
        notices.push({ level: 'warn', message: `not pushed: file ${action.detail}`, fields: { path }, refused: { code: action.code, reason: action.detail, ...memoryId } });
      }
      return;

    case 'note_conflict':
      report.conflicts.push(path);
      notices.push({ level: 'warn', message: 'conflict: the file and the memory both changed; the store keeps its version and the local edit is not pushed', fields: { path } });
      return;

    case 'note_move':
      // Once per move: the pass that creates the new path takes it into the baseline, and a
      // pass that meets the move again (the create failed) says nothing new.
      warnOnce(`move:${action.from}:${path}:${action.sha}`, {
        level: 'info',
        message: 'log_only: would rename this memory in the store (the file was moved locally); created at the new path instead, the old memory is kept',
        fields: { path, from: action.from },
      });
      return;

    case 'keep_local':
      report.refused.push({ path, code: 'read_only', reason: READ_ONLY_REASON });
      if (action.warn) {
        warnOnce(`keep:${path}:${action.localSha}`, {
          level: 'warn',
          message: 'memory deleted in a read-only store; the local file is kept and never pushed',
          fields: { path },
          refused: { code: 'read_only', reason: READ_ONLY_REASON },
        });
      }
      return;
    default:
      return unsettled(action);
  }
}

/** An action kind added to the plan but not here fails to compile: every kind must say how it settles. */
function unsettled(action: never): never {
  throw new Error(`settle: no rule for ${(action as Action).type}`);
}

/** The report's name for a transfer: `push` for both kinds of push, as the report has always said. */
function operationName(action: Transfer): string {
  return action.type === 'update' || action.type === 'create' ? 'push' : action.type;
}
