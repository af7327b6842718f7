import { MemoryApiServer } from '@memory-mounter/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// The emulated control plane at the HTTP level, with the headers the SDK sends. The SDK's own
// view of it (WorkPoller, SessionToolRunner, the lease heartbeat) is tested in
// packages/anthropic/test/control-plane/emulated-control-plane.test.ts.

const ENV_KEY = 'env-key';
const TOKEN = 'sessions-token';
const HEADERS = { authorization: `Bearer ${ENV_KEY}`, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'managed-agents-2026-04-01' };

let server: MemoryApiServer;

beforeEach(async () => {
  server = new MemoryApiServer({ controlPlane: { environmentKey: ENV_KEY } });
  await server.start();
});
afterEach(() => server.close());

async function call(method: string, path: string, opts: { query?: Record<string, string | number>; body?: unknown; headers?: Record<string, string> } = {}) {
  const url = new URL(path, server.baseURL);
  for (const [key, value] of Object.entries(opts.query ?? {})) url.searchParams.set(key, String(value));
  const res = await fetch(url, {
    method,
    headers: { ...(opts.headers ?? HEADERS), ...(opts.body !== undefined && { 'content-type': 'application/json' }) },
    ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as any) : null };
}
const work = (path = '') => `/v1/environments/env_emulated/work${path}`;

describe('work queue', () => {
  it('a poll answers 204 when nothing arrives within block_ms, and the item with its secret when one does', async () => {
    const started = Date.now();
    expect((await call('GET', work('/poll'), { query: { block_ms: 150 } })).status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);

    const polled = call('GET', work('/poll'), { query: { block_ms: 999 } });
    setTimeout(() => server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN }), 50);
    const { status, json } = await polled;
    expect(status).toBe(200);
    expect(json).toMatchObject({ type: 'work', id: 'work_1', state: 'queued', data: { type: 'session', id: 'sesn_1' } });
    expect(JSON.parse(Buffer.from(json.secret, 'base64url').toString())).toEqual({ sessions_token: TOKEN });
    // Handed out, not acked: not handed out again until reclaim_older_than_ms has passed.
    expect((await call('GET', work('/poll'))).status).toBe(204);
    expect((await call('GET', work('/poll'), { query: { reclaim_older_than_ms: 0 } })).json).toMatchObject({ id: 'work_1' });
  });

  it('ack, heartbeat and stop move the item through its states; only the poll answer carries the secret', async () => {
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    await call('GET', work('/poll'));
    expect((await call('POST', work('/work_1/ack'))).json).toMatchObject({ state: 'starting', secret: null, acknowledged_at: expect.any(String) });
    expect((await call('GET', work('/poll'))).status).toBe(204);

    const beat = await call('POST', work('/work_1/heartbeat'), { query: { expected_last_heartbeat: 'NO_HEARTBEAT' } });
    expect(beat.json).toMatchObject({ type: 'work_heartbeat', lease_extended: true, state: 'active', ttl_seconds: 300 });
    // Optimistic concurrency: the next beat must echo the heartbeat on record.
    const stale = await call('POST', work('/work_1/heartbeat'), { query: { expected_last_heartbeat: 'NO_HEARTBEAT' } });
    expect(stale.status).toBe(412);
    expect(stale.json.error.details).toMatchObject({ error_code: 'heartbeat_precondition_failed' });
    const next = await call('POST', work('/work_1/heartbeat'), { query: { expected_last_heartbeat: beat.json.last_heartbeat, desired_ttl_seconds: 20 } });
    expect(next.json).toMatchObject({ lease_extended: true, ttl_seconds: 20 });

    server.controlPlane.requestStop('work_1');
    expect((await call('POST', work('/work_1/heartbeat'))).json).toMatchObject({ state: 'stopping' });
    expect((await call('POST', work('/work_1/stop'), { body: {} })).json).toMatchObject({ state: 'stopped', stopped_at: expect.any(String) });
    expect((await call('POST', work('/work_1/heartbeat'))).json).toMatchObject({ state: 'stopped', lease_extended: false });
    expect(server.controlPlane.requestCount('work.heartbeat')).toBe(5);
  });

  it('a lease not renewed within its TTL lapses: the next heartbeat is not extended', async () => {
    server.controlPlane.leaseTtlSeconds = 0.05;
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1' });
    expect((await call('POST', work('/work_1/heartbeat'))).json.lease_extended).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect((await call('POST', work('/work_1/heartbeat'))).json.lease_extended).toBe(false);
  });

  it('the queue takes the environment key; a heartbeat also the item’s sessions token; headers are checked', async () => {
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    const asToken = { ...HEADERS, authorization: `Bearer ${TOKEN}` };
    expect((await call('GET', work('/poll'), { headers: asToken })).status).toBe(401);
    expect((await call('POST', work('/work_1/heartbeat'), { headers: asToken })).status).toBe(200);
    expect((await call('POST', work('/work_1/heartbeat'), { headers: { ...HEADERS, authorization: 'Bearer other' } })).status).toBe(401);
    expect((await call('GET', work('/poll'), { headers: { ...HEADERS, 'anthropic-beta': 'other-beta' } })).status).toBe(400);
    expect((await call('POST', '/v1/environments/env_other/work/work_1/ack')).status).toBe(404);
  });

  it('the force-stop a worker posts on exit takes the item’s sessions token, as the SDK’s worker sends it; another item’s token is refused', async () => {
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.enqueue({ id: 'work_2', sessionId: 'sesn_2', sessionsToken: 'other-token' });
    const asToken = { ...HEADERS, authorization: `Bearer ${TOKEN}` };
    expect((await call('POST', work('/work_2/stop'), { headers: asToken, body: { force: true } })).status).toBe(401);
    expect((await call('POST', work('/work_1/stop'), { headers: asToken, body: { force: true } })).json).toMatchObject({ state: 'stopped' });
    expect((await call('POST', work('/work_1/ack'), { headers: asToken })).status).toBe(401);
  });

  it('closes promptly while a poll is blocked', async () => {
    const polled = call('GET', work('/poll'), { query: { block_ms: 999 } }).catch((err: unknown) => err);
    // The poll must be blocked in the server (not merely sent) before the close; a fixed sleep
    // is not enough on a loaded machine.
    await expect.poll(() => server.controlPlane.requestCount('work.poll')).toBe(1);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(500);
    expect(await polled).toMatchObject({ status: 204 });
  });
});

describe('a scripted session', () => {
  const events = (sessionId = 'sesn_1') => `/v1/sessions/${sessionId}/events`;

  it('starts when a worker lists its events, waits on each tool result, and ends its turn', async () => {
    server.controlPlane.playSession('sesn_1', [{ name: 'read', input: { file_path: '/a' } }, [{ name: 'write', input: {} }, { name: 'edit', input: {} }]], {
      finalMessage: 'done',
    });
    expect(server.controlPlane.session('sesn_1')!.state).toBe('waiting');
    const first = await call('GET', events(), { query: { limit: 1000 } });
    const toolUse = first.json.data.find((e: any) => e.type === 'agent.tool_use');
    expect(toolUse).toMatchObject({ name: 'read', input: { file_path: '/a' }, evaluated_permission: 'allow' });
    expect(first.json.data.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: { type: 'requires_action', event_ids: [toolUse.id] } });

    const sent = await call('POST', events(), { body: { events: [{ type: 'user.tool_result', tool_use_id: toolUse.id, content: [{ type: 'text', text: 'A' }] }] } });
    expect(sent.json.data[0]).toMatchObject({ type: 'user.tool_result', id: expect.stringMatching(/^sevt_/), processed_at: expect.any(String) });
    await expect.poll(() => server.controlPlane.session('sesn_1')!.pendingToolUses.size).toBe(2);
    const [w, e] = [...server.controlPlane.session('sesn_1')!.pendingToolUses.keys()];
    // Answering one of two leaves the agent waiting; an id it is not waiting on is refused.
    await call('POST', events(), { body: { events: [{ type: 'user.tool_result', tool_use_id: w, is_error: true, content: [{ type: 'text', text: 'no' }] }] } });
    expect(server.controlPlane.session('sesn_1')!.state).toBe('requires_action');
    expect((await call('POST', events(), { body: { events: [{ type: 'user.tool_result', tool_use_id: w }] } })).status).toBe(400);
    await call('POST', events(), { body: { events: [{ type: 'user.tool_result', tool_use_id: e, content: [{ type: 'text', text: 'ok' }] }] } });
    await server.controlPlane.sessionEnded('sesn_1');

    const outcomes = server.controlPlane.session('sesn_1')!.outcomes;
    expect(outcomes.map((o) => [o.call.name, o.text, o.isError])).toEqual([
      ['read', 'A', false],
      ['write', 'no', true],
      ['edit', 'ok', false],
    ]);
    const all = await call('GET', events(), { query: { limit: 2 } });
    expect(all.json.data).toHaveLength(2);
    expect(all.json.next_page).toBe('2');
    const tail = (await call('GET', events(), { query: { limit: 1000, order: 'desc' } })).json.data;
    expect(tail.slice(0, 2).map((e: any) => e.type)).toEqual(['session.status_idle', 'agent.message']);
    expect(tail[0].stop_reason).toEqual({ type: 'end_turn' });
  });

  it('streams later events as server-sent events, and ends the stream when the session terminates', async () => {
    server.controlPlane.playSession('sesn_1', [], { end: 'terminated' });
    const res = await fetch(new URL(events() + '/stream', server.baseURL), { headers: HEADERS });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const text = await res.text(); // ends: the session terminated
    const types = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(types).toEqual(['session.status_running', 'session.status_idle', 'session.status_terminated']);
    expect(server.controlPlane.session('sesn_1')!.state).toBe('terminated');
  });

  it('an agent function that throws fails the session', async () => {
    server.controlPlane.playSession('sesn_1', () => {
      throw new Error('the agent gave up');
    });
    await call('GET', events());
    await server.controlPlane.sessionEnded('sesn_1');
    expect(server.controlPlane.session('sesn_1')).toMatchObject({ state: 'failed', error: new Error('the agent gave up') });
  });
});
