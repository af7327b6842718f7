import Anthropic from '@anthropic-ai/sdk';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryApiServer, type AgentToolOutcome, type ControlPlaneEvent } from '@memory-mounter/testing';
import { liveControlPlane } from '../../src/control-plane.js';

// liveControlPlane (the SDK's WorkPoller and SessionToolRunner, and keepLease) against the
// emulator's control plane: real HTTP, real SDK, a scripted agent on the other side.

const ENV = 'env_emulated';
const ENV_KEY = 'environment-key';
const TOKEN = 'sessions-token-1';

/** A tool the agent can call: `echo` answers its input's text, `fail` throws a ToolError. */
function tool(name: string, run: (input: { text?: string }) => Promise<string>): BetaRunnableTool {
  return { type: 'custom', name, input_schema: { type: 'object' }, parse: (input: unknown) => input as { text?: string }, run };
}
const echo = tool('echo', async (input) => `echo: ${input.text ?? ''}`);
const fail = tool('fail', async () => {
  throw new ToolError('fail: refused on purpose');
});

describe('liveControlPlane against the emulated control plane', () => {
  let server: MemoryApiServer;
  let client: Anthropic;
  let events: ControlPlaneEvent[];

  beforeEach(async () => {
    server = new MemoryApiServer({ controlPlane: { environmentKey: ENV_KEY } });
    client = new Anthropic({ apiKey: ENV_KEY, baseURL: await server.start(), maxRetries: 0 });
    events = [];
    server.controlPlane.on((event) => events.push(event));
  });
  afterEach(() => server.close());

  const plane = (over: { maxIdleMs?: number } = {}) =>
    liveControlPlane({ client, environmentId: ENV, environmentKey: ENV_KEY, drain: true, maxIdleMs: over.maxIdleMs ?? 50 });

  it('claims the queued item, serves the agent’s calls in order, posts each result, and releases the item', async () => {
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    const seen: string[][] = [];
    server.controlPlane.playSession('sesn_1', (outcomes) => {
      seen.push(outcomes.map((o) => o.text));
      if (outcomes.length === 0) return { name: 'echo', input: { text: 'one' } };
      if (outcomes.length === 1) return [{ name: 'echo', input: { text: 'two' } }, { name: 'fail', input: {} }];
      return null;
    });

    const served: string[] = [];
    const cp = plane();
    for await (const work of cp.claimWork(new AbortController().signal)) {
      served.push(`${work.id}:${work.data.id}`);
      await cp.runSession(work, [echo, fail], new AbortController().signal);
    }

    expect(served).toEqual(['work_1:sesn_1']);
    // The agent read each result before its next step: the results are what the tools returned,
    // and a ToolError's own text reached it (the SDK recognised the ToolError).
    expect(seen).toEqual([[], ['echo: one'], ['echo: one', 'echo: two', 'fail: refused on purpose']]);
    const outcomes = server.controlPlane.session('sesn_1')!.outcomes;
    expect(outcomes.map((o: AgentToolOutcome) => [o.call.name, o.isError])).toEqual([
      ['echo', false],
      ['echo', false],
      ['fail', true],
    ]);
    expect(server.controlPlane.session('sesn_1')!.state).toBe('idle');
    // Claimed with its secret, acked, heartbeated with the sessions token, stopped after the session.
    const kinds = events.map((e) => e.kind).filter((k) => k !== 'heartbeat');
    expect(kinds).toEqual([
      'claimed',
      'acked',
      'stream_attached',
      'tool_use',
      'tool_result',
      'tool_use',
      'tool_use',
      'tool_result',
      'tool_result',
      'session_ended',
      'stopped',
    ]);
    expect(events[0]).toMatchObject({ kind: 'claimed', work: { id: 'work_1', secret: expect.any(String) } });
    expect(server.controlPlane.heartbeats('work_1')[0]).toMatchObject({ lease_extended: true, state: 'active', ttl_seconds: 300 });
    expect(server.controlPlane.work('work_1')).toMatchObject({ state: 'stopped', secret: null });
    expect(server.controlPlane.requestCount('events.send')).toBe(3);
  });

  it('keeps the lease: with a 1 s TTL a session that runs 1.2 s is heartbeated again, and each beat is extended', async () => {
    server.controlPlane.leaseTtlSeconds = 1;
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', async (outcomes) => {
      if (outcomes.length > 0) return null;
      await new Promise((resolve) => setTimeout(resolve, 1_200)); // the agent thinks
      return { name: 'echo', input: { text: 'late' } };
    });

    const cp = plane();
    for await (const work of cp.claimWork(new AbortController().signal)) {
      await cp.runSession(work, [echo], new AbortController().signal);
    }

    const beats = server.controlPlane.heartbeats('work_1');
    // Beats at 0, ~0.5 s and ~1 s: half the TTL apart.
    expect(beats.length).toBeGreaterThanOrEqual(3);
    expect(beats.every((b) => b.lease_extended && b.ttl_seconds === 1)).toBe(true);
    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => o.text)).toEqual(['echo: late']);
  });

  it('a lease that is not extended ends the session and runSession rejects: lease lost', async () => {
    server.controlPlane.leaseTtlSeconds = 1;
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', async (outcomes) => {
      if (outcomes.length > 0) {
        server.controlPlane.expireLease('work_1'); // another worker took the item
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
      return { name: 'echo', input: { text: String(outcomes.length) } };
    });

    const cp = plane({ maxIdleMs: 0 });
    let failure: unknown;
    for await (const work of cp.claimWork(new AbortController().signal)) {
      failure = await cp.runSession(work, [echo], new AbortController().signal).catch((err: unknown) => err);
    }

    expect(String(failure)).toMatch(/work item work_1: lease lost/);
    // Typed, so that a worker's loop can tell it from a bug and go on.
    expect(failure).toMatchObject({ name: 'WorkItemError', code: 'lease_lost', workId: 'work_1' });
    expect(server.controlPlane.heartbeats('work_1').at(-1)).toMatchObject({ lease_extended: false });
  });

  it('a stop requested by the service ends the session without an error', async () => {
    server.controlPlane.leaseTtlSeconds = 1;
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', async () => {
      server.controlPlane.requestStop('work_1');
      return { name: 'echo', input: {} };
    });

    const cp = plane({ maxIdleMs: 0 });
    for await (const work of cp.claimWork(new AbortController().signal)) {
      await cp.runSession(work, [echo], new AbortController().signal);
    }

    expect(server.controlPlane.heartbeats('work_1').at(-1)).toMatchObject({ state: 'stopping' });
    expect(server.controlPlane.work('work_1').state).toBe('stopped');
  });

  it('refuses the work queue without the environment key, and a result for a tool use nobody asked for', async () => {
    const stranger = client.withOptions({ apiKey: 'someone-else' });
    await expect(stranger.beta.environments.work.poll(ENV)).rejects.toMatchObject({ status: 401 });
    server.controlPlane.playSession('sesn_1', []);
    await expect(
      client.beta.sessions.events.send('sesn_1', { events: [{ type: 'user.tool_result', tool_use_id: 'sevt_nope', content: [] }] }),
    ).rejects.toMatchObject({ status: 400 });
  });
});
