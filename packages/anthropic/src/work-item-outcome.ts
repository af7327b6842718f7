/** What the worker knows of an item's lease at a decision: still ours, the service asked to stop, or gone. */
export type LeaseState = 'held' | 'stopping' | 'lost';

/**
 * How the session's part of an item ended: the tool runner returned (`ended`), something on
 * the way threw (`threw`: the session fetch, the mount, the event stream), or there was nothing
 * to serve (`skipped`: not a session, or a session already terminated).
 */
export type SessionEnd = 'ended' | 'threw' | 'skipped';

/**
 * The outcome memory is finalized with, decided while the lease is still heartbeated:
 *
 * | session ended | lease    | worker's signal | finalize    |
 * | ------------- | -------- | --------------- | ----------- |
 * | `ended`       | held     | not aborted     | `completed` |
 * | anything else |          |                 | `aborted`   |
 *
 * Only a session the runner served to its end, on a lease still ours and a worker not shutting
 * down, earns the last full sync (pulls and deletes included). Every other end pushes what the
 * agent wrote (the `aborted` flush) and pulls nothing: a stop request or a lost lease means the
 * session's view may already be stale, and a failed stream says nothing about what is in the
 * store.
 */
export function finalizeOutcome(end: SessionEnd, lease: LeaseState, aborted: boolean): 'completed' | 'aborted' {
  return end === 'ended' && lease === 'held' && !aborted ? 'completed' : 'aborted';
}

/**
 * What becomes of the item once memory is torn down, by its lease as the heartbeat loop ended:
 *
 * | lease      | force-stop the item | the item fails with            |
 * | ---------- | ------------------- | ------------------------------ |
 * | `lost`     | no                  | `lease_lost`                   |
 * | `held`     | yes                 | the session's error, if any    |
 * | `stopping` | yes                 | the session's error, if any    |
 *
 * A lost lease wins over any other error: the item is another worker's now (stopping it would
 * end that worker's session), and the loss is what cut the session short.
 */
export function afterTeardown(lease: LeaseState): { stop: boolean; failure: 'lease_lost' | null } {
  if (lease === 'lost') return { stop: false, failure: 'lease_lost' };
  return { stop: true, failure: null };
}
