import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import {
  ASSUMED_TTL_MS,
  keepLease,
  MAX_BEAT_INTERVAL_MS,
  nextLeaseStep,
  RETRY_AFTER_MS,
  type HeartbeatResult,
  type LeaseClock,
} from '../../src/lease-heartbeat.js';

const lease: LeaseClock = { ttlMs: 60_000, renewedAt: 1_000 };
const answer = (over: Partial<Exclude<HeartbeatResult, 'failed'>> = {}): HeartbeatResult => ({
  state: 'active',
  lease_extended: true,
  ttl_seconds: 60,
  ...over,
});

// One test per row of nextLeaseStep's table, in the table's order.
describe('nextLeaseStep', () => {
  it('failed, within the TTL of the last renewal: beat again soon, the lease as it was', () => {
    expect(nextLeaseStep(lease, 'failed', 1_000 + 30_000)).toEqual({ next: 'beat', waitMs: RETRY_AFTER_MS, lease });
    // The TTL's last millisecond still counts as within it.
    expect(nextLeaseStep(lease, 'failed', 1_000 + 60_000)).toEqual({ next: 'beat', waitMs: RETRY_AFTER_MS, lease });
  });

  it('failed, past the TTL of the last renewal: the lease is lost', () => {
    expect(nextLeaseStep(lease, 'failed', 1_000 + 60_001)).toEqual({ next: 'end', reason: 'lost' });
  });

  it('answered stopping or stopped: end, stopping, even when the lease was not extended', () => {
    expect(nextLeaseStep(lease, answer({ state: 'stopping' }), 2_000)).toEqual({ next: 'end', reason: 'stopping' });
    expect(nextLeaseStep(lease, answer({ state: 'stopped', lease_extended: false }), 2_000)).toEqual({
      next: 'end',
      reason: 'stopping',
    });
  });

  it('answered, lease not extended: the lease is lost', () => {
    expect(nextLeaseStep(lease, answer({ lease_extended: false }), 2_000)).toEqual({ next: 'end', reason: 'lost' });
  });

  it('answered, lease extended: renewed now, next beat at half the TTL, capped', () => {
    expect(nextLeaseStep(lease, answer({ ttl_seconds: 20 }), 5_000)).toEqual({
      next: 'beat',
      waitMs: 10_000,
      lease: { ttlMs: 20_000, renewedAt: 5_000 },
    });
    expect(nextLeaseStep(lease, answer({ ttl_seconds: 300 }), 5_000)).toEqual({
      next: 'beat',
      waitMs: MAX_BEAT_INTERVAL_MS,
      lease: { ttlMs: 300_000, renewedAt: 5_000 },
    });
    // A TTL of 0 says nothing new: the last one known stands.
    expect(nextLeaseStep(lease, answer({ ttl_seconds: 0 }), 5_000)).toEqual({
      next: 'beat',
      waitMs: 30_000,
      lease: { ttlMs: 60_000, renewedAt: 5_000 },
    });
  });

  it('before any answer, a failure is retried for the assumed TTL', () => {
    const start: LeaseClock = { ttlMs: ASSUMED_TTL_MS, renewedAt: 0 };
    expect(nextLeaseStep(start, 'failed', ASSUMED_TTL_MS)).toMatchObject({ next: 'beat' });
    expect(nextLeaseStep(start, 'failed', ASSUMED_TTL_MS + 1)).toEqual({ next: 'end', reason: 'lost' });
  });
});

/** A client whose only working call is the heartbeat, answered by `beat`. */
function heartbeatClient(beat: (workId: string, params: { environment_id: string }, options: { signal: AbortSignal }) => Promise<unknown>) {
  const calls: { workId: string; environmentId: string }[] = [];
  const client = {
    beta: {
      environments: {
        work: {
          heartbeat: (workId: string, params: { environment_id: string }, options: { signal: AbortSignal }) => {
            calls.push({ workId, environmentId: params.environment_id });
            return beat(workId, params, options);
          },
        },
      },
    },
  } as unknown as Anthropic;
  return { client, calls };
}

const work = { id: 'work_1', environment_id: 'env_1' };

describe('keepLease', () => {
  it('a stop request ends the session: `end` is called once and the loop says stopping', async () => {
    const { client, calls } = heartbeatClient(async () => answer({ state: 'stopping' }));
    let ended = 0;

    const result = await keepLease(client, work, new AbortController().signal, () => ended++);

    expect(result).toBe('stopping');
    expect(ended).toBe(1);
    expect(calls).toEqual([{ workId: 'work_1', environmentId: 'env_1' }]);
  });

  it('a lease not extended ends the session as lost', async () => {
    const { client } = heartbeatClient(async () => answer({ lease_extended: false }));
    let ended = 0;

    expect(await keepLease(client, work, new AbortController().signal, () => ended++)).toBe('lost');
    expect(ended).toBe(1);
  });

  it('an already aborted signal releases the lease without a heartbeat', async () => {
    const { client, calls } = heartbeatClient(async () => answer());
    let ended = 0;

    expect(await keepLease(client, work, AbortSignal.abort(), () => ended++)).toBe('released');
    expect(calls).toEqual([]);
    expect(ended).toBe(0);
  });

  it('an abort while waiting or while a heartbeat is in flight releases the lease; `end` is not called', async () => {
    // First beat renewed (the loop then waits up to 30 s); the abort cuts the wait short.
    const waiting = new AbortController();
    const renewed = heartbeatClient(async () => {
      setTimeout(() => waiting.abort(), 10);
      return answer();
    });
    let ended = 0;
    expect(await keepLease(renewed.client, work, waiting.signal, () => ended++)).toBe('released');
    expect(renewed.calls).toHaveLength(1);

    // A heartbeat that only settles when aborted: the abort is the session ending, not a failure.
    const inFlight = new AbortController();
    const hanging = heartbeatClient(
      (_id, _params, { signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    setTimeout(() => inFlight.abort(), 10);
    expect(await keepLease(hanging.client, work, inFlight.signal, () => ended++)).toBe('released');
    expect(ended).toBe(0);
  });
});
