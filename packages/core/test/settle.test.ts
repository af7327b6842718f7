import { describe, expect, it } from 'vitest';
import type { Outcome, Result } from '../src/decide/outcome.js';
import type { Action, Plan, Transfer } from '../src/decide/plan.js';
import { settle, type SettledState } from '../src/decide/settle.js';

// One path, '/n.md', in every row, as in plan.test.ts. Shas are short names: B is the
// baseline, L a local edit, R a remote edit.
const P = '/n.md';
const ID = 'mem_1';

function state(over: Partial<SettledState> = {}): SettledState {
  return {
    baseline: new Map([[P, 'B']]),
    missingSince: new Map(),
    absentFrom: new Map(),
    refused: new Map(),
    unknownWrites: new Map(),
    warned: new Set(),
    ...over,
  };
}

function plan(actions: Action[], over: Partial<Plan> = {}): Plan {
  const transfers = actions.filter((a): a is Transfer => ['pull', 'update', 'create', 'delete_local', 'delete_remote'].includes(a.type));
  return {
    transfers,
    baselineOnly: actions.filter((a) => a.type === 'adopt' || a.type === 'forget') as Plan['baselineOnly'],
    reportOnly: actions.filter((a) => a.type === 'refuse' || a.type === 'keep_local' || a.type === 'note_conflict') as Plan['reportOnly'],
    missingSince: new Map(),
    pendingDeletions: [],
    absentFrom: new Map(),
    skipped: [],
    ...over,
  };
}

/** Settles one transfer that ended in `result`, from `before`. */
function one(action: Transfer, result: Result, before = state()) {
  const outcome: Outcome = { action, result, learned: [] };
  return settle(before, plan([action]), [outcome]);
}

const pull = (reason: 'remote_changed' | 'new_remote' | 'conflict' | 'restore' = 'remote_changed'): Transfer => ({
  type: 'pull',
  path: P,
  memoryId: ID,
  remoteSha: 'R',
  expectLocal: reason === 'new_remote' || reason === 'restore' ? null : 'B',
  reason,
});
const update: Transfer = { type: 'update', path: P, localSha: 'L', memoryId: ID, expectedRemoteSha: 'B' };
const create: Transfer = { type: 'create', path: P, localSha: 'L', reason: 'new_local' };
const deleteLocal: Transfer = { type: 'delete_local', path: P, expectLocal: 'B' };
const deleteRemote = (mode: 'send' | 'log_only' = 'send'): Transfer => ({ type: 'delete_remote', path: P, memoryId: ID, expectedRemoteSha: 'B', mode });

const done = (sha?: string): Result => (sha === undefined ? { kind: 'done' } : { kind: 'done', sha });
const failed = (error: Extract<Result, { kind: 'failed' }>['error'], cutOff = false): Result => ({ kind: 'failed', error, message: `injected ${error}`, cutOff });

describe('settle: a transfer done moves its path, and only then', () => {
  it('pull done: the baseline takes the sha written; a refusal of the old content is dropped', () => {
    const { state: after, report } = one(pull(), done('R'), state({ refused: new Map([[P, 'X']]) }));
    expect(after.baseline.get(P)).toBe('R');
    expect(after.refused.has(P)).toBe(false);
    expect(report.pulled).toEqual([P]);
    expect(report.conflicts).toEqual([]);
  });

  it('pull that found the file already holding the store content: the baseline takes it, nothing is reported pulled, no conflict', () => {
    const { state: after, report, notices } = one(pull('conflict'), { kind: 'done', sha: 'R', already: true }, state({ refused: new Map([[P, 'X']]) }));
    expect(after.baseline.get(P)).toBe('R');
    expect(after.refused.has(P)).toBe(false);
    expect(report.pulled).toEqual([]);
    expect(report.conflicts).toEqual([]);
    expect(notices).toEqual([]);
  });

  it('pull done for a conflict: pulled and reported as a conflict, with a warning', () => {
    const { report, notices } = one(pull('conflict'), done('R'));
    expect(report.pulled).toEqual([P]);
    expect(report.conflicts).toEqual([P]);
    expect(notices).toMatchObject([{ level: 'warn', message: expect.stringMatching(/store wins/) }]);
  });

  it('pull done for a restore: a warning says the local delete was undone', () => {
    expect(one(pull('restore'), done('R')).notices).toMatchObject([{ level: 'warn', message: expect.stringMatching(/restored/) }]);
  });

  it.each([
    ['update', update],
    ['create', create],
  ] as const)('%s done: the baseline takes the sha sent; an unknown write and a refusal are settled', (_kind, action) => {
    const before = state({ unknownWrites: new Map([[P, 'L']]), refused: new Map([[P, 'X']]) });
    const { state: after, report } = one(action, done('L'), before);
    expect(after.baseline.get(P)).toBe('L');
    expect(after.unknownWrites.has(P)).toBe(false);
    expect(after.refused.has(P)).toBe(false);
    expect(report.pushed).toEqual([P]);
  });

  it('delete_local done: out of the baseline, reported', () => {
    const { state: after, report } = one(deleteLocal, done());
    expect(after.baseline.has(P)).toBe(false);
    expect(report.deletedLocal).toEqual([P]);
  });

  it('delete_remote done: out of the baseline and the candidate list, reported', () => {
    const p = plan([deleteRemote()], { missingSince: new Map([[P, 5]]) });
    const { state: after, report } = settle(state(), p, [{ action: deleteRemote(), result: done(), learned: [] }]);
    expect(after.baseline.has(P)).toBe(false);
    expect(after.missingSince.has(P)).toBe(false);
    expect(report.deletedRemote).toEqual([P]);
  });

  it('delete_remote log_only (checks passed, nothing sent): baseline and candidate kept, logged', () => {
    const action = deleteRemote('log_only');
    const p = plan([action], { missingSince: new Map([[P, 5]]), pendingDeletions: [P] });
    const { state: after, report, notices } = settle(state(), p, [{ action, result: { kind: 'done', sent: false }, learned: [] }]);
    expect(after.baseline.get(P)).toBe('B');
    expect(after.missingSince.get(P)).toBe(5);
    expect(report.deletedRemote).toEqual([]);
    expect(report.pendingDeletions).toEqual([P]);
    expect(notices).toMatchObject([{ level: 'info', message: expect.stringMatching(/log_only/) }]);
  });
});

describe('settle: a delete_local that asked the store first (an absence from one listing)', () => {
  const asked: Transfer = { type: 'delete_local', path: P, expectLocal: 'B', corroborate: { memoryId: ID } };
  const unconfirmed = plan([asked], { absentFrom: new Map([[P, 3]]) });
  const settleAs = (result: Result) => settle(state(), unconfirmed, [{ action: asked, result, learned: [] }]);

  it('the store confirmed (done): out of the baseline, and the absence settled', () => {
    const { state: after, report } = settleAs(done());
    expect(after.baseline.has(P)).toBe(false);
    expect(after.absentFrom.size).toBe(0);
    expect(report.deletedLocal).toEqual([P]);
  });

  it('the store still holds it: the baseline and the file kept, the absence refuted, said at info level', () => {
    const { state: after, report, notices } = settleAs({ kind: 'skipped', code: 'absence_unconfirmed', detail: 'the store still holds it' });
    expect(after.baseline).toEqual(new Map([[P, 'B']]));
    expect(after.absentFrom.size).toBe(0);
    expect(report.deletedLocal).toEqual([]);
    expect(report.skippedPaths).toEqual([{ path: P, code: 'absence_unconfirmed', reason: 'the store still holds it' }]);
    expect(notices).toMatchObject([{ level: 'info', fields: { path: P } }]);
  });

  it('the get failed: the baseline kept, the absence still unconfirmed (the next pass lists to settle it)', () => {
    const { state: after, report } = settleAs(failed('unavailable'));
    expect(after.baseline).toEqual(new Map([[P, 'B']]));
    expect(after.absentFrom).toEqual(new Map([[P, 3]]));
    expect(report.errors).toMatchObject([{ path: P, operation: 'delete_local', kind: 'unavailable' }]);
  });
});

describe('settle: a transfer not done leaves its path as it was', () => {
  const transfers: [string, Transfer][] = [
    ['pull', pull()],
    ['update', update],
    ['create', create],
    ['delete_local', deleteLocal],
    ['delete_remote', deleteRemote()],
  ];

  it.each(transfers)('%s skipped: baseline kept, reported with its code', (_kind, action) => {
    const { state: after, report } = one(action, { kind: 'skipped', code: 'changed_during_sync', detail: 'changed on disk' });
    expect(after.baseline).toEqual(new Map([[P, 'B']]));
    expect(report.skippedPaths).toEqual([{ path: P, code: 'changed_during_sync', reason: 'changed on disk' }]);
    expect(report.errors).toEqual([]);
  });

  it.each(transfers)('%s failed: baseline kept, the error reported under its operation', (_kind, action) => {
    const { state: after, report } = one(action, failed('precondition_failed'));
    expect(after.baseline).toEqual(new Map([[P, 'B']]));
    const operation = action.type === 'update' || action.type === 'create' ? 'push' : action.type;
    expect(report.errors).toEqual([{ path: P, operation, kind: 'precondition_failed', message: 'injected precondition_failed' }]);
    expect(report.cutOff).toEqual([]);
  });

  it.each(transfers)('%s cut off: baseline kept, listed as cut off', (_kind, action) => {
    const { state: after, report } = one(action, { kind: 'cut_off' });
    expect(after.baseline).toEqual(new Map([[P, 'B']]));
    expect(report.cutOff).toEqual([P]);
    expect(report.errors).toEqual([]);
  });

  it('failed as the time bound ran out: both an error and cut off', () => {
    const { report } = one(pull(), failed('unavailable', true));
    expect(report.cutOff).toEqual([P]);
    expect(report.errors).toMatchObject([{ kind: 'unavailable' }]);
  });

  it('a precondition or path conflict is logged quietly (info); other store errors and the disk warn', () => {
    expect(one(update, failed('precondition_failed')).notices).toMatchObject([{ level: 'info' }]);
    expect(one(update, failed('path_conflict')).notices).toMatchObject([{ level: 'info' }]);
    expect(one(update, failed('unauthorized')).notices).toMatchObject([{ level: 'warn', message: 'push failed: unauthorized' }]);
    expect(one(pull(), failed('filesystem')).notices).toMatchObject([{ level: 'warn', message: 'pull failed on disk' }]);
  });

  it.each([
    ['update', update],
    ['create', create],
  ] as const)('%s unavailable: the write may have landed; remembered as an unknown write', (_kind, action) => {
    const { state: after, report } = one(action, failed('unavailable'));
    expect(after.unknownWrites.get(P)).toBe('L');
    expect(after.baseline.get(P)).toBe('B');
    expect(report.errors).toMatchObject([{ operation: 'push', kind: 'unavailable' }]);
  });

  it('a pull that failed unavailable is no unknown write (nothing was sent)', () => {
    expect(one(pull(), failed('unavailable')).state.unknownWrites.size).toBe(0);
  });

  it.each([
    ['update', update],
    ['create', create],
  ] as const)('%s rejected: refused for this content, reported as refused (not an error), with a refused event', (_kind, action) => {
    const { state: after, report, notices } = one(action, failed('rejected', true));
    expect(after.refused.get(P)).toBe('L');
    expect(report.refused).toEqual([{ path: P, code: 'rejected', reason: 'rejected by the store: injected rejected' }]);
    expect(report.errors).toEqual([]);
    expect(report.cutOff).toEqual([]);
    expect(notices).toMatchObject([{ level: 'warn', refused: { code: 'rejected' } }]);
  });

  it('a remote memory over the limit is skipped and warned once per size, across passes', () => {
    const tooLarge: Result = { kind: 'skipped', code: 'remote_too_large', detail: 'remote memory is 200000 bytes' };
    const first = one(pull(), tooLarge);
    expect(first.report.skippedPaths).toMatchObject([{ path: P, code: 'remote_too_large' }]);
    expect(first.notices).toMatchObject([{ level: 'warn' }]);
    const again = one(pull(), tooLarge, state({ warned: first.state.warned }));
    expect(again.report.skippedPaths).toMatchObject([{ path: P, code: 'remote_too_large' }]);
    expect(again.notices).toEqual([]);
  });

  it('a conflict whose copy could not be written: baseline kept, not a conflict, warned once per path and content', () => {
    const copyFailed: Result = { kind: 'skipped', code: 'conflict_copy_failed', detail: 'the conflict copy could not be written (ENOSPC)' };
    const first = one(pull('conflict'), copyFailed);
    expect(first.state.baseline.get(P)).toBe('B');
    expect(first.report.conflicts).toEqual([]);
    expect(first.report.pulled).toEqual([]);
    expect(first.report.skippedPaths).toMatchObject([{ path: P, code: 'conflict_copy_failed' }]);
    expect(first.notices).toMatchObject([{ level: 'warn', fields: { path: P } }]);
    const again = one(pull('conflict'), copyFailed, state({ warned: first.state.warned }));
    expect(again.report.skippedPaths).toMatchObject([{ path: P, code: 'conflict_copy_failed' }]);
    expect(again.notices).toEqual([]);
  });

  it('a remote delete held back by the marker check stays pending; a log_only one is pending already', () => {
    const markerFailed: Result = { kind: 'skipped', code: 'marker_check_failed', detail: 'store marker failed its check' };
    expect(one(deleteRemote('send'), markerFailed).report.pendingDeletions).toEqual([P]);
    const logOnly = deleteRemote('log_only');
    const settled = settle(state(), plan([logOnly], { pendingDeletions: [P] }), [{ action: logOnly, result: markerFailed, learned: [] }]);
    expect(settled.report.pendingDeletions).toEqual([P]);
  });
});

describe('settle: baseline-only and report-only actions', () => {
  it('adopt: the baseline takes the sha both sides hold', () => {
    expect(settle(state(), plan([{ type: 'adopt', path: P, sha: 'X' }]), []).state.baseline.get(P)).toBe('X');
  });

  it('forget: out of the baseline', () => {
    expect(settle(state(), plan([{ type: 'forget', path: P }]), []).state.baseline.has(P)).toBe(false);
  });

  it('refuse: remembered, reported with its code; warned (with a refused event) the first time only', () => {
    const refuse = (firstTime: boolean): Action => ({ type: 'refuse', path: P, localSha: 'L', code: 'not_utf8', detail: 'is not UTF-8 text', firstTime });
    const first = settle(state(), plan([refuse(true)]), []);
    expect(first.state.refused.get(P)).toBe('L');
    expect(first.report.refused).toEqual([{ path: P, code: 'not_utf8', reason: 'is not UTF-8 text' }]);
    expect(first.notices).toMatchObject([{ level: 'warn', refused: { code: 'not_utf8', reason: 'is not UTF-8 text' } }]);
    const again = settle(first.state, plan([refuse(false)]), []);
    expect(again.report.refused).toHaveLength(1);
    expect(again.notices).toEqual([]);
  });

  it('note_conflict: reported as a conflict, baseline kept', () => {
    const settled = settle(state(), plan([{ type: 'note_conflict', path: P, storeSha: 'R' }]), []);
    expect(settled.report.conflicts).toEqual([P]);
    expect(settled.state.baseline.get(P)).toBe('B');
  });

  it('keep_local: reported as read_only every pass; the only copy of a memory warned once per content', () => {
    const keep = (warn: boolean, localSha = 'L'): Action => ({ type: 'keep_local', path: P, localSha, warn });
    const quiet = settle(state(), plan([keep(false)]), []);
    expect(quiet.report.refused).toEqual([{ path: P, code: 'read_only', reason: expect.stringMatching(/read-only/) }]);
    expect(quiet.notices).toEqual([]);
    const first = settle(state(), plan([keep(true)]), []);
    expect(first.notices).toMatchObject([{ level: 'warn', refused: { code: 'read_only' } }]);
    expect(settle(first.state, plan([keep(true)]), []).notices).toEqual([]);
    expect(settle(first.state, plan([keep(true, 'L2')]), []).notices).toHaveLength(1);
  });
});

describe('settle: the plan as a whole', () => {
  it('the candidate list, pending deletions and skipped paths come from the plan', () => {
    const p = plan([], {
      missingSince: new Map([['/gone.md', 7]]),
      pendingDeletions: ['/gone.md'],
      skipped: [{ path: '/d/x.md', code: 'unreadable', reason: '/d folder could not be read' }],
    });
    const { state: after, report } = settle(state({ missingSince: new Map([['/old.md', 1]]) }), p, []);
    expect([...after.missingSince]).toEqual([['/gone.md', 7]]);
    expect(report.pendingDeletions).toEqual(['/gone.md']);
    expect(report.skippedPaths).toEqual([{ path: '/d/x.md', code: 'unreadable', reason: '/d folder could not be read' }]);
  });

  it('moves each path by its own outcome only, and never changes the state it was given', () => {
    const a: Transfer = { type: 'create', path: '/a.md', localSha: 'A', reason: 'new_local' };
    const b: Transfer = { type: 'create', path: '/b.md', localSha: 'B2', reason: 'new_local' };
    const before = state({ baseline: new Map() });
    const { state: after, report } = settle(before, plan([a, b]), [
      { action: a, result: done('A'), learned: [] },
      { action: b, result: failed('unavailable'), learned: [] },
    ]);
    expect([...after.baseline]).toEqual([['/a.md', 'A']]);
    expect(report.pushed).toEqual(['/a.md']);
    expect(report.errors).toMatchObject([{ path: '/b.md' }]);
    expect(before.baseline.size).toBe(0);
    expect(before.unknownWrites.size).toBe(0);
  });

  it('nothing planned, nothing done: the state is the same and the report empty', () => {
    const before = state({ missingSince: new Map() });
    const { state: after, report, notices } = settle(before, plan([]), []);
    expect(after).toEqual(before);
    expect(Object.values(report).every((list) => list.length === 0)).toBe(true);
    expect(notices).toEqual([]);
  });
});

describe('settle: renames (docs/reconcile.md, "Renames")', () => {
  const A = '/a.md';
  const Bp = '/b.md';
  const renameLocal = (then?: Extract<Transfer, { type: 'rename_local' }>['then']): Transfer => ({
    type: 'rename_local',
    path: Bp,
    from: A,
    memoryId: ID,
    expectLocal: then?.type === 'update' ? 'L' : 'B',
    baseSha: 'B',
    ...(then && { then }),
  });
  const renameRemote: Transfer = { type: 'rename_remote', path: Bp, from: A, memoryId: ID, sha: 'B' };
  const at = (over: Partial<SettledState> = {}) => state({ baseline: new Map([[A, 'B']]), ...over });

  it('rename_local done: the baseline moves with the file, the rename is reported', () => {
    const { state: after, report } = one(renameLocal(), done('B'), at({ refused: new Map([[A, 'X']]) }));
    expect(Object.fromEntries(after.baseline)).toEqual({ [Bp]: 'B' });
    expect(after.refused.size).toBe(0);
    expect(report.renamed).toEqual([{ from: A, to: Bp, side: 'local' }]);
    expect(report.pulled).toEqual([]);
  });

  it('rename_local done, then its update at the new path: both settle, in that order', () => {
    const then = { type: 'update' as const, path: Bp, localSha: 'L', memoryId: ID, expectedRemoteSha: 'B' };
    const action = renameLocal(then);
    const outcome: Outcome = { action, result: done('B'), learned: [], then: { action: then, result: done('L'), learned: [] } };
    const { state: after, report } = settle(at(), plan([action]), [outcome]);
    expect(Object.fromEntries(after.baseline)).toEqual({ [Bp]: 'L' });
    expect(report).toMatchObject({ renamed: [{ from: A, to: Bp, side: 'local' }], pushed: [Bp] });
    // The follow-up failed: the move stands, the edit is left for the next pass, reported.
    const failedThen: Outcome = { action, result: done('B'), learned: [], then: { action: then, result: failed('precondition_failed'), learned: [] } };
    const second = settle(at(), plan([action]), [failedThen]);
    expect(Object.fromEntries(second.state.baseline)).toEqual({ [Bp]: 'B' });
    expect(second.report.errors).toMatchObject([{ path: Bp, operation: 'push', kind: 'precondition_failed' }]);
  });

  it('rename_local done, then a baseline-only or report-only follow-up: settled without an outcome of its own', () => {
    const adopted = settle(at(), plan([renameLocal({ type: 'adopt', path: Bp, sha: 'S' })]), [{ action: renameLocal({ type: 'adopt', path: Bp, sha: 'S' }), result: done('B'), learned: [] }]);
    expect(Object.fromEntries(adopted.state.baseline)).toEqual({ [Bp]: 'S' });
    const kept = renameLocal({ type: 'keep_local', path: Bp, localSha: 'L', warn: false });
    expect(settle(at(), plan([kept]), [{ action: kept, result: done('B'), learned: [] }]).report.refused).toMatchObject([{ path: Bp, code: 'read_only' }]);
  });

  it('rename_local skipped or failed: nothing moves, the follow-up is not settled', () => {
    const then = { type: 'adopt' as const, path: Bp, sha: 'S' };
    for (const result of [{ kind: 'skipped', code: 'taken', detail: 'not moved' } as Result, failed('filesystem')]) {
      const { state: after, report } = one(renameLocal(then), result, at());
      expect(Object.fromEntries(after.baseline)).toEqual({ [A]: 'B' });
      expect(report.renamed).toEqual([]);
    }
  });

  it('rename_remote done: the baseline moves, the old path is no deletion candidate, the rename is reported', () => {
    const { state: after, report } = one(renameRemote, done('B'), at({ missingSince: new Map([[A, 1]]), unknownWrites: new Map([[Bp, 'B']]) }));
    expect(Object.fromEntries(after.baseline)).toEqual({ [Bp]: 'B' });
    expect(after.unknownWrites.size).toBe(0);
    expect(report.renamed).toEqual([{ from: A, to: Bp, side: 'remote' }]);
  });

  it('rename_remote failed: the baseline stays (the next pass falls back to the rows); unavailable records the rename as a write of unknown outcome', () => {
    for (const kind of ['precondition_failed', 'not_found', 'path_conflict'] as const) {
      const { state: after, report } = one(renameRemote, failed(kind), at());
      expect(Object.fromEntries(after.baseline)).toEqual({ [A]: 'B' });
      expect(after.unknownWrites.size).toBe(0);
      expect(report.errors).toMatchObject([{ path: Bp, operation: 'rename_remote', kind }]);
    }
    expect(Object.fromEntries(one(renameRemote, failed('unavailable'), at()).state.unknownWrites)).toEqual({ [Bp]: 'B' });
  });
});
