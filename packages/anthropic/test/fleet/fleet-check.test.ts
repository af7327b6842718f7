import type { VersionRecord } from '@memory-mounter/testing';
import { describe, expect, it } from 'vitest';
import { checkFleet, type FleetRun } from './fleet-check.js';
import type { JournalEntry, PassSummary } from './fleet-journal.js';

// The fleet checker on hand-made journals: each verdict it can give, and the cases it must let
// pass, so that a fleet run's verdict is the checker's rules and not an accident of one run.

const sha = (name: string) => name.padEnd(64, '0');
let versionIds = 0;
/** Versions are given oldest first here; the server's list is newest first. */
const history = (...versions: Omit<VersionRecord, 'id' | 'content' | 'content_size_bytes' | 'created_by' | 'redacted_at' | 'redacted_by'>[]) =>
  versions
    .map((v) => ({ ...v, id: `ver_${versionIds++}`, content: null, content_size_bytes: null, created_by: null, redacted_at: null, redacted_by: null }))
    .reverse();
const at = (ms: number) => new Date(ms).toISOString();
const report = (fields: Partial<PassSummary>): PassSummary => ({ status: 'synced', pushed: [], pulled: [], deletedLocal: [], deletedRemote: [], renamed: [], conflicts: [], errors: 0, ...fields });
const pass = (n: number, start: number, end: number, fields: Partial<PassSummary> = {}): JournalEntry[] => [
  { type: 'pass_start', n, t: start, phase: 'reconcile', requests: 0 },
  { type: 'pass', n, t: end, phase: 'reconcile', requests: 5, report: report(fields) },
];
const materialize: JournalEntry = { type: 'materialize', start: 0, end: 10 };
const finalized: JournalEntry = { type: 'finalized', t: 10_000, unpushed: [], requests: 0 };

function run(journals: JournalEntry[][], versions: VersionRecord[], finalStore: Record<string, string> = {}): FleetRun {
  return { journals, versions, finalStore, materialized: finalStore, finalShas: {} };
}

const kinds = (r: FleetRun) => checkFleet(r).problems.map((p) => `${p.kind} ${p.path}`);

describe('fleet checker', () => {
  it('takes a write in the history, one replaced before any pass, and a conflict loser; calls the rest lost', () => {
    const journal: JournalEntry[] = [
      materialize,
      { type: 'write', t: 20, passes: 0, path: '/a.md', sha: sha('a1') },
      { type: 'write', t: 30, passes: 0, path: '/b.md', sha: sha('b1') },
      { type: 'write', t: 40, passes: 0, path: '/b.md', sha: sha('b2') },
      { type: 'write', t: 50, passes: 0, path: '/c.md', sha: sha('c1') },
      { type: 'write', t: 60, passes: 0, path: '/d.md', sha: sha('d1') },
      { type: 'conflict', t: 110, path: '/c.md', storeSha: sha('x1'), localSha: sha('c1') },
      ...pass(0, 100, 200, { pushed: ['/a.md', '/b.md'], conflicts: ['/c.md'] }),
      finalized,
    ];
    const versions = history(
      { memory_id: 'm0', operation: 'created', path: '/c.md', content_sha256: sha('x1'), created_at: at(5) },
      { memory_id: 'm1', operation: 'created', path: '/a.md', content_sha256: sha('a1'), created_at: at(120) },
      { memory_id: 'm2', operation: 'created', path: '/b.md', content_sha256: sha('b2'), created_at: at(130) },
    );
    const verdict = checkFleet(run([journal], versions));
    expect(verdict.problems.map((p) => `${p.kind} ${p.path}`)).toEqual(['lost /d.md']);
    expect(verdict).toMatchObject({ agentWrites: 5, inHistory: 2, supersededBeforeSync: 1, conflictLosers: 1 });
  });

  it('a write a pass saw (its push failed) and the agent then replaced is not lost; one a pass pushed nowhere is', () => {
    const journal = (second: Partial<PassSummary>): JournalEntry[] => [
      materialize,
      { type: 'write', t: 20, passes: 0, path: '/a.md', sha: sha('a1') },
      ...pass(0, 100, 200, { errors: 1, ...second }),
      { type: 'write', t: 300, passes: 1, path: '/a.md', sha: sha('a2') },
      ...pass(1, 400, 500, { pushed: ['/a.md'] }),
      finalized,
    ];
    const versions = history({ memory_id: 'm1', operation: 'created', path: '/a.md', content_sha256: sha('a2'), created_at: at(450) });
    expect(kinds(run([journal({})], versions))).toEqual([]);
    // A pass that pulled over the path without a conflict took the first write away: lost.
    expect(kinds(run([journal({ pulled: ['/a.md'] })], versions))).toEqual(['lost /a.md']);
  });

  it('follows a local rename of the engine: the agent replacing the moved file replaced its content', () => {
    const journal: JournalEntry[] = [
      materialize,
      { type: 'write', t: 20, passes: 0, path: '/a.md', sha: sha('a1') },
      ...pass(0, 100, 200, { renamed: [{ from: '/a.md', to: '/b.md', side: 'local' }], errors: 1 }),
      { type: 'write', t: 300, passes: 1, path: '/b.md', sha: sha('b1') },
      ...pass(1, 400, 500, { pushed: ['/b.md'] }),
      finalized,
    ];
    const versions = history({ memory_id: 'm1', operation: 'created', path: '/b.md', content_sha256: sha('b1'), created_at: at(450) });
    expect(kinds(run([journal], versions))).toEqual([]);
  });

  it("the agent's file moved alike with a remote rename, its content's push at the new path failed: the agent replacing it there replaced unsynced content", () => {
    const journal = (errorPaths: string[]): JournalEntry[] => [
      materialize,
      { type: 'write', t: 20, passes: 0, path: '/a.md', sha: sha('a1') },
      { type: 'rename', t: 30, passes: 0, path: '/a.md', to: '/b.md', sha: sha('a1') },
      // The store renamed the memory alike; the pass followed it (alreadyMoved), and the push of
      // the agent's content at /b.md failed.
      ...pass(0, 100, 200, { renamed: [{ from: '/a.md', to: '/b.md', side: 'local' }], errors: errorPaths.length, errorPaths }),
      { type: 'write', t: 300, passes: 1, path: '/b.md', sha: sha('b1') },
      ...pass(1, 400, 500, { pushed: ['/b.md'] }),
      finalized,
    ];
    const versions = history({ memory_id: 'm1', operation: 'modified', path: '/b.md', content_sha256: sha('b1'), created_at: at(450) });
    expect(kinds(run([journal(['/b.md'])], versions))).toEqual([]);
    // Had the rename's pass synced /b.md (no failure there), the first content would be lost.
    expect(kinds(run([journal([])], versions))).toEqual(['lost /b.md']);
  });

  it('a conflict is false when, since the last sync of the path, only this worker wrote it', () => {
    const journal = (own: boolean): JournalEntry[] => [
      materialize,
      { type: 'write', t: 20, passes: 0, path: '/a.md', sha: sha('a1') },
      // The create landed, its answer was lost: the call failed.
      { type: 'request', op: 'create', path: '/a.md', sha: sha('a1'), start: 110, end: 130, ok: false },
      ...pass(0, 100, 200, { errors: 1 }),
      { type: 'write', t: 300, passes: 1, path: '/a.md', sha: sha('a2') },
      { type: 'conflict', t: 450, path: '/a.md', storeSha: sha(own ? 'a1' : 'o1'), localSha: sha('a2') },
      ...pass(1, 400, 500, { conflicts: ['/a.md'], pulled: ['/a.md'] }),
      finalized,
    ];
    const mine = history({ memory_id: 'm1', operation: 'created', path: '/a.md', content_sha256: sha('a1'), created_at: at(120) });
    expect(kinds(run([journal(true)], mine))).toEqual(['false_conflict /a.md']);
    // Another writer's version at the path in that time: a real conflict.
    const theirs = history(
      { memory_id: 'm1', operation: 'created', path: '/a.md', content_sha256: sha('a1'), created_at: at(120) },
      { memory_id: 'm1', operation: 'modified', path: '/a.md', content_sha256: sha('o1'), created_at: at(350) },
    );
    expect(kinds(run([journal(false)], theirs))).toEqual([]);
  });

  it('a deleted memory put back at its path with the same content is resurrected; so is a delete that never took', () => {
    const deleter: JournalEntry[] = [materialize, { type: 'delete', t: 20, passes: 0, path: '/a.md', sha: sha('a1') }, ...pass(0, 100, 200, { deletedRemote: ['/a.md'] }), finalized];
    const created = { memory_id: 'm1', operation: 'created' as const, path: '/a.md', content_sha256: sha('a1'), created_at: at(5) };
    const deleted = { memory_id: 'm1', operation: 'deleted' as const, path: '/a.md', content_sha256: null, created_at: at(150) };
    const back = { memory_id: 'm2', operation: 'created' as const, path: '/a.md', content_sha256: sha('a1'), created_at: at(300) };
    expect(kinds(run([deleter], history(created, deleted)))).toEqual([]);
    expect(kinds(run([deleter], history(created, deleted, back)))).toEqual(['resurrected /a.md']);
    const undone = run([deleter], history(created), { '/a.md': 'a1' });
    undone.finalShas = { '/a.md': sha('a1') };
    expect(kinds(undone)).toEqual(['delete_undone /a.md']);
  });

  it('a fresh materialize that differs from the store is reported', () => {
    const r = run([[materialize, finalized]], [], { '/a.md': 'x' });
    r.materialized = { '/a.md': 'y' };
    expect(kinds(r)).toEqual(['materialize_mismatch /a.md']);
  });
});
