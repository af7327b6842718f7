import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdir, mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { sessionsTokenFromSecret } from '@memory-mounter/anthropic';
import type { FinalizeReport } from '@memory-mounter/core';
import { MemoryApiServer, type AgentToolOutcome, type ControlPlaneEvent } from '@memory-mounter/testing';
import { brief, Timeline, type Output } from './timeline.js';
import { WebhookHandler } from './webhook-handler.js';

const ENVIRONMENT_ID = 'env_emulated';
const ENVIRONMENT_KEY = 'environment-key-emulated';
const SESSIONS_TOKEN = 'sessions-token-emulated';
const SESSION_ID = 'sesn_emulated';
const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' };

// Deliveries are signed with the `standardwebhooks` package the SDK verifies with, resolved from
// the SDK's own location: the example needs no dependency of its own for it.
interface StandardWebhook {
  sign(msgId: string, timestamp: Date, payload: string): string;
}
const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@anthropic-ai/sdk'));
const { Webhook } = sdkRequire('standardwebhooks') as { Webhook: new (key: string) => StandardWebhook };

export interface EmulatedRunOptions {
  out?: Output;
  /** The lease TTL the emulator grants, in seconds. Default 1. */
  leaseTtlSeconds?: number;
}

export interface EmulatedRunOutcome {
  passed: boolean;
  mismatches: string[];
  timeline: string[];
  /** The HTTP statuses the handler answered: the forged delivery, then the signed one. */
  answers: { forged: number; signed: number };
  /** Sessions the handler had in flight right after it answered the signed delivery. */
  inFlightAfterAnswer: number;
  outcomes: AgentToolOutcome[];
  finalize: FinalizeReport | undefined;
}

/**
 * The webhook handler, unchanged, against the emulated service: a forged delivery is refused,
 * a signed `session.status_run_started` is answered 202 at once, and behind it the handler's
 * `EnvironmentWorker` (a draining `WorkPoller`, `SessionToolRunner`, the lease heartbeat) claims
 * the queued item and serves the scripted agent's calls with memory mounted and synced.
 */
export async function runEmulatedWebhook(options: EmulatedRunOptions = {}): Promise<EmulatedRunOutcome> {
  const timeline = new Timeline(options.out ?? process.stdout);
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-webhook-')));
  const memoryRoot = join(base, 'mnt-memory');
  await mkdir(memoryRoot);
  const server = new MemoryApiServer({
    apiKey: SESSIONS_TOKEN,
    controlPlane: { environmentKey: ENVIRONMENT_KEY, leaseTtlSeconds: options.leaseTtlSeconds ?? 1 },
  });
  const signingKey = `whsec_${randomBytes(24).toString('base64')}`;
  const http = createServer();
  const mismatches: string[] = [];
  const expect = (ok: boolean, what: string) => {
    timeline.event('check', `${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) mismatches.push(what);
  };
  const answers = { forged: 0, signed: 0 };
  let inFlightAfterAnswer = 0;
  let finalize: FinalizeReport | undefined;
  let webhooks: WebhookHandler | undefined;

  try {
    const baseURL = await server.start();
    timeline.say(`memory-mounter webhook handler · EnvironmentWorker against the emulator at ${baseURL}`);
    timeline.say(`memoryRoot ${memoryRoot} stands for /mnt/memory`);
    timeline.showMemoryRootAs(memoryRoot);
    timeline.say();

    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seedSession(SESSION_ID, { resources: [NOTES], environment_id: ENVIRONMENT_ID });
    const todo = join(memoryRoot, 'notes', 'todo.md');
    server.controlPlane.playSession(SESSION_ID, [
      { name: 'edit', input: { file_path: todo, old_string: 'milk', new_string: 'oat milk' } },
      { name: 'write', input: { file_path: join(memoryRoot, 'notes', 'ideas.md'), content: 'Ship the worker.\n' } },
      { name: 'write', input: { file_path: join(memoryRoot, 'scratch.md'), content: 'not a store\n' } },
    ]);
    const queued = server.controlPlane.enqueue({ sessionId: SESSION_ID, environmentId: ENVIRONMENT_ID, sessionsToken: SESSIONS_TOKEN });
    timeline.event('queue', `${queued.id} queued for session ${SESSION_ID}`);
    server.controlPlane.on((event) => narrate(timeline, event));

    const client = new Anthropic({ apiKey: null, authToken: ENVIRONMENT_KEY, baseURL, maxRetries: 0, webhookKey: signingKey });
    webhooks = new WebhookHandler({
      client,
      environmentId: ENVIRONMENT_ID,
      environmentKey: ENVIRONMENT_KEY,
      maxIdleMs: 200,
      workdir: base,
      memoryRoot,
      memorySyncIntervalMs: 1, // every tool call syncs
      on: {
        mounted: (mounts) => timeline.event('worker', `mounted ${mounts.map((m) => `${m.name} at ${m.mountPath} (${m.access})`).join(', ')}`),
        pushed: (e) => timeline.event('memory', `pushed ${e.path} to ${e.memoryStoreId}`),
        finalized: (report) => {
          finalize = report;
          timeline.event('worker', `finalize ${report.outcome}: removed ${report.removed.join(', ') || 'nothing'}`);
        },
      },
      logger: {
        debug: () => {},
        info: () => {},
        warn: (msg) => timeline.event('warn', msg),
        error: (msg, fields) => timeline.event('error', `${msg} ${brief(fields, 120)}`),
      },
    });
    http.on('request', webhooks.listener);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/webhooks`;

    const body = JSON.stringify({
      type: 'event',
      id: `wevt_${randomBytes(6).toString('hex')}`,
      created_at: new Date().toISOString(),
      data: { type: 'session.status_run_started', id: SESSION_ID, organization_id: 'org_emulated', workspace_id: 'wrkspc_emulated' },
    });
    const forgedKey = `whsec_${randomBytes(24).toString('base64')}`;
    answers.forged = (await fetch(url, { method: 'POST', headers: signed(body, forgedKey), body })).status;
    timeline.event('hook', `delivery signed with another key → ${answers.forged} (nothing claimed)`);
    answers.signed = (await fetch(url, { method: 'POST', headers: signed(body, signingKey), body })).status;
    inFlightAfterAnswer = webhooks.inFlight;
    timeline.event('hook', `session.status_run_started, signed → ${answers.signed}; ${inFlightAfterAnswer} session in flight behind it`);
    await webhooks.idle();
    timeline.event('hook', 'idle: every session finished and finalized');

    timeline.say();
    expect(answers.forged === 400 && answers.signed === 202, `a forged delivery is refused (400), a signed one accepted at once (202)`);
    expect(inFlightAfterAnswer === 1, 'the 202 came while the session was still running');
    const notes = server.snapshot('memstore_notes');
    expect(
      JSON.stringify(notes) === JSON.stringify({ '/ideas.md': 'Ship the worker.\n', '/todo.md': '- buy oat milk\n' }),
      `the Notes store holds the agent's edits: ${brief(notes, 100)}`,
    );
    const outcomes = server.controlPlane.session(SESSION_ID)?.outcomes ?? [];
    const refused = outcomes.at(-1);
    expect(refused?.isError === true && /refused: .*scratch\.md is under the memory root/.test(refused.text), 'a write under /mnt/memory outside every store came back as an error the agent can read');
    expect(server.controlPlane.heartbeats(queued.id).some((b) => b.lease_extended), 'the lease was heartbeated');
    expect(server.controlPlane.work(queued.id).state === 'stopped', 'the work item was released (stopped)');
    expect((await readdir(memoryRoot)).length === 0, 'no store folder is left on disk');
  } catch (err) {
    mismatches.push(`the run stopped early: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    timeline.event('error', mismatches.at(-1)!);
  } finally {
    await webhooks?.idle();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    await server.close();
    await rm(base, { recursive: true, force: true });
  }

  timeline.say();
  timeline.say(mismatches.length === 0 ? 'PASS: a webhook-driven worker session, offline.' : `FAIL: ${mismatches.length} mismatch(es).`);
  const outcomes = server.controlPlane.session(SESSION_ID)?.outcomes ?? [];
  return { passed: mismatches.length === 0, mismatches, timeline: timeline.lines, answers, inFlightAfterAnswer, outcomes: [...outcomes], finalize };
}

/** The Standard Webhooks headers for `body`, signed with `key`. */
function signed(body: string, key: string): Record<string, string> {
  const id = `msg_${randomBytes(6).toString('hex')}`;
  const at = new Date();
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(id, at, body),
  };
}

function narrate(timeline: Timeline, event: ControlPlaneEvent): void {
  switch (event.kind) {
    case 'claimed':
      return timeline.event('worker', `polled: claimed ${event.work.id}; its secret ${sessionsTokenFromSecret(event.work.secret) ? 'carries' : 'lacks'} a sessions token`);
    case 'acked':
      return timeline.event('worker', `acked ${event.workId}`);
    case 'heartbeat':
      return timeline.event('lease', `heartbeat: ${event.answer.lease_extended ? `extended for ${event.answer.ttl_seconds} s` : 'NOT extended'} (${event.answer.state})`);
    case 'stream_attached':
      return timeline.event('worker', `attached to the session's event stream`);
    case 'tool_use':
      return timeline.event('agent', `${event.call.name} ${brief(event.call.input, 100)}`);
    case 'tool_result':
      return timeline.event('worker', `${event.outcome.isError ? 'error' : 'ok'} ← ${event.outcome.call.name}: ${brief(event.outcome.text, 160)}`);
    case 'session_ended':
      return timeline.event('agent', `ends its turn (session ${event.state})`);
    case 'stopped':
      return timeline.event('worker', `released ${event.workId} (work.stop)`);
  }
}
