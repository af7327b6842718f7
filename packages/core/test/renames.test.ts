import { describe, expect, it } from 'vitest';
import { planActions, planStore, pushOnlyView, type Action, type Plan, type PlanInput } from '../src/decide/plan.js';
import { baselineIdsAfter, movedAlikeThenDeleted } from '../src/decide/renames.js';
import { EMPTY_SHA } from '../src/model/sha256.js';
import type { LocalFile } from '../src/local/scan.js';

/**
 * The rename rows of docs/reconcile.md ("Renames"), one test each, in the style of plan.test.ts:
 * each side is given path by path; shas are short names (B the baseline's content, L a local
 * edit, R a remote edit). X is the memory the baseline holds at /a.md.
 */
const X = 'mem_x';

interface World {
  baseline?: Record<string, string>;
  ids?: Record<string, string>;
  local?: Record<string, string | LocalFile>;
  remote?: Record<string, [id: string, sha: string]>;
  blocked?: Record<string, string>;
}

function input(w: World, over: Partial<PlanInput> = {}): PlanInput {
  return {
    access: 'read_write',
    deletionMode: 'enabled',
    now: 100_000,
    graceMs: 30_000,
    baseline: new Map(Object.entries(w.baseline ?? {})),
    baselineIds: new Map(Object.entries(w.ids ?? {})),
    localFiles: new Map(Object.entries(w.local ?? {}).map(([p, f]) => [p, typeof f === 'string' ? { sha: f, size: 1, mtimeMs: 0 } : f])),
    localBlocked: new Map(Object.entries(w.blocked ?? {}).map(([p, detail]) => [p, { code: 'is_symlink' as const, detail }])),
    remote: new Map(Object.entries(w.remote ?? {}).map(([p, [id, sha]]) => [p, { id, sha }])),
    missingSince: new Map(),
    refused: new Map(),
    settleAfter: null,
    ...over,
  };
}
/** A plan, with every action in one list (`actions`), as the table reads. */
const withActions = (plan: Plan) => Object.assign(plan, { actions: planActions(plan) });
const rw = (w: World, over: Partial<PlanInput> = {}) => withActions(planStore(input(w, over)));
const ro = (w: World, over: Partial<PlanInput> = {}) => withActions(planStore(input(w, { access: 'read_only', ...over })));
const flush = (w: World, over: Partial<PlanInput> = {}) => withActions(pushOnlyView(planStore(input(w, over))));
const types = (actions: Action[]) => actions.map((a) => `${a.type} ${a.path}`).sort();

/** The store renamed X from /a.md to /b.md; `l` is the file at /a.md, `r` the memory's sha at /b.md. */
const remoteRenamed = (l: string, r: string): World => ({
  baseline: { '/a.md': 'B' },
  ids: { '/a.md': X },
  local: { '/a.md': l },
  remote: { '/b.md': [X, r] },
});

describe('remote rename: the file follows on disk, no transfer', () => {
  it('remote_renamed: the file moves; nothing else', () => {
    const expected: Action[] = [{ type: 'rename_local', path: '/b.md', from: '/a.md', memoryId: X, expectLocal: 'B', baseSha: 'B' }];
    expect(rw(remoteRenamed('B', 'B')).actions).toEqual(expected);
    expect(ro(remoteRenamed('B', 'B')).actions).toEqual(expected);
  });

  it('remote_renamed_local_edited: the file moves, then its edit goes to the same memory by id', () => {
    expect(rw(remoteRenamed('L', 'B')).actions).toEqual([
      {
        type: 'rename_local',
        path: '/b.md',
        from: '/a.md',
        memoryId: X,
        expectLocal: 'L',
        baseSha: 'B',
        then: { type: 'update', path: '/b.md', localSha: 'L', memoryId: X, expectedRemoteSha: 'B' },
      },
    ]);
    // Read-only: moved, the edit kept and never pushed.
    expect(ro(remoteRenamed('L', 'B')).actions[0]).toMatchObject({ type: 'rename_local', then: { type: 'keep_local', path: '/b.md', localSha: 'L' } });
  });

  it('remote_renamed_local_edited, content the store cannot take: moved, then refused at the new path', () => {
    const w = remoteRenamed('L', 'B');
    w.local = { '/a.md': { sha: 'L', size: 1, mtimeMs: 0, unpushable: { code: 'not_utf8', detail: 'is not UTF-8 text' } } };
    expect(rw(w).actions[0]).toMatchObject({ type: 'rename_local', then: { type: 'refuse', path: '/b.md', code: 'not_utf8', detail: 'is not UTF-8 text' } });
    // Already refused at the old path: not warned again.
    expect(rw(remoteRenamed('L', 'B'), { refused: new Map([['/a.md', 'L']]) }).actions[0]).toMatchObject({
      then: { type: 'refuse', path: '/b.md', firstTime: false },
    });
  });

  it('remote_renamed_remote_edited: moved, then the store edit pulled (the file still as moved)', () => {
    expect(rw(remoteRenamed('B', 'R')).actions[0]).toMatchObject({
      type: 'rename_local',
      then: { type: 'pull', path: '/b.md', memoryId: X, remoteSha: 'R', expectLocal: 'B', reason: 'remote_changed' },
    });
  });

  it('remote_renamed_both_edited: moved; same content adopted, different content the store wins', () => {
    expect(rw(remoteRenamed('S', 'S')).actions[0]).toMatchObject({ then: { type: 'adopt', path: '/b.md', sha: 'S' } });
    expect(rw(remoteRenamed('L', 'R')).actions[0]).toMatchObject({
      then: { type: 'pull', path: '/b.md', remoteSha: 'R', expectLocal: 'L', reason: 'conflict' },
    });
  });

  it('remote_renamed_alike: the file is already at the new name (the agent made the same move): the baseline follows', () => {
    const w: World = { ...remoteRenamed('B', 'B'), local: { '/b.md': 'L' } };
    expect(rw(w).actions).toEqual([
      {
        type: 'rename_local',
        path: '/b.md',
        from: '/a.md',
        memoryId: X,
        expectLocal: 'L',
        baseSha: 'B',
        alreadyMoved: true,
        // An edit made with the move is a local change of the memory, not a conflict.
        then: { type: 'update', path: '/b.md', localSha: 'L', memoryId: X, expectedRemoteSha: 'B' },
      },
    ]);
    expect(flush(w).actions).toEqual([{ type: 'update', path: '/b.md', localSha: 'L', memoryId: X, expectedRemoteSha: 'B' }]);
  });

  it('push-only flush: nothing moves; a local edit goes to the memory by id, a conflict is named', () => {
    expect(flush(remoteRenamed('B', 'B')).actions).toEqual([]);
    expect(flush(remoteRenamed('L', 'B')).actions).toEqual([
      { type: 'update', path: '/a.md', localSha: 'L', memoryId: X, expectedRemoteSha: 'B' },
    ]);
    expect(flush(remoteRenamed('L', 'R')).actions).toEqual([{ type: 'note_conflict', path: '/a.md', storeSha: 'R', memoryId: X }]);
  });

  describe('falls back to the rows (delete + create) when in doubt', () => {
    const rows = ['delete_local /a.md', 'pull /b.md'];
    it('no id recorded for the baseline path: the file at the old path stays until a second listing misses it too', () => {
      const w = { ...remoteRenamed('B', 'B'), ids: {} };
      // Nothing says the memory at /b.md is the one /a.md had: /a.md's absence is one listing's.
      const once = rw(w, { absence: { gone: new Set(), held: new Set([X]), listing: 4, absentFrom: new Map() } });
      expect(types(once.actions)).toEqual(['pull /b.md']);
      expect(once.skipped).toEqual([expect.objectContaining({ path: '/a.md', code: 'absence_unconfirmed' })]);
      expect(once.absentFrom).toEqual(new Map([['/a.md', 4]]));
      const twice = rw(w, { absence: { gone: new Set(), held: new Set([X]), listing: 5, absentFrom: once.absentFrom } });
      expect(types(twice.actions)).toEqual(rows);
    });
    it('the new name is taken on disk (a file, or a folder of files)', () => {
      expect(types(rw({ ...remoteRenamed('B', 'B'), local: { '/a.md': 'B', '/b.md': 'B' } }).actions)).toEqual(['adopt /b.md', 'delete_local /a.md']);
      const folder = { ...remoteRenamed('B', 'B'), local: { '/a.md': 'B', '/b.md/x.md': 'Y' } };
      expect(rw(folder).actions.some((a) => a.type === 'rename_local')).toBe(false);
    });
    it('the new name is taken on disk by a new file, and the memory brought no content: both files kept and pushed, none pulled over', () => {
      // The memory holds the baseline's content (a pure rename, or the engine's own push landed
      // by id after it): pulling it over the agent's new file would replace the only copy of
      // that file with content the folder still holds at the old name.
      const plan = rw({ ...remoteRenamed('B', 'B'), local: { '/a.md': 'B', '/b.md': 'N' } });
      expect(plan.actions).toEqual([
        { type: 'update', path: '/b.md', localSha: 'N', memoryId: X, expectedRemoteSha: 'B' },
        { type: 'create', path: '/a.md', localSha: 'B', reason: 'recreate' },
      ]);
      // Edited at the old name too: that edit is the content created there.
      expect(types(rw({ ...remoteRenamed('B', 'B'), local: { '/a.md': 'L', '/b.md': 'N' } }).actions)).toEqual(['create /a.md', 'update /b.md']);
      // Another memory now at /a.md holding exactly the file there (the other writer copied it):
      // nothing to create; the agent's file still goes to the renamed memory.
      const copied = rw({ ...remoteRenamed('B', 'B'), local: { '/a.md': 'B', '/b.md': 'N' }, remote: { '/b.md': [X, 'B'], '/a.md': ['mem_y', 'B'] } });
      expect(types(copied.actions)).toEqual(['update /b.md']);
      // ... but holding other content: the rows judge both paths (the file at /a.md is pulled over, so it is no safe copy).
      const replaced = rw({ ...remoteRenamed('B', 'B'), local: { '/a.md': 'B', '/b.md': 'N' }, remote: { '/b.md': [X, 'B'], '/a.md': ['mem_y', 'C'] } });
      expect(replaced.actions.some((a) => a.type === 'update')).toBe(false);
      // The store edited the memory with the rename: its content is new, and the store wins at /b.md.
      expect(types(rw({ ...remoteRenamed('B', 'R'), local: { '/a.md': 'B', '/b.md': 'N' } }).actions)).toEqual(['delete_local /a.md', 'pull /b.md']);
      // Read-only: nothing is pushed; the rows decide.
      expect(rw({ ...remoteRenamed('B', 'B'), local: { '/a.md': 'B', '/b.md': 'N' } }, { access: 'read_only' }).actions.some((a) => a.type === 'update')).toBe(false);
    });
    it('a folder on the way to the new name is a file on disk', () => {
      const w: World = { baseline: { '/a.md': 'B' }, ids: { '/a.md': X }, local: { '/a.md': 'B', '/d': 'Y' }, remote: { '/d/b.md': [X, 'B'] } };
      expect(rw(w).actions.some((a) => a.type === 'rename_local')).toBe(false);
    });
    it('another memory now holds the old path (a swap)', () => {
      const w = { ...remoteRenamed('B', 'B'), remote: { '/b.md': [X, 'B'], '/a.md': ['mem_y', 'C'] } } as World;
      expect(rw(w).actions.some((a) => a.type === 'rename_local')).toBe(false);
    });
    it('the new path had a baseline of its own', () => {
      const w: World = { ...remoteRenamed('B', 'B'), baseline: { '/a.md': 'B', '/b.md': 'C' } };
      expect(rw(w).actions.some((a) => a.type === 'rename_local')).toBe(false);
    });
    it('the file was deleted locally: the memory is restored at its new name', () => {
      expect(types(rw({ ...remoteRenamed('B', 'B'), local: {} }).actions)).toEqual(['forget /a.md', 'pull /b.md']);
    });
    it('either path is behind a link or unreadable folder: hands off', () => {
      const w: World = { baseline: { '/a.md': 'B' }, ids: { '/a.md': X }, local: { '/a.md': 'B' }, remote: { '/d/b.md': [X, 'B'] }, blocked: { '/d': 'is a symlink' } };
      expect(types(rw(w).actions)).toEqual(['delete_local /a.md']);
    });
  });
});

/** The agent moved /a.md (memory X, content B) to /b.md. */
const localRenamed = (): World => ({
  baseline: { '/a.md': 'B' },
  ids: { '/a.md': X },
  local: { '/b.md': 'B' },
  remote: { '/a.md': [X, 'B'] },
});

describe('local rename: the memory follows in the store, id and history kept', () => {
  it('local_renamed: an update of the path, guarded by the content sha; not a deletion candidate', () => {
    const plan = rw(localRenamed());
    expect(plan.actions).toEqual([{ type: 'rename_remote', path: '/b.md', from: '/a.md', memoryId: X, sha: 'B' }]);
    expect(plan.missingSince.size).toBe(0);
    expect(plan.pendingDeletions).toEqual([]);
    // The flush sends it too (it is a push of the path).
    expect(flush(localRenamed()).actions).toEqual(plan.actions);
  });

  describe('deletions off (issue 18 item 6, SPEC 6.6): no path leaves the store, so a move is a create', () => {
    it('disabled: the new path is created, the old one a deletion candidate never sent; no rename', () => {
      const plan = rw(localRenamed(), { deletionMode: 'disabled', graceMs: 0 });
      expect(plan.actions).toEqual([{ type: 'create', path: '/b.md', localSha: 'B', reason: 'new_local' }]);
      expect(plan.pendingDeletions).toEqual(['/a.md']);
      expect([...plan.missingSince.keys()]).toEqual(['/a.md']);
      expect(flush(localRenamed(), { deletionMode: 'disabled' }).actions).toEqual([{ type: 'create', path: '/b.md', localSha: 'B', reason: 'new_local' }]);
    });

    it('log_only: the same, with the delete it would send logged, and a note of the rename it would have made', () => {
      const plan = rw(localRenamed(), { deletionMode: 'log_only', graceMs: 0 });
      expect(plan.actions).toEqual([
        { type: 'delete_remote', path: '/a.md', memoryId: X, expectedRemoteSha: 'B', mode: 'log_only' },
        { type: 'create', path: '/b.md', localSha: 'B', reason: 'new_local' },
        { type: 'note_move', path: '/b.md', from: '/a.md', sha: 'B' },
      ]);
      expect(plan.pendingDeletions).toEqual(['/a.md']);
      // The flush creates, sends no delete, and still notes the move.
      expect(flush(localRenamed(), { deletionMode: 'log_only' }).actions).toEqual([
        { type: 'create', path: '/b.md', localSha: 'B', reason: 'new_local' },
        { type: 'note_move', path: '/b.md', from: '/a.md', sha: 'B' },
      ]);
    });

    it('a remote rename is still followed on disk: it removes no path from the store', () => {
      for (const deletionMode of ['log_only', 'disabled'] as const) {
        expect(types(rw(remoteRenamed('B', 'B'), { deletionMode }).actions)).toEqual(['rename_local /b.md']);
      }
    });
  });

  describe('empty content carries no identity: never paired as a rename, in any mode', () => {
    const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    it.each(['enabled', 'log_only', 'disabled'] as const)('local, %s: an empty file moved is a create, the old path the rows judge', (deletionMode) => {
      const w: World = { baseline: { '/a.md': EMPTY }, ids: { '/a.md': X }, local: { '/b.md': EMPTY }, remote: { '/a.md': [X, EMPTY] } };
      const plan = rw(w, { deletionMode, graceMs: 30_000 });
      expect(types(plan.actions)).toEqual(['create /b.md']);
      expect(plan.pendingDeletions).toEqual(['/a.md']);
    });

    it('remote: a memory agreed empty renamed in the store is a local delete and a pull, not a move', () => {
      const w: World = { baseline: { '/a.md': EMPTY }, ids: { '/a.md': X }, local: { '/a.md': EMPTY }, remote: { '/b.md': [X, EMPTY] } };
      expect(types(rw(w).actions)).toEqual(['delete_local /a.md', 'pull /b.md']);
      // Written into meanwhile: the file is the only copy of what it now holds, so it is pushed back, never dropped.
      expect(types(rw({ ...w, local: { '/a.md': 'L' } }).actions)).toEqual(['create /a.md', 'pull /b.md']);
    });

    it('remote, moved alike on both sides onto an empty file: not taken for the same move', () => {
      const w: World = { baseline: { '/a.md': 'B' }, ids: { '/a.md': X }, local: { '/b.md': EMPTY }, remote: { '/b.md': [X, 'B'] } };
      expect(rw(w).actions.some((a) => a.type === 'rename_local')).toBe(false);
    });

    it('content that is not empty still pairs (the control)', () => {
      expect(types(rw(localRenamed()).actions)).toEqual(['rename_remote /b.md']);
      expect(types(rw(remoteRenamed('B', 'B')).actions)).toEqual(['rename_local /b.md']);
    });
  });

  it('works without a recorded id: the memory at the old path holding the baseline content is the one', () => {
    expect(rw({ ...localRenamed(), ids: {} }).actions).toEqual([{ type: 'rename_remote', path: '/b.md', from: '/a.md', memoryId: X, sha: 'B' }]);
  });

  it('read-only: never renamed in the store (the rows: the file stays gone, the new one kept)', () => {
    expect(types(ro(localRenamed()).actions)).toEqual(['keep_local /b.md']);
  });

  it('a folder moved as a whole: one rename per file', () => {
    const names = ['1.md', '2.md', '3.md'];
    const w: World = {
      baseline: Object.fromEntries(names.map((n) => [`/notes/${n}`, `S${n}`])),
      local: Object.fromEntries(names.map((n) => [`/archive/${n}`, `S${n}`])),
      remote: Object.fromEntries(names.map((n, i) => [`/notes/${n}`, [`mem_${i}`, `S${n}`]])),
    };
    expect(rw(w).actions).toEqual(
      names.map((n, i) => ({ type: 'rename_remote', path: `/archive/${n}`, from: `/notes/${n}`, memoryId: `mem_${i}`, sha: `S${n}` })),
    );
  });

  it('the same content more than once: paired by file name where the name is unique on both sides', () => {
    const w: World = {
      baseline: { '/n/a.md': 'E', '/n/b.md': 'E' },
      local: { '/x/a.md': 'E', '/x/b.md': 'E' },
      remote: { '/n/a.md': ['mem_a', 'E'], '/n/b.md': ['mem_b', 'E'] },
    };
    expect(rw(w).actions).toEqual([
      { type: 'rename_remote', path: '/x/a.md', from: '/n/a.md', memoryId: 'mem_a', sha: 'E' },
      { type: 'rename_remote', path: '/x/b.md', from: '/n/b.md', memoryId: 'mem_b', sha: 'E' },
    ]);
  });

  describe('falls back to the rows (delete candidate + create) when in doubt', () => {
    const noRename = (w: World, over: Partial<PlanInput> = {}) => expect(rw(w, over).actions.some((a) => a.type === 'rename_remote')).toBe(false);
    it('two candidates alike: two files of one content renamed to unrelated names', () => {
      const w: World = {
        baseline: { '/a.md': 'E', '/b.md': 'E' },
        local: { '/c.md': 'E', '/d.md': 'E' },
        remote: { '/a.md': ['mem_a', 'E'], '/b.md': ['mem_b', 'E'] },
      };
      const plan = rw(w);
      expect(types(plan.actions)).toEqual(['create /c.md', 'create /d.md']);
      expect(plan.pendingDeletions).toEqual(['/a.md', '/b.md']);
    });
    it('one vanished file, two new copies of it', () => {
      noRename({ ...localRenamed(), local: { '/b.md': 'B', '/c.md': 'B' } });
    });
    it('the memory changed in the store meanwhile: restored, and the new file created', () => {
      expect(types(rw({ ...localRenamed(), remote: { '/a.md': [X, 'R'] } }).actions)).toEqual(['create /b.md', 'pull /a.md']);
    });
    it('the store holds another memory at the old path than the baseline was agreed with', () => {
      noRename({ ...localRenamed(), remote: { '/a.md': ['mem_other', 'B'] } });
    });
    it('the new name is taken in the store', () => {
      noRename({ ...localRenamed(), remote: { '/a.md': [X, 'B'], '/b.md': ['mem_y', 'C'] } });
    });
    it('the new file cannot be pushed (path or content refused)', () => {
      noRename({ ...localRenamed(), local: { '/b.md': { sha: 'B', size: 1, mtimeMs: 0, unpushable: { code: 'bad_path', detail: 'path contains a backslash' } } } });
      noRename(localRenamed(), { refused: new Map([['/b.md', 'B']]) });
    });
    it('the old path is behind something the scan could not see', () => {
      noRename({ ...localRenamed(), baseline: { '/d/a.md': 'B' }, remote: { '/d/a.md': [X, 'B'] }, blocked: { '/d': 'is a symlink' } });
    });
  });
});

describe('baselineIdsAfter: the memory behind each baseline path, for the next pass', () => {
  it('takes the store’s id where it holds the baseline content, keeps the recorded one where it does not, drops paths gone from the baseline', () => {
    const ids = baselineIdsAfter(
      new Map([
        ['/same.md', 'B'],
        ['/edited.md', 'B'],
        ['/new-id.md', 'B'],
        ['/renamed-away.md', 'B'],
      ]),
      new Map([
        ['/same.md', 'm1'],
        ['/edited.md', 'm2'],
        ['/renamed-away.md', 'm4'],
        ['/dropped.md', 'm5'],
      ]),
      new Map([
        ['/same.md', { id: 'm1', sha: 'B' }],
        ['/edited.md', { id: 'm9', sha: 'R' }],
        ['/new-id.md', { id: 'm3', sha: 'C' }],
      ]),
    );
    expect(Object.fromEntries(ids)).toEqual({ '/same.md': 'm1', '/edited.md': 'm2', '/new-id.md': 'm3', '/renamed-away.md': 'm4' });
  });
});

describe('movedAlikeThenDeleted: the store moved a memory and deleted it there, the agent made the same move (B44)', () => {
  const base = {
    baseline: new Map([['/a.md', 'B']]),
    baselineIds: new Map([['/a.md', X]]),
    localFiles: new Map([['/e.md', { sha: 'B', size: 1, mtimeMs: 0 }]]),
    remote: new Map(),
    blocked: () => undefined,
    deletedAs: (id: string) => (id === X ? { path: '/e.md', sha: 'B' } : undefined),
  };
  it('claimed: the file at the new path holds the content the memory was deleted with', () => {
    expect(movedAlikeThenDeleted(base)).toEqual([{ from: '/a.md', to: '/e.md', memoryId: X, sha: 'B' }]);
  });
  it.each([
    ['an empty memory (no identity)', { baseline: new Map([['/a.md', EMPTY_SHA]]), localFiles: new Map([['/e.md', { sha: EMPTY_SHA, size: 0, mtimeMs: 0 }]]), deletedAs: () => ({ path: '/e.md', sha: EMPTY_SHA }) }],
    ['the new path has a baseline of its own', { baseline: new Map([['/a.md', 'B'], ['/e.md', 'B']]) }],
    ['another memory is at the new path', { remote: new Map([['/e.md', { id: 'mem_y', sha: 'B' }]]) }],
    ['a memory is at the old path', { remote: new Map([['/a.md', { id: 'mem_y', sha: 'B' }]]) }],
    ['the scan could not see the new path', { blocked: (path: string) => (path === '/e.md' ? 'a symlink' : undefined) }],
    ['no id recorded for the old path', { baselineIds: new Map() }],
  ])('not claimed: %s', (_, over) => {
    expect(movedAlikeThenDeleted({ ...base, ...over })).toEqual([]);
  });
  it('two baseline paths deleted as one new path: only the first claims it', () => {
    const two = { ...base, baseline: new Map([['/a.md', 'B'], ['/c.md', 'B']]), baselineIds: new Map([['/a.md', X], ['/c.md', 'mem_c']]), deletedAs: () => ({ path: '/e.md', sha: 'B' }) };
    expect(movedAlikeThenDeleted(two).map((m) => m.from)).toEqual(['/a.md']);
  });
});
