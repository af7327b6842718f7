import { mkdir, mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { sessionsTokenFromSecret } from '@memory-mounter/anthropic';
import type { FinalizeReport } from '@memory-mounter/core';
import { MemoryApiServer, type AgentToolCall, type AgentToolOutcome, type ControlPlaneEvent } from '@memory-mounter/testing';
import { brief, Timeline, type Output } from './timeline.js';
import { customWorker } from './worker.js';

const ENVIRONMENT_ID = 'env_emulated';
const ENVIRONMENT_KEY = 'environment-key-emulated';
const SESSIONS_TOKEN = 'sessions-token-emulated';
const SESSION_ID = 'sesn_emulated';
const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' };
const STYLE = { type: 'memory_store', memory_store_id: 'memstore_style', name: 'House Style', access: 'read_only' };

export interface EmulatedRunOptions {
  out?: Output;
  /** The lease TTL the emulator grants, in seconds (the worker heartbeats every half of it). Default 1. */
  leaseTtlSeconds?: number;
  /** How long the agent "thinks" before its third call, in ms, so that a lease renewal shows. Default 700. */
  thinkMs?: number;
}

export interface EmulatedRunOutcome {
  passed: boolean;
  mismatches: string[];
  timeline: string[];
  /** The tool calls as the agent saw them: each result, and the Notes store when it arrived. */
  calls: { outcome: AgentToolOutcome; notesWhenAnswered: Record<string, string> }[];
  heartbeats: number;
  finalize: FinalizeReport | undefined;
}

/**
 * The custom worker, unchanged, against the emulated service: its `EnvironmentWorker` polls the
 * emulator's work queue, acks the item, heartbeats its lease, and serves the session's tool
 * calls with `SessionToolRunner`; the session is played by a scripted agent; memory goes
 * through the real SDK to the emulator's memory endpoints with the item's sessions token.
 * Prints the timeline, then checks the end state.
 */
export async function runEmulatedSession(options: EmulatedRunOptions = {}): Promise<EmulatedRunOutcome> {
  const timeline = new Timeline(options.out ?? process.stdout);
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-custom-worker-')));
  const memoryRoot = join(base, 'mnt-memory');
  const workdir = join(base, 'work');
  const stateDir = join(base, 'state');
  await mkdir(memoryRoot);
  await mkdir(workdir);
  await mkdir(stateDir);
  // The memory endpoints take only the item's sessions token, the queue only the environment key.
  const server = new MemoryApiServer({
    apiKey: SESSIONS_TOKEN,
    controlPlane: { environmentKey: ENVIRONMENT_KEY, leaseTtlSeconds: options.leaseTtlSeconds ?? 1 },
  });
  const mismatches: string[] = [];
  const expect = (ok: boolean, what: string) => {
    timeline.event('check', `${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) mismatches.push(what);
  };
  const calls: EmulatedRunOutcome['calls'] = [];
  let finalize: FinalizeReport | undefined;

  try {
    const baseURL = await server.start();
    timeline.say(`memory-mounter custom worker · EnvironmentWorker against the emulator at ${baseURL}`);
    timeline.say(`memoryRoot ${memoryRoot} stands for /mnt/memory; workdir ${workdir}`);
    timeline.showMemoryRootAs(memoryRoot);
    timeline.say();

    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seed('memstore_style', { '/tone.md': 'Be brief.\n' });
    server.seedSession(SESSION_ID, { resources: [NOTES, STYLE], environment_id: ENVIRONMENT_ID });
    const notes = join(memoryRoot, 'notes');
    const style = join(memoryRoot, 'house-style');
    const script: Array<{ call: AgentToolCall; thinkMs?: number }> = [
      { call: { name: 'read', input: { file_path: join(notes, 'todo.md') } } },
      { call: { name: 'edit', input: { file_path: join(notes, 'todo.md'), old_string: 'milk', new_string: 'oat milk' } } },
      { call: { name: 'write', input: { file_path: join(notes, 'journal', 'day-1.md'), content: 'Met the team.\n' } }, thinkMs: options.thinkMs ?? 700 },
      { call: { name: 'write', input: { file_path: join(style, 'tone.md'), content: 'Be verbose.\n' } } },
      // The worker's own tool, under the same guard: into Notes it saves, into House Style it is refused.
      { call: { name: 'save_note', input: { store: 'Notes', title: 'met', text: 'Ana, Bo.\n' } } },
      { call: { name: 'save_note', input: { store: 'House Style', title: 'tone', text: 'Shout.\n' } } },
    ];
    server.controlPlane.playSession(
      SESSION_ID,
      async (outcomes) => {
        const last = outcomes.at(-1);
        // Called the moment the worker posts a result: the store as it stands then shows that
        // the call's reconcile had already pushed its change.
        if (last) calls.push({ outcome: last, notesWhenAnswered: server.snapshot('memstore_notes') });
        const next = script[outcomes.length];
        if (next?.thinkMs) {
          timeline.event('agent', `thinks for ${next.thinkMs} ms`);
          await sleep(next.thinkMs);
        }
        return next?.call ?? null;
      },
      { finalMessage: 'Done: the list is updated and the day is journaled.' },
    );
    const queued = server.controlPlane.enqueue({ sessionId: SESSION_ID, environmentId: ENVIRONMENT_ID, sessionsToken: SESSIONS_TOKEN });
    timeline.event('queue', `${queued.id} queued for session ${SESSION_ID}`);
    server.controlPlane.on((event) => narrate(timeline, event, server));

    // The worker: what src/main.ts runs against the live service, with the emulator's URL and
    // `drain` (it returns once the queue is empty). maxIdleMs: how long the runner keeps an idle
    // session before it lets the item go (60 s by default).
    const client = new Anthropic({ apiKey: null, authToken: ENVIRONMENT_KEY, baseURL, maxRetries: 0 });
    await customWorker({
      client,
      environmentId: ENVIRONMENT_ID,
      environmentKey: ENVIRONMENT_KEY,
      drain: true,
      maxIdleMs: 200,
      workdir,
      memoryRoot,
      stateDir,
      // Every tool call syncs here (the default, 15 s, would leave it all to finalize).
      memorySyncIntervalMs: 1,
      // The agent writes through the toolset (temp file, then rename): never half-written.
      mounter: { newFileSettle: 0 },
      on: {
        mounted: (mounts) => timeline.event('worker', `mounted ${mounts.map((m) => `${m.name} at ${m.mountPath} (${m.access})`).join(', ')}`),
        pushed: (e) => timeline.event('memory', `pushed ${e.path} to ${e.memoryStoreId}`),
        finalized: (report) => {
          finalize = report;
          timeline.event('worker', `finalize ${report.outcome}: pushed ${pathsOf(report, 'pushed')}; removed ${report.removed.join(', ') || 'nothing'}`);
        },
      },
      logger: {
        debug: () => {},
        info: () => {},
        warn: (msg, fields) => timeline.event('warn', `${msg} ${brief(fields, 120)}`),
        error: (msg, fields) => timeline.event('error', `${msg} ${brief(fields, 120)}`),
      },
    }).run();

    timeline.say();
    const snapshot = server.snapshot('memstore_notes');
    expect(
      JSON.stringify(snapshot) === JSON.stringify({ '/journal/day-1.md': 'Met the team.\n', '/notes/met.md': 'Ana, Bo.\n', '/todo.md': '- buy oat milk\n' }),
      `the Notes store holds the agent's edits: ${brief(snapshot, 100)}`,
    );
    expect(server.snapshot('memstore_style')['/tone.md'] === 'Be brief.\n', 'the read-only House Style store is untouched');
    const edit = calls.find((c) => c.outcome.call.name === 'edit');
    expect(edit?.notesWhenAnswered['/todo.md'] === '- buy oat milk\n', 'the edit was in the store before its result reached the agent (a call waits for its reconcile)');
    const refused = calls.find((c) => c.outcome.call.input['file_path'] === join(style, 'tone.md'));
    expect(refused?.outcome.isError === true && /read-only/.test(refused.outcome.text), 'the write into the read-only store came back as an error the agent can read');
    const notes2 = calls.filter((c) => c.outcome.call.name === 'save_note');
    expect(
      notes2.map((c) => c.outcome.isError).join() === 'false,true' && /read-only/.test(notes2[1]?.outcome.text ?? ''),
      'the worker\'s own save_note went through the same guard: saved into Notes, refused for House Style',
    );
    const beats = server.controlPlane.heartbeats(queued.id);
    expect(beats.length >= 2 && beats.every((b) => b.lease_extended), `the lease was heartbeated and renewed (${beats.length} heartbeats)`);
    expect(server.controlPlane.work(queued.id).state === 'stopped', 'the work item was released (stopped)');
    expect(finalize?.outcome === 'completed', 'memory was finalized completed');
    expect((await readdir(memoryRoot)).length === 0, 'no store folder is left on disk');
  } catch (err) {
    mismatches.push(`the run stopped early: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    timeline.event('error', mismatches.at(-1)!);
  } finally {
    await server.close();
    await rm(base, { recursive: true, force: true });
  }

  timeline.say();
  timeline.say(mismatches.length === 0 ? 'PASS: a whole worker session, offline.' : `FAIL: ${mismatches.length} mismatch(es).`);
  const heartbeats = server.controlPlane.requestCount('work.heartbeat');
  return { passed: mismatches.length === 0, mismatches, timeline: timeline.lines, calls, heartbeats, finalize };
}

/** One timeline line per control-plane event. */
function narrate(timeline: Timeline, event: ControlPlaneEvent, server: MemoryApiServer): void {
  switch (event.kind) {
    case 'claimed': {
      const token = sessionsTokenFromSecret(event.work.secret);
      timeline.event('worker', `polled: claimed ${event.work.id} (session ${event.work.data.id}); its secret ${token ? 'carries a sessions token' : 'carries no sessions token'}`);
      return;
    }
    case 'acked':
      return timeline.event('worker', `acked ${event.workId}`);
    case 'heartbeat': {
      const { lease_extended, ttl_seconds, state } = event.answer;
      return timeline.event('lease', `heartbeat: ${lease_extended ? `lease extended for ${ttl_seconds} s` : 'lease NOT extended'} (${state})`);
    }
    case 'stream_attached':
      return timeline.event('worker', `attached to the session's event stream`);
    case 'tool_use':
      return timeline.event('agent', `${event.call.name} ${brief(event.call.input, 100)}`);
    case 'tool_result': {
      const { outcome } = event;
      timeline.event('worker', `${outcome.isError ? 'error' : 'ok'} ← ${outcome.call.name}: ${brief(outcome.text, 90)}`);
      return timeline.event('store', `Notes holds ${brief(server.snapshot('memstore_notes'), 100)}`);
    }
    case 'session_ended':
      return timeline.event('agent', `ends its turn (session ${event.state}); the runner lets the idle session go`);
    case 'stopped':
      return timeline.event('worker', `released ${event.workId} (work.stop)`);
  }
}

function pathsOf(report: FinalizeReport, field: 'pushed'): string {
  const paths = [...(report.sync?.stores ?? []), ...report.flush.stores].flatMap((s) => s[field]);
  return paths.length > 0 ? paths.join(', ') : 'nothing';
}
