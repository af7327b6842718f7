import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { liveControlPlane, mountSessionMemory, runSessionWithMemory, sessionsTokenFromSecret, withMemorySync } from '@memory-mounter/anthropic';
import type { FinalizeReport, MemoryMounter, StoreSyncReport, SyncReport } from '@memory-mounter/core';
import type { AgentToolCall, AgentToolOutcome, ControlPlaneEvent, MemoryApiServer } from '@memory-mounter/testing';
import { OFFLINE_ENVIRONMENT_KEY, OFFLINE_SESSIONS_TOKEN, type Backend } from './backends.js';
import type { ManualClock } from './clock.js';
import type { Expectations } from './expectations.js';
import * as text from './fixtures.js';
import { finalizeLines, plural, syncLines } from './report-lines.js';
import type { ExpectedEnd } from './session.js';
import { timelineLogger, type Timeline } from './timeline.js';
import { treeLines } from './tree.js';

export interface WorkerSessionContext {
  backend: Backend;
  emulator: MemoryApiServer;
  /** Stands for `/mnt/memory`: an empty folder the caller made and will remove. */
  memoryRoot: string;
  /** The agent's working directory: an empty folder the caller made and will remove. */
  workdir: string;
  clock: ManualClock;
  timeline: Timeline;
  expect: Expectations;
}

const SESSION_ID = 'sesn_demo';
const ENVIRONMENT_ID = 'env_demo';
const SYNC_INTERVAL_S = 15;
const DELETE_GRACE_S = 30;

/** One step of the agent: what happens in the world while it thinks, then its tool call. */
interface AgentStep {
  before?: () => void;
  call: AgentToolCall;
}

/**
 * The demo's session, served by a self-hosted worker: the live control plane (`WorkPoller`,
 * `SessionToolRunner`, the lease heartbeat) claims the work item from the emulator, decodes
 * its secret, mounts both stores, and serves the scripted agent's tool calls with the SDK's
 * agent toolset wrapped by `withMemorySync` (writes guarded, a reconcile after each call), then
 * finalizes memory and releases the item. The session clock is moved by hand while the agent
 * "thinks", so the 15 s sync interval and the 30 s deletion grace period show without waiting.
 */
export async function runWorkerSession(ctx: WorkerSessionContext): Promise<ExpectedEnd> {
  const { backend, emulator, memoryRoot, workdir, clock, timeline, expect } = ctx;
  const team = backend.teamNotes;
  const style = backend.styleGuide!;
  const expected: Record<string, string> = { ...text.TEAM_NOTES_SEED };

  // 1. The stores and the session as the worker will find them.
  await backend.seed(team, text.TEAM_NOTES_SEED);
  timeline.event('setup', `seeded ${team.name} (${team.id}): ${plural(Object.keys(text.TEAM_NOTES_SEED).length, 'memory', 'memories')}`);
  await backend.seed(style, text.STYLE_GUIDE_SEED);
  timeline.event('setup', `seeded ${style.name} (${style.id}): ${plural(Object.keys(text.STYLE_GUIDE_SEED).length, 'memory', 'memories')}, attached read_only`);
  const styleBefore = await backend.snapshot(style);
  emulator.seedSession(SESSION_ID, {
    environment_id: ENVIRONMENT_ID,
    resources: [
      { type: 'memory_store', memory_store_id: team.id, name: team.name, access: 'read_write' },
      { type: 'memory_store', memory_store_id: style.id, name: style.name, access: 'read_only' },
    ],
  });

  // 2. The agent's script, a function of the results it has read so far.
  const teamDir = join(memoryRoot, 'team-notes');
  const styleDir = join(memoryRoot, 'style-guide');
  const note = (path: string) => join(teamDir, path);
  const think = (seconds: number) => {
    clock.advance(seconds);
    timeline.event('clock', `+${seconds} s (the agent thinks)`);
  };
  const other = (path: string, content: string) => {
    emulator.writeMemory(team.id, path, content);
    expected[path] = content;
    timeline.event('other', `edited  ${path} in the store (another session)`);
  };
  const steps: AgentStep[] = [
    { call: { name: 'write', input: { file_path: note('projects/beta/kickoff.md'), content: text.KICKOFF_NOTE } } },
    { call: { name: 'edit', input: { file_path: note('projects/alpha/plan.md'), old_string: '1. Ship the importer.\n', new_string: '1. Ship the importer.\n2. Migrate the old exports.\n' } } },
    { call: { name: 'bash', input: { command: `rm ${note('scratch/old-idea.md')}` } } },
    { before: () => (other('/people/oncall.md', text.ONCALL_BY_OTHER), think(SYNC_INTERVAL_S)), call: { name: 'read', input: { file_path: note('people/oncall.md') } } },
    { call: { name: 'read', input: { file_path: note('people/oncall.md') } } },
    { call: { name: 'edit', input: { file_path: note('projects/alpha/decisions.md'), old_string: '- Postgres, not SQLite.\n', new_string: '- Postgres, not SQLite.\n- Nightly backups (agent).\n' } } },
    {
      before: () => (other('/projects/alpha/decisions.md', text.DECISIONS_BY_OTHER), think(SYNC_INTERVAL_S)),
      call: { name: 'write', input: { file_path: join(styleDir, 'tone.md'), content: 'Exclamation marks welcome!\n' } },
    },
    { call: { name: 'write', input: { file_path: join(memoryRoot, 'notes.md'), content: 'scratch\n' } } },
    { before: () => think(SYNC_INTERVAL_S), call: { name: 'read', input: { file_path: note('projects/alpha/decisions.md') } } },
    { call: { name: 'write', input: { file_path: note('projects/beta/kickoff.md'), content: text.KICKOFF_NOTE_FINAL } } },
  ];
  emulator.controlPlane.playSession(
    SESSION_ID,
    (outcomes) => {
      const step = steps[outcomes.length];
      step?.before?.();
      return step?.call ?? null;
    },
    { finalMessage: 'Beta is kicked off; the Alpha notes are current.' },
  );
  const work = emulator.controlPlane.enqueue({ sessionId: SESSION_ID, environmentId: ENVIRONMENT_ID, sessionsToken: OFFLINE_SESSIONS_TOKEN });
  timeline.event('setup', `work item ${work.id} queued for ${SESSION_ID}; its secret carries the sessions token`);
  emulator.controlPlane.on((event) => narrate(timeline, event));

  // 3. The worker. Everything below is what a custom worker does against the live service;
  //    only the base URL (the emulator's) and the drained poll are the demo's.
  const client = new Anthropic({ apiKey: null, authToken: OFFLINE_ENVIRONMENT_KEY, baseURL: emulator.baseURL, maxRetries: 0 });
  const controlPlane = liveControlPlane({ client, environmentId: ENVIRONMENT_ID, environmentKey: OFFLINE_ENVIRONMENT_KEY, drain: true, maxIdleMs: 100 });
  const names = new Map([[team.id, team.name], [style.id, style.name]]);
  const logger = timelineLogger(timeline, (id) => names.get(id) ?? id);
  const syncs: (SyncReport | null)[] = [];
  let final: FinalizeReport | undefined;
  let mounted: MemoryMounter | null = null;
  const signal = new AbortController().signal;

  for await (const item of controlPlane.claimWork(signal)) {
    const mounter = await mountSessionMemory({
      client,
      sessionId: item.data.id,
      secret: item.secret,
      memoryRoot,
      memory_sync_interval: SYNC_INTERVAL_S,
      deleteGracePeriod: DELETE_GRACE_S,
      // The scripted agent writes through the agent toolset, whose writes are whole (temp file,
      // then rename): nothing is ever half-written, so a new file need not rest before a push.
      newFileSettle: 0,
      now: clock.now,
      logger,
    });
    mounted = mounter;
    if (!mounter) break;
    timeline.event('mounter', `materialize(): ${plural(mounter.mounts.length, 'store')} mounted (as the agent sees them)`);
    for (const mount of mounter.mounts) {
      timeline.detail(`${mount.mountPath}/  (${mount.access})`);
      for (const line of await treeLines(mount.path)) timeline.detail(`  ${line}`);
    }
    tapReconcile(mounter, (report) => {
      syncs.push(report);
      if (report === null) {
        timeline.event('mounter', `reconcile() → null: skipped, the ${SYNC_INTERVAL_S} s interval has not passed`);
        return;
      }
      const [first = '', ...rest] = syncLines(report, DELETE_GRACE_S);
      timeline.event('mounter', `reconcile() → ${first}`);
      for (const line of rest) timeline.detail(line);
      expectNoErrors(expect, report.stores);
    });
    const tools = withMemorySync(
      betaAgentToolset20260401({ workdir, allowedRoots: [...mounter.roots], readOnlyRoots: [...mounter.readOnlyRoots] }),
      mounter,
      { workdir, logger },
    );
    await runSessionWithMemory(mounter, () => controlPlane.runSession(item, tools, signal), {
      signal,
      logger,
      onFinalize: (report) => {
        final = report;
        const { summary, details } = finalizeLines(report);
        timeline.event('mounter', summary);
        for (const line of details) timeline.detail(line);
      },
    });
  }

  // 4. What each step should have done.
  const outcomes = emulator.controlPlane.session(SESSION_ID)?.outcomes ?? [];
  expect.that(mounted !== null, 'the worker mounted the session memory');
  expect.that(outcomes.length === steps.length, `the agent made ${outcomes.length} of its ${steps.length} tool calls`);
  expect.that(syncs.length === steps.length, `one reconcile per tool call: ${syncs.length} for ${steps.length} calls`);
  expect.that(syncs.slice(0, 3).every((s) => s === null), 'the calls before the interval passed are not synced');
  const first = storeOf(syncs[3], team.id);
  expect.includes(first?.pushed ?? [], '/projects/beta/kickoff.md', 'first sync pushes the new note');
  expect.includes(first?.pushed ?? [], '/projects/alpha/plan.md', 'first sync pushes the edit');
  expect.includes(first?.pulled ?? [], '/people/oncall.md', "first sync pulls the other session's edit");
  expect.includes(first?.pendingDeletions ?? [], '/scratch/old-idea.md', 'first sync holds the deletion back');
  expect.that(/Priya/.test(outcomes[3]?.text ?? '') && /Sam/.test(outcomes[4]?.text ?? ''), 'a read sees the store’s edit once the sync after the call before it pulled it');
  const second = storeOf(syncs[6], team.id);
  expect.includes(second?.conflicts ?? [], '/projects/alpha/decisions.md', 'second sync resolves the conflict: the store wins');
  expect.includes(second?.pendingDeletions ?? [], '/scratch/old-idea.md', 'second sync: the deletion is still within its grace period');
  expect.that(outcomes[6]?.isError === true && /read-only/.test(outcomes[6].text), 'the write into the read-only store comes back to the agent as an error');
  expect.that(outcomes[7]?.isError === true && /in no memory store/.test(outcomes[7].text), 'a write under /mnt/memory outside every store comes back as an error');
  const third = storeOf(syncs[8], team.id);
  expect.includes(third?.deletedRemote ?? [], '/scratch/old-idea.md', 'third sync sends the deletion, the grace period over');
  expect.that(/Hourly backups/.test(outcomes[8]?.text ?? ''), "the agent reads the store's version of the conflicted note");
  expect.that(syncs[9] === null, 'the last edit is left for finalize');
  delete expected['/scratch/old-idea.md'];
  expected['/projects/beta/kickoff.md'] = text.KICKOFF_NOTE_FINAL;
  expected['/projects/alpha/plan.md'] = text.PLAN_EDITED;

  const finalStores = [final?.sync, final?.flush].flatMap((pass) => pass?.stores ?? []);
  expectNoErrors(expect, finalStores);
  expect.includes(finalStores.flatMap((s) => s.pushed), '/projects/beta/kickoff.md', 'finalize pushes the last edit');
  expect.that(final?.outcome === 'completed', `finalize should be completed, was ${final?.outcome}`);
  expect.that((final?.leftInPlace.length ?? 1) === 0, `finalize left folders in place: ${JSON.stringify(final?.leftInPlace)}`);
  expect.that(emulator.controlPlane.heartbeats(work.id).some((b) => b.lease_extended), 'the worker heartbeated the lease');
  expect.that(emulator.controlPlane.work(work.id).state === 'stopped', 'the worker released the work item');

  return { teamNotes: expected, styleGuide: styleBefore, mountFolders: [teamDir, styleDir] };
}

/**
 * Shows each reconcile the tool wrapper runs: the mounter's own `reconcile`, with its report
 * handed to `onReport` on the way back. Only the demo needs to see them.
 */
function tapReconcile(mounter: MemoryMounter, onReport: (report: SyncReport | null) => void): void {
  const reconcile = mounter.reconcile.bind(mounter);
  mounter.reconcile = async (opts) => {
    const report = await reconcile(opts);
    onReport(report);
    return report;
  };
}

function narrate(timeline: Timeline, event: ControlPlaneEvent): void {
  switch (event.kind) {
    case 'claimed':
      return timeline.event('worker', `polled and claimed ${event.work.id}; the secret decodes to ${sessionsTokenFromSecret(event.work.secret) ? 'a sessions token' : 'no token'}`);
    case 'heartbeat':
      return timeline.event('worker', `lease heartbeat: ${event.answer.lease_extended ? `extended for ${event.answer.ttl_seconds} s` : 'NOT extended'}`);
    case 'tool_use':
      return timeline.event('agent', describeCall(event.call));
    case 'tool_result':
      return timeline.event('worker', describeResult(event.outcome));
    case 'session_ended':
      return timeline.event('agent', `ends its turn; the worker lets the idle session go`);
    case 'stopped':
      return timeline.event('worker', `released ${event.workId} (work.stop)`);
    case 'acked':
    case 'stream_attached':
      return;
  }
}

function describeCall(call: AgentToolCall): string {
  const { file_path: path, command } = call.input as { file_path?: string; command?: string };
  return `${call.name.padEnd(5)} ${path ?? command ?? JSON.stringify(call.input)}`;
}

function describeResult(outcome: AgentToolOutcome): string {
  const firstLine = outcome.text.split('\n').find((line) => line.trim() !== '') ?? '';
  if (outcome.isError) return `→ error for the agent: ${outcome.text}`;
  if (outcome.call.name === 'read') return `→ ok: ${outcome.text.split('\n').filter(Boolean).slice(-1)[0]?.trim() ?? ''}`;
  return `→ ok: ${firstLine.trim() || '(no output)'}`;
}

function storeOf(report: SyncReport | null | undefined, storeId: string): StoreSyncReport | undefined {
  return report?.stores.find((s) => s.memoryStoreId === storeId);
}

/** The script injects no faults, so any store or disk error in a report is a mismatch. */
function expectNoErrors(expect: Expectations, stores: readonly StoreSyncReport[]): void {
  for (const s of stores) {
    for (const e of s.errors) expect.that(false, `${s.name}: ${e.operation} ${e.path ?? ''} failed (${e.kind}): ${e.message}`);
  }
}
