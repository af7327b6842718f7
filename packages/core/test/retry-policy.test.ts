import { describe, expect, it } from 'vitest';
import {
  breakerPolicy,
  callBackoffMs,
  CONTRADICTIONS,
  finalRepeatDelayMs,
  passRetryUntil,
  refusedUntilContentChanges,
  repeatRule,
  type StoreOperation,
} from '../src/decide/retry-policy.js';

describe('the retry policy, row by row', () => {
  const reads: StoreOperation[] = ['list', 'listVersions', 'listFolder', 'get'];
  it.each(reads)('%s only reads: always repeated', (operation) => {
    expect(repeatRule(operation, false)).toBe(true);
  });

  it('a create could apply twice: never repeated, guarded or not', () => {
    expect(repeatRule('create', false)).toBe(false);
    expect(repeatRule('create', true)).toBe(false);
  });

  it('an unguarded update or delete is never repeated', () => {
    expect(repeatRule('update', false)).toBe(false);
    expect(repeatRule('delete', false)).toBe(false);
  });

  it("a guarded update is repeated, and a repeat that meets its own write (content or path) leaves the outcome unknown", () => {
    const rule = repeatRule('update', true);
    expect(rule).toBeInstanceOf(Set);
    expect([...(rule as Set<string>)].sort()).toEqual(['path_conflict', 'precondition_failed']);
  });

  it("a guarded delete is repeated, and every answer to the repeat is an answer", () => {
    expect(repeatRule('delete', true)).toBe(true);
  });

  it('backoff: full jitter under a ceiling that doubles up to its largest', () => {
    expect(callBackoffMs(1, 0.5, undefined)).toBe(50);
    expect(callBackoffMs(2, 0.5, undefined)).toBe(100);
    expect(callBackoffMs(3, 0.999, undefined)).toBe(399);
    expect(callBackoffMs(20, 0.5, undefined)).toBe(1_500);
    expect(callBackoffMs(1, 0, undefined)).toBe(0);
  });

  it("backoff: never sooner than the store's retry-after", () => {
    expect(callBackoffMs(1, 0.5, 2_000)).toBe(2_000);
    expect(callBackoffMs(20, 0.9, 10)).toBe(2_700);
  });

  describe('a push-only final pass run again', () => {
    const none = { rereads: 0, resends: 0 };
    it('nothing left: not run again', () => {
      expect(finalRepeatDelayMs({ unreadPushes: false, unknownWrites: false }, none, 0.5)).toBeNull();
    });
    it('a push that could not read its file: after each reread delay, then no more', () => {
      const left = { unreadPushes: true, unknownWrites: false };
      expect(finalRepeatDelayMs(left, none, 0.5)).toEqual({ ms: 50, reason: 'reread' });
      expect(finalRepeatDelayMs(left, { rereads: 2, resends: 0 }, 0.5)).toEqual({ ms: 1_000, reason: 'reread' });
      expect(finalRepeatDelayMs(left, { rereads: 3, resends: 0 }, 0.5)).toBeNull();
    });
    it('a write of unknown outcome: jittered, doubling from 200 ms up to 3 s, never given up (the window ends it)', () => {
      const left = { unreadPushes: false, unknownWrites: true };
      expect(finalRepeatDelayMs(left, none, 0.5)).toEqual({ ms: 100, reason: 'resend' });
      expect(finalRepeatDelayMs(left, { rereads: 0, resends: 2 }, 0.5)).toEqual({ ms: 400, reason: 'resend' });
      expect(finalRepeatDelayMs(left, { rereads: 0, resends: 50 }, 0.999)).toEqual({ ms: 2_997, reason: 'resend' });
    });
    it('a push the store contradicted: the same waits as a resend (decided again from a full listing)', () => {
      const left = { unreadPushes: false, unknownWrites: false, contradictedPushes: true };
      expect(finalRepeatDelayMs(left, none, 0.5)).toEqual({ ms: 100, reason: 'resend' });
      expect(finalRepeatDelayMs(left, { rereads: 0, resends: 3 }, 0.5)).toEqual({ ms: 800, reason: 'resend' });
      expect(finalRepeatDelayMs({ ...left, contradictedPushes: false }, none, 0.5)).toBeNull();
    });
    it('both: the shorter wait, named by its reason; rereads spent, resends go on', () => {
      const both = { unreadPushes: true, unknownWrites: true };
      expect(finalRepeatDelayMs(both, none, 0.9)).toEqual({ ms: 50, reason: 'reread' });
      expect(finalRepeatDelayMs(both, none, 0.1)).toEqual({ ms: 20, reason: 'resend' });
      expect(finalRepeatDelayMs(both, { rereads: 3, resends: 0 }, 0.9)).toEqual({ ms: 180, reason: 'resend' });
    });
  });

  it('a pass retries until its budget runs out; a probe not at all', () => {
    expect(passRetryUntil('run', 1_000, 5_000)).toBe(6_000);
    expect(passRetryUntil('probe', 1_000, 5_000)).toBe(Number.NEGATIVE_INFINITY);
  });

  it('across passes the breaker starts at one sync interval and stops growing at five minutes', () => {
    expect(breakerPolicy(2_000)).toEqual({ baseMs: 2_000, maxMs: 300_000 });
  });

  it('only a rejection keeps a push from being sent again until the content changes', () => {
    expect(refusedUntilContentChanges('rejected')).toBe(true);
    for (const kind of ['unavailable', 'not_found', 'precondition_failed', 'filesystem'] as const) expect(refusedUntilContentChanges(kind)).toBe(false);
  });

  it('answers that contradict the view the pass planned from', () => {
    expect([...CONTRADICTIONS].sort()).toEqual(['not_found', 'path_conflict', 'precondition_failed']);
  });
});
