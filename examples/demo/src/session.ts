import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  MemoryMounter,
  MemoryWriteRefusedError,
  type MemoryStoreResource,
  type MountedStore,
  type StoreSyncReport,
  type SyncReport,
} from '@memory-mounter/core';
import type { Backend, DemoStore } from './backends.js';
import type { ManualClock } from './clock.js';
import type { Expectations } from './expectations.js';
import * as text from './fixtures.js';
import { finalizeLines, plural, syncLines } from './report-lines.js';
import { timelineLogger, type Timeline } from './timeline.js';
import { treeLines } from './tree.js';

export interface SessionContext {
  backend: Backend;
  /** Stands for `/mnt/memory`: an empty folder the caller made and will remove. */
  memoryRoot: string;
  clock: ManualClock;
  timeline: Timeline;
  expect: Expectations;
}

/** What the session should leave behind, for the end-state check. */
export interface ExpectedEnd {
  teamNotes: Record<string, string>;
  /** The read-only store as it was before the session; `null` when there is none. */
  styleGuide: Record<string, string> | null;
  /** Host folders of the mounts, which finalize must have removed. */
  mountFolders: string[];
}

const SYNC_INTERVAL_S = 15;
const DELETE_GRACE_S = 30;

/**
 * The scripted self-hosted session: what a worker and its agent do, step by step, through
 * MemoryMounter on the real disk. It checks each step's report as it goes (into `expect`) and
 * returns what the stores should hold at the end. Backend-neutral: every store path goes
 * through the store's prefix, every store access through the backend.
 */
export async function runSession(ctx: SessionContext): Promise<ExpectedEnd> {
  const { backend, memoryRoot, clock, timeline, expect } = ctx;
  const team = backend.teamNotes;
  const style = backend.styleGuide;
  const at = (path: string) => team.prefix + path;
  const expected: Record<string, string> = {};

  // 1. The stores as the session finds them.
  const teamSeed = prefixed(team, text.TEAM_NOTES_SEED);
  await backend.seed(team, teamSeed);
  Object.assign(expected, teamSeed);
  timeline.event('setup', `seeded ${team.name} (${team.id}): ${count(teamSeed)}`);
  if (style?.seeded) {
    await backend.seed(style, prefixed(style, text.STYLE_GUIDE_SEED));
    timeline.event('setup', `seeded ${style.name} (${style.id}): ${count(text.STYLE_GUIDE_SEED)}`);
  }
  if (style && !style.seeded) timeline.event('setup', `${style.name} is ${style.id}, used as it is and never written`);
  if (!style) timeline.event('setup', 'no MEMORY_STORE_ID_READ_ONLY: the read-only store part is skipped');
  const styleBefore = style ? await backend.snapshot(style) : null;

  // 2. Materialize, before the agent's first tool call.
  const names = new Map([team, ...(style ? [style] : [])].map((s) => [s.id, s.name]));
  const mounter = new MemoryMounter({
    storeClient: backend.storeClient,
    memoryRoot,
    memory_sync_interval: SYNC_INTERVAL_S,
    deleteGracePeriod: DELETE_GRACE_S,
    // The scripted agent writes whole files between syncs: nothing is ever mid-write, so a new
    // file need not rest a second before it is pushed (a live agent's would, by default).
    newFileSettle: 0,
    now: clock.now,
    logger: timelineLogger(timeline, (id) => names.get(id) ?? id),
  });
  const mounts = await mounter.materialize([
    resource(team, 'read_write'),
    ...(style ? [resource(style, 'read_only')] : []),
  ]);
  timeline.event('mounter', `materialize(): ${plural(mounts.length, 'store')} mounted (as the agent sees them → on this host)`);
  for (const mount of mounts) {
    timeline.detail(`${mount.mountPath}/  (${mount.access})  →  ${mount.path}/`);
    for (const line of await treeLines(mount.path)) timeline.detail(`  ${line}`);
  }
  const teamMount = mounts.find((m) => m.memoryStoreId === team.id)!;
  const styleMount = mounts.find((m) => m.memoryStoreId === style?.id);
  const file = (path: string) => join(teamMount.path, at(path));
  timeline.detail(`(below, paths are memory paths: the agent sees ${at('/people/oncall.md')} as ${teamMount.mountPath}${at('/people/oncall.md')})`);
  for (const [path, content] of Object.entries(teamSeed)) {
    expect.that((await readText(join(teamMount.path, path))) === content, `materialize: ${path} is not on disk as seeded`);
  }

  // 3. The agent works in the mount with plain file writes; another session edits the store.
  await mkdir(dirname(file('/projects/beta/kickoff.md')), { recursive: true });
  await writeFile(file('/projects/beta/kickoff.md'), text.KICKOFF_NOTE);
  expected[at('/projects/beta/kickoff.md')] = text.KICKOFF_NOTE;
  timeline.event('agent', `created ${at('/projects/beta/kickoff.md')}`);
  await writeFile(file('/projects/alpha/plan.md'), text.PLAN_EDITED);
  expected[at('/projects/alpha/plan.md')] = text.PLAN_EDITED;
  timeline.event('agent', `edited  ${at('/projects/alpha/plan.md')}`);
  await rm(file('/scratch/old-idea.md'));
  delete expected[at('/scratch/old-idea.md')];
  timeline.event('agent', `deleted ${at('/scratch/old-idea.md')}`);
  await backend.otherSessionWrites(team, at('/people/oncall.md'), text.ONCALL_BY_OTHER);
  expected[at('/people/oncall.md')] = text.ONCALL_BY_OTHER;
  timeline.event('other', `edited  ${at('/people/oncall.md')} in the store (another session)`);

  // 4. After each tool call the worker asks for a sync; the mounter throttles it.
  const early = await mounter.reconcile();
  timeline.event('mounter', `reconcile() → ${early === null ? `null: skipped, the ${SYNC_INTERVAL_S} s interval has not passed` : 'ran'}`);
  expect.that(early === null, 'reconcile() before the interval should return null');

  let pass = await passAfter(ctx, mounter, SYNC_INTERVAL_S);
  let notes = storeOf(pass, team);
  expect.includes(notes.pushed, at('/projects/beta/kickoff.md'), 'first sync pushes the new note');
  expect.includes(notes.pushed, at('/projects/alpha/plan.md'), 'first sync pushes the edit');
  expect.includes(notes.pulled, at('/people/oncall.md'), "first sync pulls the other session's edit");
  expect.includes(notes.pendingDeletions, at('/scratch/old-idea.md'), 'first sync holds the deletion back');
  expect.that(
    (await readText(file('/people/oncall.md'))) === text.ONCALL_BY_OTHER,
    `first sync: the other session's edit of ${at('/people/oncall.md')} is not on disk`,
  );

  // 5 and 6. Both sides edit the same memory between two syncs: the store wins.
  await writeFile(file('/projects/alpha/decisions.md'), text.DECISIONS_BY_AGENT);
  timeline.event('agent', `edited  ${at('/projects/alpha/decisions.md')}`);
  await backend.otherSessionWrites(team, at('/projects/alpha/decisions.md'), text.DECISIONS_BY_OTHER);
  // The store wins: the agent's version is expected nowhere.
  expected[at('/projects/alpha/decisions.md')] = text.DECISIONS_BY_OTHER;
  timeline.event('other', `edited  ${at('/projects/alpha/decisions.md')} in the store, differently`);

  pass = await passAfter(ctx, mounter, SYNC_INTERVAL_S);
  notes = storeOf(pass, team);
  expect.includes(notes.conflicts, at('/projects/alpha/decisions.md'), 'second sync resolves the conflict');
  expect.includes(notes.pendingDeletions, at('/scratch/old-idea.md'), 'second sync: the deletion is still within its grace period');
  expect.that(
    (await readText(file('/projects/alpha/decisions.md'))) === text.DECISIONS_BY_OTHER,
    `conflict: the store's version of ${at('/projects/alpha/decisions.md')} is not on disk`,
  );

  pass = await passAfter(ctx, mounter, SYNC_INTERVAL_S);
  notes = storeOf(pass, team);
  expect.includes(notes.deletedRemote, at('/scratch/old-idea.md'), 'third sync sends the deletion, the grace period over');

  // 7. The guard a write/edit tool calls before it writes.
  if (styleMount) guard(ctx, mounter, join(styleMount.path, 'tone.md'), 'read_only');
  guard(ctx, mounter, join(memoryRoot, 'notes.md'), 'outside_store');
  guard(ctx, mounter, file('/projects/beta/kickoff.md'), null);

  // 8. A last edit, then the session ends.
  await writeFile(file('/projects/beta/kickoff.md'), text.KICKOFF_NOTE_FINAL);
  expected[at('/projects/beta/kickoff.md')] = text.KICKOFF_NOTE_FINAL;
  timeline.event('agent', `edited  ${at('/projects/beta/kickoff.md')} (last edit, no sync since)`);
  const final = await mounter.finalize({ outcome: 'completed' });
  const { summary, details } = finalizeLines(final);
  timeline.event('mounter', summary);
  for (const line of details) timeline.detail(line);
  const finalStores = [final.sync, final.flush].flatMap((p) => p?.stores ?? []);
  expectNoErrors(expect, finalStores);
  const pushedAtEnd = finalStores.flatMap((s) => s.pushed);
  expect.includes(pushedAtEnd, at('/projects/beta/kickoff.md'), 'finalize pushes the last edit');
  for (const mount of mounts) expect.includes(final.removed, mount.path, 'finalize removes every mount folder');
  expect.that(final.leftInPlace.length === 0, `finalize left folders in place: ${JSON.stringify(final.leftInPlace)}`);
  expect.that(!final.timedOut.sync && !final.timedOut.flush, 'finalize ran out of time');

  return { teamNotes: expected, styleGuide: styleBefore, mountFolders: mounts.map((m) => m.path) };
}

/** Time passes; then the worker's next reconcile() runs, and its report is shown. */
async function passAfter(ctx: SessionContext, mounter: MemoryMounter, seconds: number): Promise<SyncReport> {
  ctx.clock.advance(seconds);
  ctx.timeline.event('clock', `+${seconds} s`);
  const report = await mounter.reconcile();
  ctx.expect.that(report !== null, `reconcile() at ${ctx.clock.seconds} s should have run`);
  if (!report) return { startedAt: new Date(0).toISOString(), finishedAt: new Date(0).toISOString(), forced: false, stores: [] };
  const [first = '', ...rest] = syncLines(report, DELETE_GRACE_S);
  ctx.timeline.event('mounter', `reconcile() → ${first}`);
  for (const line of rest) ctx.timeline.detail(line);
  expectNoErrors(ctx.expect, report.stores);
  return report;
}

/** The script injects no faults, so any store or disk error in a report is a mismatch. */
function expectNoErrors(expect: Expectations, stores: readonly StoreSyncReport[]): void {
  for (const s of stores) {
    for (const e of s.errors) expect.that(false, `${s.name}: ${e.operation} ${e.path ?? ''} failed (${e.kind}): ${e.message}`);
  }
}

/** Calls checkWrite and shows the verdict; `expected` is the refusal reason, or null for allowed. */
function guard(ctx: SessionContext, mounter: MemoryMounter, hostPath: string, expected: MemoryWriteRefusedError['reason'] | null): void {
  let refusal: MemoryWriteRefusedError | null = null;
  try {
    mounter.checkWrite(hostPath);
  } catch (err) {
    if (!(err instanceof MemoryWriteRefusedError)) throw err;
    refusal = err;
  }
  ctx.timeline.event('guard', refusal ? `checkWrite refused (${refusal.reason}): ${refusal.message}` : `checkWrite allowed: ${hostPath}`);
  ctx.expect.that((refusal?.reason ?? null) === expected, `checkWrite(${hostPath}): expected ${expected ?? 'allowed'}, got ${refusal?.reason ?? 'allowed'}`);
}

function storeOf(report: SyncReport, store: DemoStore): StoreSyncReport {
  const found = report.stores.find((s) => s.memoryStoreId === store.id);
  if (!found) throw new Error(`the sync report has no entry for ${store.name} (${store.id})`);
  return found;
}

function resource(store: DemoStore, access: MountedStore['access']): MemoryStoreResource {
  return { type: 'memory_store', memory_store_id: store.id, name: store.name, access };
}

function prefixed(store: DemoStore, files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).map(([path, content]) => [store.prefix + path, content]));
}

function count(files: Record<string, string>): string {
  return plural(Object.keys(files).length, 'memory', 'memories');
}

async function readText(path: string): Promise<string | null> {
  return readFile(path, 'utf8').catch(() => null);
}
