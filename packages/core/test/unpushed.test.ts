import { describe, expect, it } from 'vitest';
import type { StoreSyncReport } from '@memory-mounter/core';
import { emptyPassReport, emptySyncState } from '@memory-mounter/core/engine';
import { keptUnread, localChanges, scanAfterMoves, unpushedChanges, type LastScan, type LocalChange } from '../src/decide/unpushed.js';
import { pendingLocalChanges } from '../src/session/status.js';

/** What finalize names as not pushed, from the baseline and the last scan (SPEC 6.2). */

type Row = [
  label: string,
  baseline: Record<string, string>,
  files: Record<string, string>,
  expected: Record<string, LocalChange>,
  extra?: { atScan?: Record<string, string>; blocked?: string[] },
];

const map = (o: Record<string, string>) => new Map(Object.entries(o));
const filesOf = (o: Record<string, string>) => new Map(Object.entries(o).map(([p, sha]) => [p, { sha }]));

describe('localChanges', () => {
  const rows: Row[] = [
    ['nothing changed', { '/a.md': 'A' }, { '/a.md': 'A' }, {}],
    ['a file edited', { '/a.md': 'A' }, { '/a.md': 'A2' }, { '/a.md': 'edited' }],
    ['a new file', { '/a.md': 'A' }, { '/a.md': 'A', '/n.md': 'N' }, { '/n.md': 'new' }],
    ['a baseline file missing', { '/a.md': 'A', '/b.md': 'B' }, { '/a.md': 'A' }, { '/b.md': 'deleted' }],
    [
      'all three at once, sorted by path',
      { '/a.md': 'A', '/b.md': 'B', '/d/c.md': 'C' },
      { '/a.md': 'A2', '/d/c.md': 'C', '/d/n.md': 'N' },
      { '/a.md': 'edited', '/b.md': 'deleted', '/d/n.md': 'new' },
    ],
    ['an empty folder: every baseline file deleted', { '/a.md': 'A', '/b.md': 'B' }, {}, { '/a.md': 'deleted', '/b.md': 'deleted' }],
    ['pushed since the scan: the baseline holds the file now', { '/a.md': 'A2' }, { '/a.md': 'A2' }, {}, { atScan: { '/a.md': 'A' } }],
    ['pulled over since the scan: the file held the old baseline', { '/a.md': 'R' }, { '/a.md': 'A' }, {}, { atScan: { '/a.md': 'A' } }],
    ['edited, and the store moved on since: still an edit', { '/a.md': 'R' }, { '/a.md': 'A2' }, { '/a.md': 'edited' }, { atScan: { '/a.md': 'A' } }],
    ['new remote memory pulled since the scan: not a local deletion', { '/a.md': 'A', '/r.md': 'R' }, { '/a.md': 'A' }, {}, { atScan: { '/a.md': 'A' } }],
    ['created since the scan: in the baseline now', { '/n.md': 'N' }, { '/n.md': 'N' }, {}, { atScan: {} }],
    ['deleted remotely since the scan: out of the baseline', {}, {}, {}, { atScan: { '/b.md': 'B' } }],
    ['a blocked path is not known to be deleted', { '/a.md': 'A', '/l.md': 'L' }, { '/a.md': 'A' }, {}, { blocked: ['/l.md'] }],
    ['a file under a blocked folder is not known to be deleted', { '/d/c.md': 'C', '/b.md': 'B' }, {}, { '/b.md': 'deleted' }, { blocked: ['/d'] }],
    ['a blocked root hides everything', { '/a.md': 'A' }, {}, {}, { blocked: ['/'] }],
  ];
  it.each(rows)('%s', (_label, baseline, files, expected, extra = {}) => {
    const got = localChanges({
      baseline: map(baseline),
      files: filesOf(files),
      ...(extra.atScan && { baselineAtScan: map(extra.atScan) }),
      ...(extra.blocked && { blocked: new Map(extra.blocked.map((p) => [p, 'is a symlink'])) }),
    });
    expect(Object.fromEntries(got.map((c) => [c.path, c.change]))).toEqual(expected);
    expect(got.map((c) => c.path)).toEqual([...got.map((c) => c.path)].sort());
  });
});

describe("pendingLocalChanges (status()): localChanges' edits and new files, less what was pulled over or refused for good", () => {
  const atScan = { '/a.md': 'A', '/b.md': 'B', '/p.md': 'P', '/r.md': 'R', '/s.md': 'S', '/gone.md': 'G' };
  // At the scan: /a.md edited, /n.md new, /b.md unchanged, /gone.md missing (a deletion candidate),
  // /p.md and /q.md edited then pulled over, /r.md edited to content the store refuses,
  // /s.md edited and pushed since (the baseline holds it now).
  const files = { '/a.md': 'A2', '/n.md': 'N', '/b.md': 'B', '/p.md': 'P2', '/q.md': 'Q', '/r.md': 'R2', '/s.md': 'S2' };
  const scan: LastScan = { files: filesOf(files), blocked: new Map(), baseline: map(atScan) };
  const state = { ...emptySyncState(), baseline: map({ ...atScan, '/s.md': 'S2' }), refused: map({ '/r.md': 'R2' }) };

  it('counts each change still not in the store, and no deletion', () => {
    expect(pendingLocalChanges(state, scan, ['/p.md', '/q.md'])).toBe(2); // /a.md, /n.md
    expect(pendingLocalChanges(state, scan, [])).toBe(4); // and /p.md, /q.md
    expect(pendingLocalChanges({ ...state, refused: new Map() }, scan, [])).toBe(5); // and /r.md
    expect(pendingLocalChanges(state, null, [])).toBe(0);
  });

  it('a refusal of other content than the file holds now does not hide the change', () => {
    expect(pendingLocalChanges({ ...state, refused: map({ '/r.md': 'R1' }) }, scan, ['/p.md', '/q.md'])).toBe(3);
  });
});

function flushReport(over: Partial<StoreSyncReport>): StoreSyncReport {
  return {
    memoryStoreId: 'memstore_x',
    name: 'x',
    path: '/host/x',
    access: 'read_write',
    status: 'synced',
    ...emptyPassReport(),
    requests: { total: 0, reads: 0, writes: 0, retries: 0 },
    ...over,
  };
}

describe('scanAfterMoves', () => {
  const scan: LastScan = { files: filesOf({ '/g/h.md': 'EDIT', '/g/i.md': 'I', '/x.md': 'X' }), blocked: new Map(), baseline: map({ '/g/h.md': 'H', '/g/i.md': 'I', '/x.md': 'X' }) };

  it("moves each file the pass moved, with the baseline it was scanned against, to its new path", () => {
    const after = scanAfterMoves(scan, [{ from: '/g/h.md', to: '/d/h.md' }, { from: '/g/i.md', to: '/d/i.md' }]);
    expect([...after.files.keys()].sort()).toEqual(['/d/h.md', '/d/i.md', '/x.md']);
    expect(after.files.get('/d/h.md')).toEqual({ sha: 'EDIT' });
    expect(Object.fromEntries(after.baseline)).toEqual({ '/d/h.md': 'H', '/d/i.md': 'I', '/x.md': 'X' });
    // The edit moved with its file is named at the path it is at now.
    const flush = flushReport({ status: 'skipped', code: 'time_bound', reason: 'cut off' });
    expect(unpushedChanges(flush, map({ '/d/h.md': 'H', '/d/i.md': 'I', '/x.md': 'X' }), after).map((u) => u.path)).toEqual(['/d/h.md']);
  });

  it('leaves the scan as it is for a move it did not see (the file was already at its new path, or not scanned)', () => {
    const already: LastScan = { ...scan, files: filesOf({ '/d/h.md': 'EDIT', '/g/h.md': 'OTHER' }) };
    expect(scanAfterMoves(already, [{ from: '/g/h.md', to: '/d/h.md' }])).toBe(already);
    expect(scanAfterMoves(scan, [{ from: '/nowhere.md', to: '/d/n.md' }])).toBe(scan);
  });
});

describe('unpushedChanges', () => {
  const baseline = map({ '/a.md': 'A', '/b.md': 'B' });
  const scan: LastScan = { files: filesOf({ '/a.md': 'A2', '/n.md': 'N' }), blocked: new Map(), baseline };

  it('a flush that could not plan: every local difference, with the flush reason', () => {
    for (const flush of [
      flushReport({ status: 'failed', code: 'store_error', reason: 'store unauthorized: injected unauthorized on list' }),
      flushReport({ status: 'skipped', code: 'time_bound', reason: 'cut off by the time bound' }),
    ]) {
      const code = flush.code;
      expect(unpushedChanges(flush, baseline, scan)).toEqual([
        { path: '/a.md', code, reason: `edited locally; not pushed: ${flush.reason}` },
        { path: '/b.md', code, reason: `deleted locally; not pushed: ${flush.reason}` },
        { path: '/n.md', code, reason: `new local file; not pushed: ${flush.reason}` },
      ]);
    }
  });

  it('each path with a memory the baseline was agreed with names it; a new file names none', () => {
    const flush = flushReport({ status: 'failed', code: 'store_error', reason: 'store unavailable' });
    const ids = new Map([['/a.md', 'mem_a'], ['/b.md', 'mem_b']]);
    expect(unpushedChanges(flush, baseline, scan, ids).map(({ path, memoryId }) => ({ path, memoryId }))).toEqual([
      { path: '/a.md', memoryId: 'mem_a' },
      { path: '/b.md', memoryId: 'mem_b' },
      { path: '/n.md', memoryId: undefined },
    ]);
    expect(unpushedChanges(flush, baseline, scan, ids).find((u) => u.path === '/n.md')).not.toHaveProperty('memoryId');
  });

  it("a flush whose rename of a memory failed: the agent's rename is named (the content is in the store at the old path)", () => {
    const flush = flushReport({ errors: [{ path: '/b2.md', operation: 'rename_remote', kind: 'path_conflict', message: 'taken' }] });
    expect(unpushedChanges(flush, baseline, scan)).toEqual([{ path: '/b2.md', code: 'push_failed', reason: 'rename failed (path_conflict): taken' }]);
  });

  it('a flush that planned: what its report says was not sent, and why', () => {
    const flush = flushReport({
      errors: [
        { path: '/a.md', operation: 'push', kind: 'unavailable', message: 'store update timed out after 30s' },
        { path: '/p.md', operation: 'pull', kind: 'unavailable', message: 'not a push' },
      ],
      cutOff: ['/a.md', '/c.md'],
      refused: [{ path: '/big.md', code: 'too_large', reason: 'is larger than 102400 bytes' }],
      conflicts: ['/x.md'],
      skippedPaths: [
        { path: '/n.md', code: 'changed_during_sync', reason: 'changed on disk during the sync; left for the next pass' },
        { path: '/link.md', code: 'is_symlink', reason: 'is a symlink' },
      ],
    });
    expect(unpushedChanges(flush, baseline, scan)).toEqual([
      { path: '/a.md', code: 'push_failed', reason: 'push failed (unavailable): store update timed out after 30s' },
      { path: '/big.md', code: 'too_large', reason: 'refused: is larger than 102400 bytes' },
      { path: '/c.md', code: 'time_bound', reason: 'cut off by the time bound before it was sent' },
      { path: '/n.md', code: 'changed_during_sync', reason: 'skipped: changed on disk during the sync; left for the next pass' },
      { path: '/x.md', code: 'conflict', reason: 'conflict: the memory changed in the store too, and the store keeps its version' },
    ]);
  });

  it('nothing for a clean flush, a read-only store, or a folder skipped for another reason', () => {
    expect(unpushedChanges(flushReport({ pushed: ['/a.md', '/n.md'] }), map({ '/a.md': 'A2', '/n.md': 'N' }), scan)).toEqual([]);
    expect(unpushedChanges(flushReport({ access: 'read_only', status: 'failed', code: 'store_error', reason: 'x' }), baseline, scan)).toEqual([]);
    expect(unpushedChanges(flushReport({ status: 'skipped', code: 'distrusted', reason: 'folder not trusted: marker' }), baseline, scan)).toEqual([]);
  });

  it('a flush that found the folder wiped (and never re-downloads): the files made since, not the wiped ones', () => {
    const wiped = flushReport({
      status: 'skipped',
      code: 'folder_wiped',
      reason: 'every memory file is gone at once (folder wiped); a push-only flush does not re-download',
    });
    const afterWipe: LastScan = { files: filesOf({ '/g/h.md': 'H' }), blocked: new Map(), baseline };
    expect(unpushedChanges(wiped, baseline, afterWipe)).toEqual([{ path: '/g/h.md', code: 'folder_wiped', reason: `new local file; not pushed: ${wiped.reason}` }]);
  });

  it('no scan ever taken: nothing is known to name', () => {
    expect(unpushedChanges(flushReport({ status: 'failed', code: 'store_error', reason: 'x' }), baseline, null)).toEqual([]);
  });

  describe('what the scan could not read (SPEC 6.6: a change of unknown content)', () => {
    const blocked: LastScan['blocked'] = new Map([
      ['/b.md', { code: 'unreadable', detail: 'could not be read (EIO)' }],
      ['/d', { code: 'unreadable', detail: 'folder could not be read (EACCES)' }],
      ['/link.md', { code: 'is_symlink', detail: 'is a symlink' }],
      ['/bad', { code: 'bad_name', detail: 'has a name that is not UTF-8' }],
    ]);
    const unreadScan: LastScan = { files: filesOf({ '/a.md': 'A' }), blocked, baseline };
    const named = [
      { path: '/b.md', code: 'unreadable', reason: 'its content is unknown, so it was not pushed: /b.md could not be read (EIO)' },
      { path: '/d', code: 'unreadable', reason: 'its content is unknown, so it was not pushed: /d folder could not be read (EACCES)' },
    ];

    it('a flush that planned: each unreadable file or folder is named, links and bad names are not', () => {
      expect(unpushedChanges(flushReport({}), baseline, unreadScan)).toEqual(named);
      expect(keptUnread(named as never)).toBe(true);
    });

    it('a flush that could not plan: named beside the differences (a path it could not read is not known deleted)', () => {
      const flush = flushReport({ status: 'failed', code: 'store_error', reason: 'store unavailable' });
      const edited: LastScan = { ...unreadScan, files: filesOf({ '/a.md': 'A2' }) };
      expect(unpushedChanges(flush, baseline, edited)).toEqual([{ path: '/a.md', code: 'store_error', reason: 'edited locally; not pushed: store unavailable' }, ...named]);
    });

    it('a flush that could not read the folder at all names the folder itself, `/`', () => {
      const flush = flushReport({ status: 'failed', code: 'folder_unreadable', reason: 'the store folder could not be read (EACCES)' });
      const clean: LastScan = { files: filesOf({ '/a.md': 'A', '/b.md': 'B' }), blocked: new Map(), baseline };
      const got = unpushedChanges(flush, baseline, clean);
      expect(got).toEqual([{ path: '/', code: 'folder_unreadable', reason: expect.stringContaining('EACCES') }]);
      expect(keptUnread(got)).toBe(true);
      // With no scan ever taken too.
      expect(unpushedChanges(flush, baseline, null)).toEqual(got);
    });

    it('a read-only store names nothing: its local content is never pushed', () => {
      expect(unpushedChanges(flushReport({ access: 'read_only' }), baseline, unreadScan)).toEqual([]);
    });

    it('a push that failed on the disk failed reading its file: named `unreadable`, which keeps the folder', () => {
      const flush = flushReport({ errors: [{ path: '/a.md', operation: 'push', kind: 'filesystem', message: "EMFILE: too many open files, open '/x'" }] });
      const got = unpushedChanges(flush, baseline, scan);
      expect(got).toEqual([{ path: '/a.md', code: 'unreadable', reason: "could not be read to push it: EMFILE: too many open files, open '/x'" }]);
      expect(keptUnread(got)).toBe(true);
    });

    it('other reasons do not keep a folder unread', () => {
      expect(keptUnread([{ path: '/a.md', code: 'push_failed', reason: 'x' }, { path: '/c.md', code: 'time_bound', reason: 'y' }])).toBe(false);
    });
  });
});
