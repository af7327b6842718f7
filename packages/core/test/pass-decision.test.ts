import { describe, expect, it } from 'vitest';
import { decidePass, type PassDecisionInput } from '../src/decide/pass-decision.js';
import type { LocalFile } from '../src/local/scan.js';

const file = (sha: string): LocalFile => ({ sha, size: 1, mtimeMs: 0 }) as LocalFile;

function input(over: Partial<PassDecisionInput>): PassDecisionInput {
  return {
    access: 'read_write',
    deletionMode: 'enabled',
    now: 0,
    graceMs: 0,
    settleAfter: null,
    baseline: new Map(),
    unknownWrites: new Map(),
    cleared: null,
    pushOnly: false,
    localFiles: new Map(),
    localBlocked: new Map(),
    remote: new Map(),
    missingSince: new Map(),
    refused: new Map(),
    ...over,
  };
}

describe('the decide step of a pass', () => {
  it('a write of unknown outcome the store shows is the baseline the plan is made from: the newer edit is an update, not a conflict', () => {
    const d = decidePass(
      input({
        baseline: new Map([['/a.md', 'B']]),
        unknownWrites: new Map([['/a.md', 'S1']]),
        localFiles: new Map([['/a.md', file('S2')]]),
        remote: new Map([['/a.md', { id: 'm1', sha: 'S1' }]]),
      }),
    );
    expect(d.baseline.get('/a.md')).toBe('S1');
    expect(d.unknownWrites.size).toBe(0);
    expect(d.plan.transfers).toEqual([expect.objectContaining({ type: 'update', path: '/a.md', expectedRemoteSha: 'S1' })]);
  });

  it('a write the store does not show yet stays unknown, and the baseline stays as it was', () => {
    const d = decidePass(
      input({
        baseline: new Map([['/a.md', 'B']]),
        unknownWrites: new Map([['/a.md', 'S1']]),
        localFiles: new Map([['/a.md', file('S1')]]),
        remote: new Map([['/a.md', { id: 'm1', sha: 'B' }]]),
      }),
    );
    expect(d.baseline.get('/a.md')).toBe('B');
    expect([...d.unknownWrites]).toEqual([['/a.md', 'S1']]);
  });

  // The fleet (seed 4): a create answered 503 had landed; another worker pulled the memory, its
  // agent deleted the file, and that worker deleted the memory. Sent again, the create brought
  // the deleted content back (a resurrection). The feed had shown the memory holding exactly
  // that content at that path, then its deletion.
  const absence = (landed?: { path: string; sha: string; id: string }) => ({
    gone: new Set(landed ? [landed.id] : []),
    held: new Set<string>(),
    listing: 1,
    absentFrom: new Map(),
    landedThenDeleted: (path: string, sha: string) => (landed && path === landed.path && sha === landed.sha ? landed.id : undefined),
  });

  // The fleet (seed 2): the agent moved /a.md to /e.md; another worker had made the same move
  // in the store, and a third then deleted the memory there. Read as a new file, /e.md was
  // created again: the deleted memory back (B44).
  const movedThenDeleted = (deletedAs?: { path: string; sha: string }) => ({
    gone: new Set(['mx']),
    held: new Set<string>(),
    listing: 1,
    absentFrom: new Map(),
    deletedAs: (id: string) => (id === 'mx' ? deletedAs : undefined),
  });
  const moved = (over: Partial<PassDecisionInput>) =>
    input({ baseline: new Map([['/a.md', 'B']]), baselineIds: new Map([['/a.md', 'mx']]), localFiles: new Map([['/e.md', file('B')]]), ...over });

  it('a move the agent made alike, to where the store then deleted the memory: the baseline follows, and the deletion is followed there', () => {
    const d = decidePass(moved({ absence: movedThenDeleted({ path: '/e.md', sha: 'B' }) }));
    expect([...d.baseline]).toEqual([['/e.md', 'B']]);
    expect(d.plan.transfers).toEqual([expect.objectContaining({ type: 'delete_local', path: '/e.md', expectLocal: 'B' })]);
  });

  it.each([
    ['deleted at another path than the file', { absence: movedThenDeleted({ path: '/f.md', sha: 'B' }) }],
    ['deleted holding other content (edited, then deleted)', { absence: movedThenDeleted({ path: '/e.md', sha: 'R' }) }],
    ['the file edited with the move', { absence: movedThenDeleted({ path: '/e.md', sha: 'B' }), localFiles: new Map([['/e.md', file('L')]]) }],
    ['the file still at its old path too', { absence: movedThenDeleted({ path: '/e.md', sha: 'B' }), localFiles: new Map([['/a.md', file('B')], ['/e.md', file('B')]]) }],
    ['no word from the feed on where it was deleted', { absence: movedThenDeleted(undefined) }],
  ])('not claimed (%s): the new file is sent, never deleted', (_, over) => {
    const d = decidePass(moved(over));
    expect(d.plan.transfers.filter((t) => t.path === '/e.md').map((t) => t.type)).toEqual(['create']);
  });

  it('a create of unknown outcome whose content the store held at that path and then deleted: settled as landed, and the deletion stands', () => {
    const d = decidePass(
      input({
        unknownWrites: new Map([['/b.md', 'S1']]),
        localFiles: new Map([['/b.md', file('S1')]]),
        absence: absence({ path: '/b.md', sha: 'S1', id: 'm9' }),
      }),
    );
    expect(d.unknownWrites.size).toBe(0);
    expect(d.baseline.get('/b.md')).toBe('S1');
    expect(d.plan.transfers).toEqual([expect.objectContaining({ type: 'delete_local', path: '/b.md' })]);
  });

  it('the same, with the file edited since: the edit is kept and sent, not deleted', () => {
    const d = decidePass(
      input({
        unknownWrites: new Map([['/b.md', 'S1']]),
        localFiles: new Map([['/b.md', file('S2')]]),
        absence: absence({ path: '/b.md', sha: 'S1', id: 'm9' }),
      }),
    );
    expect(d.plan.transfers.map((t) => t.type)).not.toContain('delete_local');
    expect(d.plan.transfers).toEqual([expect.objectContaining({ path: '/b.md', localSha: 'S2' })]);
  });

  it('a create of unknown outcome the feed never showed: stays unknown and is sent again (the bytes are kept)', () => {
    const d = decidePass(
      input({
        unknownWrites: new Map([['/b.md', 'S1']]),
        localFiles: new Map([['/b.md', file('S1')]]),
        absence: absence({ path: '/b.md', sha: 'OTHER', id: 'm9' }),
      }),
    );
    expect([...d.unknownWrites]).toEqual([['/b.md', 'S1']]);
    expect(d.plan.transfers).toEqual([expect.objectContaining({ type: 'create', path: '/b.md' })]);
  });

  it('an entry a re-download cleared comes back for a file standing there, and the plan pushes the file', () => {
    const d = decidePass(
      input({
        cleared: new Map([['/a.md', 'A'], ['/b.md', 'B']]),
        localFiles: new Map([['/a.md', file('A2')]]),
        remote: new Map([['/a.md', { id: 'm1', sha: 'A' }], ['/b.md', { id: 'm2', sha: 'B' }]]),
      }),
    );
    expect(d.baseline.get('/a.md')).toBe('A');
    expect(d.cleared && [...d.cleared]).toEqual([['/b.md', 'B']]);
    expect(d.plan.transfers.map((t) => `${t.type} ${t.path}`).sort()).toEqual(['pull /b.md', 'update /a.md']);
  });

  it('a cleared entry the pass\'s view does not show waits (one listing can miss a memory), and comes back once the store shows it again (B46)', () => {
    const missed = decidePass(input({ cleared: new Map([['/g/h.md', 'H']]), localFiles: new Map([['/g/h.md', file('H2')]]) }));
    expect(missed.cleared && [...missed.cleared]).toEqual([['/g/h.md', 'H']]);
    expect(missed.baseline.has('/g/h.md')).toBe(false);
    const shown = decidePass(input({ cleared: missed.cleared, localFiles: new Map([['/g/h.md', file('H2')]]), remote: new Map([['/g/h.md', { id: 'm1', sha: 'H' }]]) }));
    expect(shown.baseline.get('/g/h.md')).toBe('H');
    expect(shown.plan.transfers).toEqual([expect.objectContaining({ type: 'update', path: '/g/h.md', expectedRemoteSha: 'H' })]);
    // Other content there: moot, and the rows judge the file as new against it.
    const other = decidePass(input({ cleared: missed.cleared, localFiles: new Map([['/g/h.md', file('H2')]]), remote: new Map([['/g/h.md', { id: 'm1', sha: 'R' }]]) }));
    expect(other.cleared).toBeNull();
  });

  it('a push-only pass keeps only the plan\'s pushes; its full plan is kept beside', () => {
    const d = decidePass(
      input({
        pushOnly: true,
        baseline: new Map([['/a.md', 'A']]),
        localFiles: new Map([['/a.md', file('A')], ['/n.md', file('N')]]),
        remote: new Map([['/a.md', { id: 'm1', sha: 'A2' }]]),
      }),
    );
    expect(d.full.transfers.map((t) => t.type).sort()).toEqual(['create', 'pull']);
    expect(d.plan.transfers.map((t) => t.type)).toEqual(['create']);
  });

  it('a step that changes nothing gives back the very maps it was given', () => {
    const baseline = new Map([['/a.md', 'A']]);
    const unknownWrites = new Map<string, string>();
    const d = decidePass(input({ baseline, unknownWrites, localFiles: new Map([['/a.md', file('A')]]), remote: new Map([['/a.md', { id: 'm1', sha: 'A' }]]) }));
    expect(d.baseline).toBe(baseline);
    expect(d.unknownWrites).toBe(unknownWrites);
    expect(d.plan.transfers).toEqual([]);
  });
});
