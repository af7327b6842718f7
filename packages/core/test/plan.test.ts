import { describe, expect, it } from 'vitest';
// Through the engine entry, as a host that builds its own loop imports them.
import { classify, deleteCap, planActions, planStore, pushOnlyView, settleUnknownWrites, type LocalFile, type Plan, type PlanInput } from '@memory-mounter/core/engine';
import { stillUnknownWrites } from '../src/decide/plan.js';
import type { AbsenceEvidence } from '../src/decide/absence.js';

// One path, '/n.md', in every row. Shas are short names: B is the baseline content, L a local
// edit, R a remote edit.
const P = '/n.md';
const ID = 'mem_1';

interface Sides {
  b?: string;
  l?: string;
  r?: string;
}

function input({ b, l, r }: Sides, over: Partial<PlanInput> = {}): PlanInput {
  return {
    access: 'read_write',
    deletionMode: 'enabled',
    now: 100_000,
    graceMs: 30_000,
    baseline: new Map(b ? [[P, b]] : []),
    localFiles: new Map<string, LocalFile>(l ? [[P, { sha: l, size: 1, mtimeMs: 0 }]] : []),
    localBlocked: new Map(),
    remote: new Map(r ? [[P, { id: ID, sha: r }]] : []),
    missingSince: new Map(),
    refused: new Map(),
    settleAfter: null,
    ...over,
  };
}

/** What the remote view knows when the memory at P (ID) is missing from listing 3, the listing it rests on. */
const evidence = (over: Partial<AbsenceEvidence> = {}): AbsenceEvidence => ({ gone: new Set(), held: new Set(), listing: 3, absentFrom: new Map(), ...over });
/** The store said ID is deleted (a `deleted` version, a `not_found`). */
const gone: Partial<PlanInput> = { baselineIds: new Map([[P, ID]]), absence: evidence({ gone: new Set([ID]) }) };
/** Listing 3 is the first to miss ID, and nothing else says it is gone. */
const oneListing: Partial<PlanInput> = { baselineIds: new Map([[P, ID]]), absence: evidence() };

const rw = (sides: Sides, over: Partial<PlanInput> = {}) => withActions(planStore(input(sides, over)));
const ro = (sides: Sides, over: Partial<PlanInput> = {}) => withActions(planStore(input(sides, { access: 'read_only', ...over })));
/** A plan with its three lists as one (`actions`), which is what the single-path rows compare. */
const withActions = (plan: Plan) => ({ ...plan, actions: planActions(plan) });

describe('classify: every row of the SPEC 4.2 table', () => {
  it.each([
    ['B', 'B', 'B', 'unchanged'],
    ['B', 'L', 'B', 'local_changed'],
    ['B', 'B', 'R', 'remote_changed'],
    ['B', 'X', 'X', 'both_changed_same'],
    ['B', 'L', 'R', 'both_changed_differ'],
    ['B', undefined, 'B', 'local_missing'],
    ['B', undefined, 'R', 'local_missing_remote_changed'],
    ['B', undefined, undefined, 'both_missing'],
    ['B', 'B', undefined, 'remote_missing'],
    ['B', 'L', undefined, 'remote_missing_local_edited'],
    [undefined, 'L', undefined, 'new_local'],
    [undefined, undefined, 'R', 'new_remote'],
    [undefined, 'X', 'X', 'both_changed_same'],
    [undefined, 'L', 'R', 'both_changed_differ'],
  ] as const)('B=%s L=%s R=%s is %s', (b, l, r, row) => {
    const side = (sha: string | undefined) => (sha === undefined ? undefined : { sha });
    expect(classify(b, side(l), side(r)).row).toBe(row);
  });

  it('each row holds the sides it has, and only those', () => {
    const local = { sha: 'L' };
    const remote = { sha: 'R' };
    expect(classify('B', local, remote)).toEqual({ row: 'both_changed_differ', local, remote });
    expect(classify('B', undefined, { sha: 'B' })).toEqual({ row: 'local_missing', baseline: 'B', remote: { sha: 'B' } });
    expect(classify('B', undefined, remote)).toEqual({ row: 'local_missing_remote_changed', remote });
    expect(classify('B', local, undefined)).toEqual({ row: 'remote_missing_local_edited', local });
    expect(classify(undefined, undefined, remote)).toEqual({ row: 'new_remote', remote });
    expect(() => classify(undefined, undefined, undefined)).toThrow(/no row/);
  });
});

describe('planStore, read_write, row by row', () => {
  it('L = B = R: nothing', () => {
    expect(rw({ b: 'B', l: 'B', r: 'B' }).actions).toEqual([]);
  });

  it('only L changed: update with expected_content_sha256 = R', () => {
    expect(rw({ b: 'B', l: 'L', r: 'B' }).actions).toEqual([
      { type: 'update', path: P, localSha: 'L', memoryId: ID, expectedRemoteSha: 'B' },
    ]);
  });

  it('only R changed: pull R, expecting the file still at B', () => {
    expect(rw({ b: 'B', l: 'B', r: 'R' }).actions).toEqual([
      { type: 'pull', path: P, memoryId: ID, remoteSha: 'R', expectLocal: 'B', reason: 'remote_changed' },
    ]);
  });

  it('both changed, L = R: adopt without transfer', () => {
    expect(rw({ b: 'B', l: 'X', r: 'X' }).actions).toEqual([{ type: 'adopt', path: P, sha: 'X' }]);
  });

  it('both changed, L != R: the store wins (pull marked as conflict)', () => {
    expect(rw({ b: 'B', l: 'L', r: 'R' }).actions).toEqual([
      { type: 'pull', path: P, memoryId: ID, remoteSha: 'R', expectLocal: 'L', reason: 'conflict' },
    ]);
  });

  it('L missing, R = B: a deletion candidate, not sent within the grace period', () => {
    const plan = rw({ b: 'B', r: 'B' });
    expect(plan.actions).toEqual([]);
    expect(plan.pendingDeletions).toEqual([P]);
    expect(plan.missingSince.get(P)).toBe(100_000);
  });

  it('L missing, R changed: restore R', () => {
    expect(rw({ b: 'B', r: 'R' }).actions).toEqual([
      { type: 'pull', path: P, memoryId: ID, remoteSha: 'R', expectLocal: null, reason: 'restore' },
    ]);
  });

  it('L missing, R missing, the absence corroborated: drop from the baseline', () => {
    expect(rw({ b: 'B' }, gone).actions).toEqual([{ type: 'forget', path: P }]);
  });

  it('L missing, R missing from one listing only: the baseline stays, the file counts missing, the next listing decides', () => {
    const plan = rw({ b: 'B' }, oneListing);
    expect(plan.actions).toEqual([]);
    expect([...plan.absentFrom]).toEqual([[P, 3]]);
    expect(plan.missingSince.has(P)).toBe(true);
  });

  it('L missing, R missing from two listings: drop', () => {
    expect(rw({ b: 'B' }, { ...oneListing, absence: evidence({ absentFrom: new Map([[P, 2]]) }) }).actions).toEqual([{ type: 'forget', path: P }]);
  });

  it('R missing, L = B, the deletion corroborated: delete the local file, re-checked against B', () => {
    expect(rw({ b: 'B', l: 'B' }, gone).actions).toEqual([{ type: 'delete_local', path: P, expectLocal: 'B', memoryId: ID }]);
  });

  it('R missing, L = B, missing from one listing only: delete only once the store confirms, by id', () => {
    expect(rw({ b: 'B', l: 'B' }, oneListing).actions).toEqual([{ type: 'delete_local', path: P, expectLocal: 'B', corroborate: { memoryId: ID } }]);
  });

  it('R missing, L edited: re-create the memory from the file', () => {
    expect(rw({ b: 'B', l: 'L' }).actions).toEqual([{ type: 'create', path: P, localSha: 'L', reason: 'recreate' }]);
  });

  it('new local file: create', () => {
    expect(rw({ l: 'L' }).actions).toEqual([{ type: 'create', path: P, localSha: 'L', reason: 'new_local' }]);
  });

  it('new remote memory: pull', () => {
    expect(rw({ r: 'R' }).actions).toEqual([
      { type: 'pull', path: P, memoryId: ID, remoteSha: 'R', expectLocal: null, reason: 'new_remote' },
    ]);
  });
});

describe('planStore, read_only, row by row', () => {
  it('L = B = R: nothing', () => {
    expect(ro({ b: 'B', l: 'B', r: 'B' }).actions).toEqual([]);
  });

  it('only L changed: keep local, never push', () => {
    expect(ro({ b: 'B', l: 'L', r: 'B' }).actions).toEqual([{ type: 'keep_local', path: P, localSha: 'L', warn: false }]);
  });

  it('only R changed: pull', () => {
    expect(ro({ b: 'B', l: 'B', r: 'R' }).actions).toMatchObject([{ type: 'pull', reason: 'remote_changed' }]);
  });

  it('both changed, L = R: adopt', () => {
    expect(ro({ b: 'B', l: 'X', r: 'X' }).actions).toEqual([{ type: 'adopt', path: P, sha: 'X' }]);
  });

  it('both changed, L != R: pull R (store wins)', () => {
    expect(ro({ b: 'B', l: 'L', r: 'R' }).actions).toMatchObject([{ type: 'pull', reason: 'conflict' }]);
  });

  it('L missing, R = B: nothing, the file stays gone, never a candidate; still tracked as missing', () => {
    const plan = ro({ b: 'B', r: 'B' }, { missingSince: new Map([[P, 0]]) });
    expect(plan.actions).toEqual([]);
    expect(plan.pendingDeletions).toEqual([]);
    // Tracked like a read-write store's, so the trust check does not take a folder emptied one
    // file at a time for a wipe (it expects only files not known missing).
    expect([...plan.missingSince]).toEqual([[P, 0]]);
  });

  it('L missing, R changed: restore', () => {
    expect(ro({ b: 'B', r: 'R' }).actions).toMatchObject([{ type: 'pull', reason: 'restore' }]);
  });

  it('L missing, R missing, the absence corroborated: drop', () => {
    expect(ro({ b: 'B' }, gone).actions).toEqual([{ type: 'forget', path: P }]);
  });

  it('R missing, L = B, the deletion corroborated: delete local', () => {
    expect(ro({ b: 'B', l: 'B' }, gone).actions).toEqual([{ type: 'delete_local', path: P, expectLocal: 'B', memoryId: ID }]);
  });

  it('R missing, L = B, missing from one listing only: delete only once the store confirms, by id', () => {
    expect(ro({ b: 'B', l: 'B' }, oneListing).actions).toEqual([{ type: 'delete_local', path: P, expectLocal: 'B', corroborate: { memoryId: ID } }]);
  });

  it('R missing, L edited: keep the file, warn, never push', () => {
    expect(ro({ b: 'B', l: 'L' }).actions).toEqual([{ type: 'keep_local', path: P, localSha: 'L', warn: true }]);
  });

  it('new local file: never push', () => {
    expect(ro({ l: 'L' }).actions).toEqual([{ type: 'keep_local', path: P, localSha: 'L', warn: false }]);
  });

  it('new remote memory: pull', () => {
    expect(ro({ r: 'R' }).actions).toMatchObject([{ type: 'pull', reason: 'new_remote' }]);
  });

  it('never deletes remotely whatever the deletion mode', () => {
    for (const deletionMode of ['enabled', 'log_only', 'disabled'] as const) {
      const plan = ro({ b: 'B', r: 'B' }, { deletionMode, graceMs: 0 });
      expect(plan.actions.filter((a) => a.type === 'delete_remote')).toEqual([]);
    }
  });
});

describe('planStore: deletions (SPEC 4.3)', () => {
  const missingFor = (ms: number) => ({ missingSince: new Map([[P, 100_000 - ms]]) });

  it('sends the delete once the file has been missing for the grace period, guarded by B', () => {
    expect(rw({ b: 'B', r: 'B' }, missingFor(29_999)).actions).toEqual([]);
    expect(rw({ b: 'B', r: 'B' }, missingFor(30_000)).actions).toEqual([
      { type: 'delete_remote', path: P, memoryId: ID, expectedRemoteSha: 'B', mode: 'send' },
    ]);
  });

  it('keeps the first-missing time across passes', () => {
    expect(rw({ b: 'B', r: 'B' }, missingFor(10_000)).missingSince.get(P)).toBe(90_000);
  });

  it('a file that reappears leaves the candidate list', () => {
    expect(rw({ b: 'B', l: 'B', r: 'B' }, missingFor(10_000)).missingSince.size).toBe(0);
  });

  it('graceMs 0 (final sync) sends at once', () => {
    expect(rw({ b: 'B', r: 'B' }, { graceMs: 0 }).actions).toMatchObject([{ type: 'delete_remote', mode: 'send' }]);
  });

  it('log_only plans the delete as log-only, every pass, and keeps it pending', () => {
    const plan = rw({ b: 'B', r: 'B' }, { deletionMode: 'log_only', ...missingFor(60_000) });
    expect(plan.actions).toMatchObject([{ type: 'delete_remote', mode: 'log_only' }]);
    expect(plan.pendingDeletions).toEqual([P]);
  });

  it('disabled never plans a delete', () => {
    const plan = rw({ b: 'B', r: 'B' }, { deletionMode: 'disabled', ...missingFor(600_000) });
    expect(plan.actions).toEqual([]);
    expect(plan.pendingDeletions).toEqual([P]);
  });

  it('caps remote deletes per pass at clamp(floor(baseline/4), 8, 50)', () => {
    expect([0, 7, 32, 33, 40, 200, 1000].map(deleteCap)).toEqual([8, 8, 8, 8, 10, 50, 50]);
    const paths = Array.from({ length: 60 }, (_, i) => `/f${String(i).padStart(2, '0')}.md`);
    const plan = planStore({
      ...input({}),
      graceMs: 0,
      baseline: new Map(paths.map((p) => [p, 'B'])),
      remote: new Map(paths.map((p, i) => [p, { id: `mem_${i}`, sha: 'B' }])),
    });
    expect(plan.transfers.filter((a) => a.type === 'delete_remote')).toHaveLength(15);
    expect(plan.pendingDeletions).toHaveLength(45);
  });

  it('uploads and pulls are unaffected by the mode', () => {
    for (const deletionMode of ['enabled', 'log_only', 'disabled'] as const) {
      expect(rw({ l: 'L' }, { deletionMode }).actions).toMatchObject([{ type: 'create' }]);
      expect(rw({ r: 'R' }, { deletionMode }).actions).toMatchObject([{ type: 'pull' }]);
    }
  });
});

describe('planStore: refusals, blocked paths, push-only flush', () => {
  it('unpushable content is refused with its reason, warned the first time only', () => {
    const unpushable = { code: 'too_large', detail: 'is larger than 102400 bytes' } as const;
    const local = new Map([[P, { sha: 'L', size: 200_000, mtimeMs: 0, unpushable }]]);
    const first = rw({}, { localFiles: local });
    expect(first.actions).toEqual([{ type: 'refuse', path: P, localSha: 'L', code: 'too_large', detail: 'is larger than 102400 bytes', firstTime: true }]);
    const again = rw({}, { localFiles: local, refused: new Map([[P, 'L']]) });
    expect(again.actions).toMatchObject([{ type: 'refuse', firstTime: false }]);
  });

  it('content the store rejected is not retried until it changes', () => {
    expect(rw({ l: 'L' }, { refused: new Map([[P, 'L']]) }).actions).toMatchObject([{ type: 'refuse', code: 'rejected', firstTime: false }]);
    expect(rw({ l: 'L2' }, { refused: new Map([[P, 'L']]) }).actions).toMatchObject([{ type: 'create', localSha: 'L2' }]);
  });

  it('a path the scan could not see (or under such a folder) is left alone, not read as deleted', () => {
    const blockedFile = rw({ b: 'B', r: 'B' }, { localBlocked: new Map([[P, { code: 'is_symlink', detail: 'is a symlink' }]]), graceMs: 0 });
    expect(blockedFile.actions).toEqual([]);
    // The path the scan blocked is reported by the scan; the plan does not repeat it.
    expect(blockedFile.skipped).toEqual([]);
    expect(blockedFile.missingSince.size).toBe(0);
    const nested = planStore({
      ...input({}),
      graceMs: 0,
      baseline: new Map([['/d/n.md', 'B']]),
      remote: new Map([['/d/n.md', { id: ID, sha: 'B' }]]),
      localBlocked: new Map([['/d', { code: 'unreadable', detail: 'folder could not be read (EACCES)' }]]),
    });
    expect(planActions(nested)).toEqual([]);
    expect(nested.pendingDeletions).toEqual([]);
    expect(nested.skipped).toEqual([{ path: '/d/n.md', code: 'unreadable', reason: '/d folder could not be read (EACCES)' }]);
  });

  it('a new file written after settleAfter waits for the next pass', () => {
    const local = new Map([[P, { sha: 'L', size: 1, mtimeMs: 2_000 }]]);
    expect(rw({}, { localFiles: local, settleAfter: 1_000 }).skipped).toEqual([
      {
        path: P,
        code: 'settling',
        reason: 'new file modified within newFileSettle (at 1970-01-01T00:00:02.000Z; this pass takes new files modified by 1970-01-01T00:00:01.000Z); left for the next pass',
      },
    ]);
    expect(rw({}, { localFiles: local, settleAfter: 2_000 }).actions).toMatchObject([{ type: 'create' }]);
  });

  it('a new file dated in the future (the host clock was set back) counts as settled', () => {
    const local = new Map([[P, { sha: 'L', size: 1, mtimeMs: 3_600_000 }]]);
    // Written an hour "ahead" of now: its time cannot say it is still being written.
    expect(rw({}, { localFiles: local, settleAfter: 1_000, hostNow: 2_000 }).actions).toMatchObject([{ type: 'create' }]);
    // Within the window and not in the future: it still waits.
    const recent = new Map([[P, { sha: 'L', size: 1, mtimeMs: 1_500 }]]);
    expect(rw({}, { localFiles: recent, settleAfter: 1_000, hostNow: 2_000 }).skipped).toMatchObject([{ code: 'settling' }]);
  });
});

describe('the plan keeps transfers, baseline-only and report-only actions apart', () => {
  it('each kind of action lands in its own list', () => {
    const files = (o: Record<string, string>) => new Map(Object.entries(o).map(([p, sha]) => [p, { sha, size: 1, mtimeMs: 0 }]));
    const plan = planStore({
      ...input({}),
      baseline: new Map([['/adopt.md', 'B'], ['/forget.md', 'B'], ['/pull.md', 'B']]),
      baselineIds: new Map([['/forget.md', 'm3']]),
      absence: { gone: new Set(['m3']), held: new Set(['m1', 'm2']), listing: 1, absentFrom: new Map() },
      localFiles: files({ '/adopt.md': 'X', '/pull.md': 'B', '/refused.md': 'L' }),
      remote: new Map([['/adopt.md', { id: 'm1', sha: 'X' }], ['/pull.md', { id: 'm2', sha: 'R' }]]),
      refused: new Map([['/refused.md', 'L']]),
    });
    expect(plan.transfers).toMatchObject([{ type: 'pull', path: '/pull.md' }]);
    expect(plan.baselineOnly).toEqual([{ type: 'adopt', path: '/adopt.md', sha: 'X' }, { type: 'forget', path: '/forget.md' }]);
    expect(plan.reportOnly).toMatchObject([{ type: 'refuse', path: '/refused.md' }]);
  });

  it('a pull carries the content the listing gave, and only then', () => {
    expect(rw({}, { remote: new Map([[P, { id: ID, sha: 'R', content: 'hello' }]]) }).actions).toEqual([
      { type: 'pull', path: P, memoryId: ID, remoteSha: 'R', expectLocal: null, reason: 'new_remote', content: 'hello' },
    ]);
    expect(rw({ r: 'R' }).actions[0]).not.toHaveProperty('content');
  });
});

describe('pushOnlyView: the push-only flush as a view over a plan', () => {
  const view = (sides: Sides, over: Partial<PlanInput> = {}) => withActions(pushOnlyView(planStore(input(sides, { graceMs: 0, ...over }))));

  it('keeps pushes (updates and creates) and refusals', () => {
    expect(view({ b: 'B', l: 'L', r: 'B' }).actions).toMatchObject([{ type: 'update' }]);
    expect(view({ b: 'B', l: 'L' }).actions).toMatchObject([{ type: 'create', reason: 'recreate' }]);
    expect(view({ l: 'L' }).actions).toMatchObject([{ type: 'create', reason: 'new_local' }]);
    expect(view({ l: 'L' }, { refused: new Map([[P, 'L']]) }).actions).toMatchObject([{ type: 'refuse' }]);
  });

  it('drops pulls, deletes, baseline moves and read-only keeps', () => {
    for (const sides of [{ b: 'B', l: 'B', r: 'R' }, { r: 'R' }, { b: 'B', r: 'B' }, { b: 'B', l: 'B' }, { b: 'B', l: 'X', r: 'X' }, { b: 'B' }, { b: 'B', r: 'R' }]) {
      expect(view(sides).actions).toEqual([]);
    }
    expect(view({ l: 'L' }, { access: 'read_only' }).actions).toEqual([]);
  });

  it('keeps the deletion candidates, with none pending', () => {
    const plan = view({ b: 'B', r: 'B' }, { missingSince: new Map([[P, 5]]) });
    expect(plan.missingSince.get(P)).toBe(5);
    expect(plan.pendingDeletions).toEqual([]);
  });

  it('turns a conflict, which it cannot pull, into a note', () => {
    expect(view({ b: 'B', l: 'L', r: 'R' }).actions).toEqual([{ type: 'note_conflict', path: P, storeSha: 'R', memoryId: ID }]);
    expect(view({ l: 'L', r: 'R' }).actions).toEqual([{ type: 'note_conflict', path: P, storeSha: 'R', memoryId: ID }]);
  });
});

describe('settleUnknownWrites', () => {
  it('a memory holding exactly the sha we sent is our write: the baseline takes it', () => {
    const remote = new Map([[P, { id: ID, sha: 'L' }]]);
    expect(settleUnknownWrites(new Map([[P, 'B']]), new Map([[P, 'L']]), remote).get(P)).toBe('L');
  });

  it('anything else leaves the baseline for the table to decide', () => {
    const remote = new Map([[P, { id: ID, sha: 'R' }]]);
    expect(settleUnknownWrites(new Map([[P, 'B']]), new Map([[P, 'L']]), remote).get(P)).toBe('B');
    expect(settleUnknownWrites(new Map(), new Map([[P, 'L']]), new Map()).has(P)).toBe(false);
  });
});

describe('stillUnknownWrites', () => {
  const sent = new Map([[P, 'L']]);
  it('stays unknown while the store shows the path as before the write: absent, or at the baseline', () => {
    expect(stillUnknownWrites(new Map(), sent, new Map()).get(P)).toBe('L');
    expect(stillUnknownWrites(new Map([[P, 'B']]), sent, new Map([[P, { id: ID, sha: 'B' }]])).get(P)).toBe('L');
  });

  it('is settled once the store shows it, or shows something else there', () => {
    expect(stillUnknownWrites(new Map([[P, 'B']]), sent, new Map([[P, { id: ID, sha: 'L' }]])).has(P)).toBe(false);
    expect(stillUnknownWrites(new Map([[P, 'B']]), sent, new Map([[P, { id: ID, sha: 'R' }]])).has(P)).toBe(false);
    expect(stillUnknownWrites(new Map(), sent, new Map([[P, { id: ID, sha: 'R' }]])).has(P)).toBe(false);
  });
});

describe('R missing, L = B: a memory absent from one listing is not taken for deleted (SPEC 6.6)', () => {
  const ids = new Map([[P, ID]]);
  const plainDelete = [{ type: 'delete_local', path: P, expectLocal: 'B', memoryId: ID }];

  it.each([
    ['the store said it is deleted (a deleted version, a not_found)', evidence({ gone: new Set([ID]) })],
    ['the view holds the memory elsewhere (renamed, or set aside by the index)', evidence({ held: new Set([ID]) })],
  ])('corroborated, %s: the file is deleted as the row says, and the absence is settled', (_, absence) => {
    for (const plan of [rw({ b: 'B', l: 'B' }, { baselineIds: ids, absence }), ro({ b: 'B', l: 'B' }, { baselineIds: ids, absence })]) {
      expect(plan.actions).toEqual(plainDelete);
      expect(plan.absentFrom.size).toBe(0);
    }
  });

  it('a second full listing misses it too: still asked about by id before the delete (two listings can both miss it, B47), and the absence is settled', () => {
    const absence = evidence({ listing: 4, absentFrom: new Map([[P, 3]]) });
    for (const plan of [rw({ b: 'B', l: 'B' }, { baselineIds: ids, absence }), ro({ b: 'B', l: 'B' }, { baselineIds: ids, absence })]) {
      expect(plan.actions).toEqual([{ ...plainDelete[0], corroborate: { memoryId: ID } }]);
      expect(plan.absentFrom.size).toBe(0);
    }
  });

  it('a second full listing misses more memories than the gets fit: taken as the deletions two listings say they are', () => {
    const many = Array.from({ length: 9 }, (_, i) => `/m${i}.md`);
    const plan = planStore({
      ...input({}),
      baseline: new Map(many.map((p) => [p, 'B'])),
      localFiles: new Map(many.map((p) => [p, { sha: 'B', size: 1, mtimeMs: 0 }])),
      baselineIds: new Map(many.map((p, i) => [p, `mem_${i}`])),
      absence: evidence({ listing: 4, absentFrom: new Map(many.map((p) => [p, 3])) }),
    });
    expect(plan.transfers.map((t) => t.type)).toEqual(many.map(() => 'delete_local'));
    expect(plan.transfers.every((t) => t.type === 'delete_local' && t.corroborate === undefined)).toBe(true);
  });

  it('unconfirmed: asked about by id, and remembered from the first listing that missed it', () => {
    const first = rw({ b: 'B', l: 'B' }, oneListing);
    expect(first.absentFrom).toEqual(new Map([[P, 3]]));
    // The view still rests on listing 3 (a feed read since): still one listing's absence.
    const again = rw({ b: 'B', l: 'B' }, { baselineIds: ids, absence: evidence({ absentFrom: first.absentFrom }) });
    expect(again.actions).toEqual([{ type: 'delete_local', path: P, expectLocal: 'B', corroborate: { memoryId: ID } }]);
    expect(again.absentFrom).toEqual(new Map([[P, 3]]));
  });

  it('no memory id recorded for the path: nothing to ask about, so the file waits for a second listing', () => {
    for (const plan of [rw({ b: 'B', l: 'B' }, { absence: evidence() }), ro({ b: 'B', l: 'B' }, { absence: evidence() })]) {
      expect(plan.actions).toEqual([]);
      expect(plan.skipped).toEqual([{ path: P, code: 'absence_unconfirmed', reason: expect.stringContaining('no memory id') }]);
      expect(plan.absentFrom).toEqual(new Map([[P, 3]]));
    }
  });

  it('without absence evidence at all (a host loop that gives none), every such delete asks the store first', () => {
    expect(rw({ b: 'B', l: 'B' }, { baselineIds: ids }).actions).toEqual([{ type: 'delete_local', path: P, expectLocal: 'B', corroborate: { memoryId: ID } }]);
  });

  /** `n` files unchanged since the baseline whose memories listing 3 missed. */
  const many = (n: number, over: Partial<AbsenceEvidence> = {}): PlanInput => {
    const paths = Array.from({ length: n }, (_, i) => `/m${String(i).padStart(2, '0')}.md`);
    return {
      ...input({}),
      baseline: new Map(paths.map((p) => [p, 'B'])),
      baselineIds: new Map(paths.map((p, i) => [p, `mem_${i}`])),
      localFiles: new Map(paths.map((p) => [p, { sha: 'B', size: 1, mtimeMs: 0 }])),
      absence: evidence(over),
    };
  };

  it('up to 8 at once: each asked about with a get', () => {
    const plan = planStore(many(8));
    expect(plan.transfers.map((t) => t.type === 'delete_local' && t.corroborate?.memoryId)).toEqual(Array.from({ length: 8 }, (_, i) => `mem_${i}`));
    expect(plan.skipped).toEqual([]);
  });

  it('more than 8 at once: none asked about, none deleted; all wait for one second listing, which then settles them', () => {
    const plan = planStore(many(9));
    expect(plan.transfers).toEqual([]);
    expect(plan.skipped.map((s) => s.code)).toEqual(Array(9).fill('absence_unconfirmed'));
    expect(plan.absentFrom.size).toBe(9);
    const next = planStore(many(9, { listing: 4, absentFrom: plan.absentFrom }));
    expect(next.transfers).toHaveLength(9);
    expect(next.transfers.every((t) => t.type === 'delete_local' && t.corroborate === undefined)).toBe(true);
  });

  it('the corroborated ones do not count towards the 8', () => {
    const input = many(12, { gone: new Set(['mem_0', 'mem_1', 'mem_2', 'mem_3']) });
    const plan = planStore(input);
    expect(plan.transfers.filter((t) => t.type === 'delete_local' && t.corroborate === undefined)).toHaveLength(4);
    expect(plan.transfers.filter((t) => t.type === 'delete_local' && t.corroborate !== undefined)).toHaveLength(8);
  });

  it('R missing, L edited is unchanged: the file is the only copy either way, re-created (read_only: kept)', () => {
    expect(rw({ b: 'B', l: 'L' }, oneListing).actions).toEqual([{ type: 'create', path: P, localSha: 'L', reason: 'recreate' }]);
    expect(ro({ b: 'B', l: 'L' }, oneListing).actions).toEqual([{ type: 'keep_local', path: P, localSha: 'L', warn: true }]);
    expect(rw({ b: 'B', l: 'L' }, oneListing).absentFrom.size).toBe(0);
  });

  it('a push-only flush deletes nothing, and does not report the absence it leaves to the next pass', () => {
    const flush = pushOnlyView(planStore(input({ b: 'B', l: 'B' }, { absence: evidence() })));
    expect(planActions(flush)).toEqual([]);
    expect(flush.skipped).toEqual([]);
    expect(pushOnlyView(planStore(input({ b: 'B', l: 'B' }, oneListing))).transfers).toEqual([]);
  });
});

describe('the ids a plan carries for the events (memoryId, versionId)', () => {
  const versioned = (sha: string) => new Map([[P, { id: ID, sha, versionId: `memver_${sha}` }]]);

  it('a pull names the version the listing or feed said holds the content; a flush notes it for the conflict it cannot pull', () => {
    expect(rw({ b: 'B', l: 'B' }, { remote: versioned('R') }).actions).toEqual([
      { type: 'pull', path: P, memoryId: ID, remoteSha: 'R', expectLocal: 'B', reason: 'remote_changed', versionId: 'memver_R' },
    ]);
    const view = pushOnlyView(planStore(input({ b: 'B', l: 'L' }, { remote: versioned('R') })));
    expect(view.reportOnly).toEqual([{ type: 'note_conflict', path: P, storeSha: 'R', memoryId: ID, versionId: 'memver_R' }]);
  });

  it('refused content names the memory it would have updated, and no memory when it would have been created', () => {
    const unpushable = { code: 'not_utf8' as const, detail: 'is not UTF-8 text' };
    const edited = planStore(input({ b: 'B', r: 'B' }, { localFiles: new Map([[P, { sha: 'L', size: 1, mtimeMs: 0, unpushable }]]) }));
    expect(edited.reportOnly).toEqual([{ type: 'refuse', path: P, localSha: 'L', code: 'not_utf8', detail: 'is not UTF-8 text', firstTime: true, memoryId: ID }]);
    const created = planStore(input({}, { localFiles: new Map([[P, { sha: 'L', size: 1, mtimeMs: 0, unpushable }]]) }));
    expect(created.reportOnly).toEqual([{ type: 'refuse', path: P, localSha: 'L', code: 'not_utf8', detail: 'is not UTF-8 text', firstTime: true }]);
  });

  it('a rename followed on disk names the version that holds the memory at its new path', () => {
    const plan = planStore(
      input(
        { b: 'B', l: 'B' },
        { baselineIds: new Map([[P, ID]]), remote: new Map([['/moved.md', { id: ID, sha: 'B', versionId: 'memver_moved' }]]) },
      ),
    );
    expect(plan.transfers).toEqual([
      { type: 'rename_local', path: '/moved.md', from: P, memoryId: ID, expectLocal: 'B', baseSha: 'B', versionId: 'memver_moved' },
    ]);
  });
});
