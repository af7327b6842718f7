import { setTimeout as sleep } from 'node:timers/promises';
import type Anthropic from '@anthropic-ai/sdk';
import type { BetaToolRunnerRequestOptions } from '@anthropic-ai/sdk/lib/tools/BetaToolRunner';
import type { BetaSelfHostedWorkHeartbeatResponse } from '@anthropic-ai/sdk/resources/beta/environments/work';

/** The TTL assumed before the service has answered a heartbeat. */
export const ASSUMED_TTL_MS = 90_000;
/** How soon a failed heartbeat is tried again. */
export const RETRY_AFTER_MS = 1_000;
/** The longest wait between heartbeats, however long the TTL. */
export const MAX_BEAT_INTERVAL_MS = 30_000;

/** What the heartbeat loop knows of a lease between two heartbeats. */
export interface LeaseClock {
  /** The TTL the service last applied, in ms (`ASSUMED_TTL_MS` until it has said one). */
  ttlMs: number;
  /** When the lease was last renewed, or the loop began, in ms on the loop's clock. */
  renewedAt: number;
}

/** One heartbeat's outcome: the fields of the service's answer the loop reads, or `failed` when the call threw. */
export type HeartbeatResult = Pick<BetaSelfHostedWorkHeartbeatResponse, 'state' | 'lease_extended' | 'ttl_seconds'> | 'failed';

/**
 * What follows a heartbeat: beat again after `waitMs` with the lease as it now stands, or end
 * the session: `stopping` when the service asked for it, `lost` when the lease is gone.
 */
export type LeaseStep = { next: 'beat'; waitMs: number; lease: LeaseClock } | { next: 'end'; reason: 'stopping' | 'lost' };

/**
 * The heartbeat decision table, one branch per row, in this order:
 *
 * | heartbeat                            | step                                   |
 * | ------------------------------------ | -------------------------------------- |
 * | failed, within the TTL of renewal    | beat again after `RETRY_AFTER_MS`      |
 * | failed, past the TTL of renewal      | end `lost`                             |
 * | answered, state stopping or stopped  | end `stopping`                         |
 * | answered, lease not extended         | end `lost`                             |
 * | answered, lease extended             | beat again after half the TTL (capped) |
 *
 * Pure: `now` is the loop's clock at the moment the heartbeat settled.
 */
export function nextLeaseStep(lease: LeaseClock, result: HeartbeatResult, now: number): LeaseStep {
  if (result === 'failed') {
    // No answer, so the lease stands as last renewed. Within its TTL it may still be ours: a
    // transient failure is retried rather than giving up a session that is running fine.
    if (now - lease.renewedAt <= lease.ttlMs) return { next: 'beat', waitMs: RETRY_AFTER_MS, lease };
    // Past the TTL the lease has lapsed whatever the reason, and the item may be another worker's.
    return { next: 'end', reason: 'lost' };
  }
  // The service answered. Its state comes first: a stop request ends the session even when
  // the lease was not extended, so the caller tells a requested stop from a lost lease.
  if (result.state === 'stopping' || result.state === 'stopped') return { next: 'end', reason: 'stopping' };
  // Not stopping, and the lease was not extended: it is no longer ours to serve.
  if (!result.lease_extended) return { next: 'end', reason: 'lost' };
  // Renewed now. A TTL of 0 or less says nothing new, so the last one known stands. Half the
  // TTL leaves room for one failed beat and its retries before the lease would lapse.
  const ttlMs = result.ttl_seconds > 0 ? result.ttl_seconds * 1000 : lease.ttlMs;
  return { next: 'beat', waitMs: Math.min(ttlMs / 2, MAX_BEAT_INTERVAL_MS), lease: { ttlMs, renewedAt: now } };
}

/**
 * How the heartbeat loop ended: `released` when `signal` aborted (the session is over and the
 * item let go), `stopping` when the service asked the worker to stop, `lost` when the lease
 * could not be renewed.
 */
export type LeaseEnd = 'released' | 'stopping' | 'lost';

/**
 * Heartbeats a work item's lease until `signal` aborts, and calls `end` (once, with the reason)
 * when the loop ends for any other reason (`stopping`, `lost`) so that the session stops too. A `WorkPoller`
 * does not heartbeat, and an item whose lease lapses is handed to another worker.
 *
 * `client` must carry the credential for per-item calls (the item's sessions token);
 * `requestOptions` (headers, say) go with every heartbeat.
 */
export async function keepLease(
  client: Anthropic,
  work: { id: string; environment_id: string },
  signal: AbortSignal,
  end: (reason: 'stopping' | 'lost') => void,
  requestOptions: BetaToolRunnerRequestOptions = {},
): Promise<LeaseEnd> {
  let lease: LeaseClock = { ttlMs: ASSUMED_TTL_MS, renewedAt: Date.now() };
  while (!signal.aborted) {
    let result: HeartbeatResult;
    try {
      result = await client.beta.environments.work.heartbeat(
        work.id,
        { environment_id: work.environment_id },
        { ...requestOptions, signal },
      );
    } catch {
      // An abort during the call is the session ending, not a failed heartbeat.
      if (signal.aborted) break;
      result = 'failed';
    }
    const step = nextLeaseStep(lease, result, Date.now());
    if (step.next === 'end') {
      end(step.reason);
      return step.reason;
    }
    lease = step.lease;
    // An abort cuts the wait short; the loop condition then ends the loop.
    await sleep(step.waitMs, undefined, { signal }).catch(() => undefined);
  }
  return 'released';
}
