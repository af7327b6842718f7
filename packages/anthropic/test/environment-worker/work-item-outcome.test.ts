import { describe, expect, it } from 'vitest';
import { afterTeardown, finalizeOutcome, type LeaseState, type SessionEnd } from '../../src/work-item-outcome.js';

// The two decision tables of work-item-outcome.ts, row by row, in their order.

describe('finalizeOutcome', () => {
  it('row 1: the runner ended on its own, the lease held, the worker not shutting down: completed', () => {
    expect(finalizeOutcome('ended', 'held', false)).toBe('completed');
  });

  it.each<[SessionEnd, LeaseState, boolean]>([
    ['ended', 'stopping', false],
    ['ended', 'lost', false],
    ['ended', 'held', true],
    ['threw', 'held', false],
    ['threw', 'lost', false],
    ['skipped', 'held', false],
  ])('row 2, anything else (%s, lease %s, aborted %s): aborted', (end, lease, aborted) => {
    expect(finalizeOutcome(end, lease, aborted)).toBe('aborted');
  });
});

describe('afterTeardown', () => {
  it('row 1: lost: the item is left to whoever holds it, and fails lease_lost', () => {
    expect(afterTeardown('lost')).toEqual({ stop: false, failure: 'lease_lost' });
  });
  it('row 2: held: force-stopped, no failure of its own', () => {
    expect(afterTeardown('held')).toEqual({ stop: true, failure: null });
  });
  it('row 3: stopping: force-stopped, no failure of its own', () => {
    expect(afterTeardown('stopping')).toEqual({ stop: true, failure: null });
  });
});
