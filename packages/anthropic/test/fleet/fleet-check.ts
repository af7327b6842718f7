import type { VersionRecord } from '@memory-mounter/testing';
import type { JournalEntry } from './fleet-journal.js';

/**
 * The fleet test's verdict, a pure function of what the run left: every worker's journal, the
 * store's version history, the store at the end, and what a fresh materialize wrote.
 *
 *  F1 a fresh materialize equals the store;
 *  F2 no agent write is lost: each one (and each file an agent moved, at its new path) is in the
 *     version history (by sha: contents are unique), or the same agent replaced, deleted or
 *     moved it before any pass of its worker synced that path (pushed, pulled, deleted,
 *     renamed it or lost a conflict there: a push that failed syncs nothing; the path follows
 *     the engine's own local renames), or its worker named it the loser of
 *     a conflict (`localSha` of a conflict event; or, for finalize's push-only flush, which emits
 *     none, `unpushed` code `conflict` at the path the agent last put it). A write not found is
 *     `lost`, with the worker's finalize `unpushed` code when finalize named it;
 *  F3 no false conflict: a conflict is real only when some other writer changed the path (a
 *     version at it, or moved away from it) since this worker last synced it, that is since the
 *     start of its last pass that pushed, pulled, deleted, renamed or lost a conflict at that
 *     path (or its materialize). A version counts as the worker's own when one of its write
 *     calls was in flight at that moment and matches it (the memory, the path, the sha);
 *  F4 no resurrected delete: once the store has deleted a memory at a path, no later version puts
 *     the same content back at that path, unless an agent itself moved that content there after
 *     the delete; and no content an agent deleted at a path is still there at the end, unless an
 *     agent moved it there later or the deleting worker's finalize named the path unpushed.
 */
export interface FleetRun {
  /** One journal per worker, by worker index. */
  journals: JournalEntry[][];
  /** `MemoryApiServer.versions(store)`: newest first. */
  versions: VersionRecord[];
  finalStore: Record<string, string>;
  materialized: Record<string, string>;
  /** sha256 of each final store content, by path (the checker compares shas with journals). */
  finalShas: Record<string, string>;
}

export type ProblemKind = 'materialize_mismatch' | 'lost' | 'false_conflict' | 'resurrected' | 'delete_undone';

export interface Problem {
  kind: ProblemKind;
  worker?: number;
  path: string;
  detail: string;
}

export interface FleetVerdict {
  problems: Problem[];
  agentWrites: number;
  inHistory: number;
  supersededBeforeSync: number;
  conflictLosers: number;
  conflicts: number;
  agentDeletes: number;
  agentRenames: number;
  passes: number;
  /** HTTP requests (SDK retries included) of every pass, finalize's two counted as one. */
  passRequests: number[];
  /** ms from one worker's `pushed` to another's `pulled` of that sha, one per pair observed. */
  propagationMs: number[];
}

interface Version extends VersionRecord {
  ms: number;
  /** Where the memory was before this version (undefined for a create). */
  previousPath: string | undefined;
  /** The content sha the memory had before this version. */
  previousSha: string | null;
}

/** Oldest first, each with where the memory stood before it. */
function chronological(versions: VersionRecord[]): Version[] {
  const state = new Map<string, { path: string | null; sha: string | null }>();
  return [...versions].reverse().map((v) => {
    const before = state.get(v.memory_id);
    state.set(v.memory_id, { path: v.path, sha: v.content_sha256 });
    return { ...v, ms: Date.parse(v.created_at), previousPath: before?.path ?? undefined, previousSha: before?.sha ?? null };
  });
}

type Request = Extract<JournalEntry, { type: 'request' }>;

/** Whether `v` is the effect of `r` (1 ms of slack: version times are ms, like Date.now). */
function madeBy(v: Version, r: Request): boolean {
  if (v.ms < r.start - 1 || v.ms > r.end + 1) return false;
  if (r.op === 'create') return v.operation === 'created' && v.path === r.path && v.content_sha256 === r.sha;
  if (v.memory_id !== r.memoryId) return false;
  if (r.op === 'delete') return v.operation === 'deleted';
  return v.operation === 'modified' && (r.sha === undefined || v.content_sha256 === r.sha) && (r.newPath === undefined || v.path === r.newPath);
}

export function checkFleet(run: FleetRun): FleetVerdict {
  const problems: Problem[] = [];
  const versions = chronological(run.versions);
  const historyShas = new Set(versions.map((v) => v.content_sha256).filter((s): s is string => s !== null));

  // F1
  const keys = new Set([...Object.keys(run.finalStore), ...Object.keys(run.materialized)]);
  for (const path of keys) {
    if (run.finalStore[path] !== run.materialized[path]) {
      problems.push({ kind: 'materialize_mismatch', path, detail: `store ${describe(run.finalStore[path])}, materialized ${describe(run.materialized[path])}` });
    }
  }

  let agentWrites = 0;
  let inHistory = 0;
  let supersededBeforeSync = 0;
  let conflictLosers = 0;
  let conflicts = 0;
  let agentDeletes = 0;
  let agentRenames = 0;
  let passes = 0;
  const passRequests: number[] = [];

  run.journals.forEach((journal, worker) => {
    const steps = journal.filter((e): e is Extract<JournalEntry, { type: 'write' | 'delete' | 'rename' }> => e.type === 'write' || e.type === 'delete' || e.type === 'rename');
    const finalized = journal.find((e): e is Extract<JournalEntry, { type: 'finalized' }> => e.type === 'finalized');
    const unpushed = new Map((finalized?.unpushed ?? []).map((u) => [u.path, u.code]));
    const passEnds = journal.filter((e): e is Extract<JournalEntry, { type: 'pass' }> => e.type === 'pass');
    // A conflict met by finalize's push-only flush emits no event (the file is not replaced): it
    // is named in `unpushed` with code `conflict`, and the loser is what the agent last put there.
    const flushEnd = passEnds.find((p) => p.phase === 'flush')?.t ?? finalized?.t ?? Infinity;
    const flushConflicts = [...unpushed].flatMap(([path, code]) => {
      const last = steps.filter((s) => s.path === path || (s.type === 'rename' && s.to === path)).at(-1);
      if (code !== 'conflict' || !last || (last.type !== 'write' && last.path === path)) return [];
      return [{ type: 'conflict' as const, t: flushEnd, path, storeSha: '', localSha: last.sha }];
    });
    const conflictEvents = [...journal.filter((e): e is Extract<JournalEntry, { type: 'conflict' }> => e.type === 'conflict'), ...flushConflicts];
    const losers = new Set(conflictEvents.map((c) => c.localSha));
    const passStarts = new Map(journal.filter((e): e is Extract<JournalEntry, { type: 'pass_start' }> => e.type === 'pass_start').map((e) => [e.n, e.t]));
    passes += passEnds.filter((p) => p.phase !== 'flush').length;
    for (const p of passEnds) if (p.phase !== 'flush') passRequests.push(p.requests);
    agentDeletes += steps.filter((s) => s.type === 'delete').length;
    agentRenames += steps.filter((s) => s.type === 'rename').length;

    // F2: each content the agent put somewhere, and what happened to it.
    steps.forEach((step, i) => {
      if (step.type === 'delete') return;
      const path = step.type === 'rename' ? step.to : step.path;
      if (step.type === 'write') agentWrites++;
      if (historyShas.has(step.sha)) {
        if (step.type === 'write') inHistory++;
        return;
      }
      if (replacedBeforeSync(steps.slice(i + 1), passEnds, path, step.passes)) {
        if (step.type === 'write') supersededBeforeSync++;
        return;
      }
      if (losers.has(step.sha)) {
        if (step.type === 'write') conflictLosers++;
        return;
      }
      const code = unpushed.get(path);
      problems.push({
        kind: 'lost',
        worker,
        path,
        detail: `${step.type} ${step.sha.slice(0, 8)} at ${step.t} (after pass ${step.passes}) is in no version, was not replaced before a pass, lost no conflict${code ? `; finalize named it unpushed (${code})` : '; finalize did not name it'}`,
      });
    });

    // F3
    const requests = journal.filter((e): e is Request => e.type === 'request');
    const own = (v: Version) => requests.some((r) => madeBy(v, r));
    const passOf = (t: number) => passEnds.find((p) => (passStarts.get(p.n) ?? Infinity) <= t && t <= p.t);
    const materialized = journal.find((e): e is Extract<JournalEntry, { type: 'materialize' }> => e.type === 'materialize');
    for (const c of conflictEvents) {
      conflicts++;
      const pass = passOf(c.t);
      const touched = passEnds.filter((p) => p.n < (pass?.n ?? Infinity) && p.report && touches(p.report, c.path));
      const lastSync = touched.at(-1);
      const since = lastSync ? passStarts.get(lastSync.n)! : (materialized?.start ?? 0);
      const others = versions.filter((v) => v.ms >= since - 1 && v.ms <= c.t + 1 && (v.path === c.path || v.previousPath === c.path) && !own(v));
      if (others.length === 0) {
        const mine = versions.filter((v) => v.ms >= since - 1 && v.ms <= c.t + 1 && (v.path === c.path || v.previousPath === c.path));
        problems.push({
          kind: 'false_conflict',
          worker,
          path: c.path,
          detail: `conflict at ${c.t} (pass ${pass?.n ?? '?'}, ${pass?.phase ?? '?'}): local ${c.localSha.slice(0, 8)} lost to store ${c.storeSha.slice(0, 8) || '(finalize flush)'}; since ${since} (${lastSync ? `pass ${lastSync.n}` : 'materialize'}) the path had only this worker's versions: ${mine.map((v) => `${v.operation} ${v.content_sha256?.slice(0, 8) ?? '-'}`).join(', ') || 'none'}`,
        });
      }
    }
  });

  // F4, in the store: content deleted at a path and put back there later.
  const placedAfter = (path: string, sha: string, t: number) =>
    run.journals.some((j) => j.some((e) => e.type === 'rename' && e.to === path && e.sha === sha && e.t >= t));
  for (const d of versions) {
    if (d.operation !== 'deleted' || d.path === null || d.previousSha === null) continue;
    const back = versions.find((v) => v.ms >= d.ms && v !== d && versions.indexOf(v) > versions.indexOf(d) && v.operation !== 'deleted' && v.path === d.path && v.content_sha256 === d.previousSha);
    if (back && !placedAfter(d.path, d.previousSha, d.ms)) {
      problems.push({ kind: 'resurrected', path: d.path, detail: `${d.previousSha.slice(0, 8)} deleted at ${d.ms}, ${back.operation} again at ${back.ms}` });
    }
  }
  // F4, at the end: content an agent deleted still at its path, no delete in the store after it.
  run.journals.forEach((journal, worker) => {
    const finalized = journal.find((e): e is Extract<JournalEntry, { type: 'finalized' }> => e.type === 'finalized');
    for (const step of journal) {
      if (step.type !== 'delete' || run.finalShas[step.path] !== step.sha) continue;
      if (placedAfter(step.path, step.sha, step.t)) continue;
      if (finalized?.unpushed.some((u) => u.path === step.path)) continue;
      const deletedLater = versions.some((v) => v.operation === 'deleted' && v.path === step.path && v.previousSha === step.sha && v.ms >= step.t);
      if (deletedLater) continue; // reported above as resurrected
      problems.push({ kind: 'delete_undone', worker, path: step.path, detail: `the agent deleted ${step.sha.slice(0, 8)} at ${step.t}; it is still in the store` });
    }
  });

  return {
    problems,
    agentWrites,
    inHistory,
    supersededBeforeSync,
    conflictLosers,
    conflicts,
    agentDeletes,
    agentRenames,
    passes,
    passRequests,
    propagationMs: propagation(run.journals),
  };
}

/**
 * Whether the agent's next step at the content's path replaced, deleted or moved it before any
 * pass synced that path: the passes between name it nowhere (a pass that only failed to push it
 * did not take it). The path follows the engine's local renames (a file moved on disk after the
 * store renamed its memory carries the agent's content along).
 */
function replacedBeforeSync(later: Extract<JournalEntry, { type: 'write' | 'delete' | 'rename' }>[], passEnds: Extract<JournalEntry, { type: 'pass' }>[], path: string, passes: number): boolean {
  let where = path;
  let from = passes;
  for (const step of later) {
    for (const pass of passEnds) {
      if (pass.n < from || pass.n >= step.passes || !pass.report) continue;
      const moved = pass.report.renamed.find((r) => r.side === 'local' && r.from === where);
      if (moved) where = moved.to;
      if (touches({ ...pass.report, renamed: pass.report.renamed.filter((r) => r !== moved) }, where)) return false;
    }
    from = step.passes;
    if (step.path === where) return true;
  }
  return false;
}

function touches(report: NonNullable<Extract<JournalEntry, { type: 'pass' }>['report']>, path: string): boolean {
  return (
    report.pushed.includes(path) ||
    report.pulled.includes(path) ||
    report.deletedLocal.includes(path) ||
    report.deletedRemote.includes(path) ||
    report.conflicts.includes(path) ||
    // A rename followed on disk whose follow-up push at the new path failed moved the file, not
    // its content: the agent's edit there was not synced by it.
    report.renamed.some((r) => (r.from === path || r.to === path) && !(report.errorPaths ?? []).includes(path))
  );
}

/** For each push, how long until each other worker pulled that content (when it did). */
function propagation(journals: JournalEntry[][]): number[] {
  const pulls = journals.map((j) => {
    const first = new Map<string, number>();
    for (const e of j) if (e.type === 'pulled' && !first.has(e.sha)) first.set(e.sha, e.t);
    return first;
  });
  const delays: number[] = [];
  journals.forEach((journal, worker) => {
    for (const e of journal) {
      if (e.type !== 'pushed') continue;
      pulls.forEach((seen, other) => {
        const t = other === worker ? undefined : seen.get(e.sha);
        if (t !== undefined) delays.push(Math.max(0, t - e.t));
      });
    }
  });
  return delays;
}

function describe(content: string | undefined): string {
  return content === undefined ? 'absent' : `${JSON.stringify(content.slice(0, 40))}…`;
}

/** The q-quantile of `values` (nearest rank), or NaN for none. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
