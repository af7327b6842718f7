/**
 * The per-store circuit breaker (SPEC 6.7): a store whose pass failed because the store was
 * unavailable is left alone for a growing, jittered delay, then tried with one probe, so an
 * outage costs the agent nothing and the service a request per step instead of a pass's worth
 * of retries at every tool call.
 *
 * | state     | event                            | next state, and what the pass does               |
 * |-----------|----------------------------------|--------------------------------------------------|
 * | closed    | a pass is due                    | closed: run it (retries within the pass budget)  |
 * | open      | due before `until`               | open: skip the store, send nothing               |
 * | open      | due at or after `until`          | probing: run it as a probe (no retries)          |
 * | closed    | pass ran, store unavailable      | open, step 1: delay ≈ base                       |
 * | probing   | pass ran, store unavailable      | open, step n+1: delay doubles, up to max         |
 * | any       | pass ran, store answered         | closed (a `rejected` or `unauthorized` answer is |
 * |           |                                  | an answer: retrying later would not cure it)     |
 * | any       | `retry-after` came with failure  | `until` is at least that far off                 |
 *
 * Delays are drawn in [½, 1] of the step's ceiling, so a fleet of workers that lost the same
 * store at the same moment does not come back in step. Times are on the mounter's monotonic
 * clock. Finalize and recover never consult the breaker: they use their whole window.
 */

export type BreakerState =
  | { kind: 'closed' }
  /** Skipped until `until`; `step` counts the failures in a row (1 for the first). */
  | { kind: 'open'; step: number; until: number; delayMs: number }
  /** The probe pass is running (or was started and has not been judged yet). */
  | { kind: 'probing'; step: number };

export interface BreakerPolicy {
  /** The first delay's ceiling: about one sync interval. */
  baseMs: number;
  /** The largest delay: 5 minutes. */
  maxMs: number;
}

export const CLOSED: BreakerState = { kind: 'closed' };

/** What the next due pass of a store does: run as usual, run as a probe, or skip. */
export type BreakerDecision = 'run' | 'probe' | 'skip';

export function breakerDecision(state: BreakerState, now: number): BreakerDecision {
  switch (state.kind) {
    case 'closed':
      return 'run';
    case 'open':
      return now >= state.until ? 'probe' : 'skip';
    case 'probing':
      // A probe whose result never came (cut off by the time bound) is tried again.
      return 'probe';
  }
}

/** The state once a pass was started on `decision`. */
export function breakerStarted(state: BreakerState, decision: BreakerDecision): BreakerState {
  if (decision === 'probe' && state.kind === 'open') return { kind: 'probing', step: state.step };
  return state;
}

/** How a pass that ran ended, as the breaker counts it. */
export type PassVerdict =
  | { kind: 'answered' }
  | { kind: 'unavailable'; retryAfterMs?: number }
  /** Cut off, skipped, or failed for a reason that says nothing of the store: no change. */
  | { kind: 'inconclusive' };

/**
 * The state after a pass. `random` is uniform in [0, 1).
 */
export function breakerAfter(state: BreakerState, verdict: PassVerdict, now: number, policy: BreakerPolicy, random: number): BreakerState {
  switch (verdict.kind) {
    case 'answered':
      return CLOSED;
    case 'inconclusive':
      return state;
    case 'unavailable': {
      const step = state.kind === 'closed' ? 1 : state.step + 1;
      const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (step - 1));
      const jittered = Math.round(ceiling * (0.5 + random / 2));
      const delayMs = Math.max(jittered, Math.min(verdict.retryAfterMs ?? 0, policy.maxMs));
      return { kind: 'open', step, until: now + delayMs, delayMs };
    }
  }
}
