import { describe, expect, it } from 'vitest';
import { breakerAfter, breakerDecision, breakerStarted, CLOSED, type BreakerState } from '../src/decide/breaker.js';

const policy = { baseMs: 15_000, maxMs: 300_000 };

describe('the circuit breaker, row by row', () => {
  it('closed: a due pass runs', () => {
    expect(breakerDecision(CLOSED, 0)).toBe('run');
    expect(breakerStarted(CLOSED, 'run')).toEqual(CLOSED);
  });

  it('open before until: the store is skipped', () => {
    const open: BreakerState = { kind: 'open', step: 1, until: 10_000, delayMs: 10_000 };
    expect(breakerDecision(open, 9_999)).toBe('skip');
  });

  it('open at or after until: one probe', () => {
    const open: BreakerState = { kind: 'open', step: 2, until: 10_000, delayMs: 10_000 };
    expect(breakerDecision(open, 10_000)).toBe('probe');
    expect(breakerStarted(open, 'probe')).toEqual({ kind: 'probing', step: 2 });
  });

  it('probing with no verdict yet (cut off): probes again', () => {
    expect(breakerDecision({ kind: 'probing', step: 1 }, 0)).toBe('probe');
  });

  it('closed, store unavailable: open at step 1, delay in [½, 1] of the base', () => {
    expect(breakerAfter(CLOSED, { kind: 'unavailable' }, 1_000, policy, 0)).toEqual({ kind: 'open', step: 1, until: 1_000 + 7_500, delayMs: 7_500 });
    const high = breakerAfter(CLOSED, { kind: 'unavailable' }, 1_000, policy, 0.999_999);
    expect(high).toMatchObject({ kind: 'open', step: 1, delayMs: 15_000 });
  });

  it('a failed probe: the delay doubles, up to the maximum', () => {
    let state: BreakerState = CLOSED;
    const ceilings: number[] = [];
    for (let i = 0; i < 8; i++) {
      state = breakerAfter(breakerStarted(state, 'probe'), { kind: 'unavailable' }, 0, policy, 0.999_999);
      ceilings.push(state.kind === 'open' ? state.delayMs : -1);
    }
    expect(ceilings).toEqual([15_000, 30_000, 60_000, 120_000, 240_000, 300_000, 300_000, 300_000]);
  });

  it('any state, the store answered: closed', () => {
    expect(breakerAfter({ kind: 'probing', step: 4 }, { kind: 'answered' }, 0, policy, 0.5)).toEqual(CLOSED);
    expect(breakerAfter({ kind: 'open', step: 1, until: 5, delayMs: 5 }, { kind: 'answered' }, 0, policy, 0.5)).toEqual(CLOSED);
  });

  it('an inconclusive pass (cut off, a disk problem) changes nothing', () => {
    const probing: BreakerState = { kind: 'probing', step: 3 };
    expect(breakerAfter(probing, { kind: 'inconclusive' }, 0, policy, 0.5)).toBe(probing);
    expect(breakerAfter(CLOSED, { kind: 'inconclusive' }, 0, policy, 0.5)).toBe(CLOSED);
  });

  it('retry-after: the store is not tried before it, even past the step delay', () => {
    const state = breakerAfter(CLOSED, { kind: 'unavailable', retryAfterMs: 30_000 }, 0, policy, 0);
    expect(state).toMatchObject({ kind: 'open', until: 30_000 });
    expect(breakerDecision(state, 29_999)).toBe('skip');
    // A retry-after longer than the largest delay is held to it: a store never drops out for good.
    expect(breakerAfter(CLOSED, { kind: 'unavailable', retryAfterMs: 3_600_000 }, 0, policy, 0)).toMatchObject({ until: 300_000 });
  });
});
