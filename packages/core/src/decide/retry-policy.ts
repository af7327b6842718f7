import type { StoreErrorKind } from '../model/errors.js';
import { MAX_BREAKER_DELAY_MS } from '../model/limits.js';
import type { BreakerPolicy } from './breaker.js';

/**
 * The engine's retry policy, whole, in one place. The mechanisms that carry it out live where
 * their I/O is (named in each section); what they repeat, how often and for how long is decided
 * here. Pure.
 *
 * | when               | what is tried again                                     | bound                          | carried out by            |
 * |--------------------|---------------------------------------------------------|--------------------------------|---------------------------|
 * | within one call    | an `unavailable` failure of a call whose repeat is safe | backoff with full jitter, `retry-after` as a floor | remote/bounded-store-client.ts |
 * | within one pass    | the calls above, until the pass's retry budget          | `retryBudget` (5 s); a probe: none | session/mounter.ts (`retryUntil`) |
 * | within a final pass| a scan that could not read a file, a push that could not read it | `REREAD_DELAYS_MS` (1.35 s) | pass/store-sync.ts |
 * | within a final pass| a push-only pass that left a write of unknown outcome: read again, then send what did not land | `finalRepeatDelayMs`, until the final window ends | pass/store-sync.ts |
 * | across passes      | a store whose pass failed `unavailable`                 | the circuit breaker: growing, jittered delay, then one probe | decide/breaker.ts, session/mounter.ts |
 * | never, as a repeat | `create`, an unguarded `update`, an unguarded `delete`  | the engine settles their outcome by what the store shows next (`settleUnknownWrites`), and sends again only what did not land | decide/plan.ts |
 * | never, until the content changes | a push the store `rejected`              | `SyncState.refused`            | decide/settle.ts |
 *
 * The host's StoreClient retries nothing of its own (the Anthropic adapter runs the SDK with
 * `maxRetries: 0`): one layer owns retries, so a `create` sent once is sent once.
 */

/** The store calls the engine makes. */
export type StoreOperation = 'list' | 'listVersions' | 'listFolder' | 'get' | 'create' | 'update' | 'delete';

/**
 * Whether a call that failed `unavailable` may be sent again: `false` never, `true` always, or
 * the answers that, to a repeat, may be the store showing the earlier attempt's own write (it
 * may have landed), and so leave the outcome unknown rather than answer it.
 *
 * Listings and `get` only read. A guarded `update` (`expected_content_sha256`) cannot apply
 * twice, but its repeat meets its own write as `precondition_failed` (content) or
 * `path_conflict` (a rename). A guarded `delete` cannot delete twice; its repeat's `not_found`
 * is taken as done, and a `precondition_failed` is an answer (our delete would have left nothing
 * to compare). `create` and unguarded writes could apply twice: tried once.
 */
export type RepeatRule = boolean | ReadonlySet<StoreErrorKind>;

const UPDATE_MEETS_OWN_WRITE: ReadonlySet<StoreErrorKind> = new Set<StoreErrorKind>(['precondition_failed', 'path_conflict']);

export function repeatRule(operation: StoreOperation, guarded: boolean): RepeatRule {
  switch (operation) {
    case 'list':
    case 'listVersions':
    case 'listFolder':
    case 'get':
      return true;
    case 'create':
      return false;
    case 'update':
      return guarded ? UPDATE_MEETS_OWN_WRITE : false;
    case 'delete':
      return guarded;
  }
}

/** The first backoff ceiling of a call's retries (doubling with each), and the largest. */
export const CALL_BACKOFF_BASE_MS = 100;
export const CALL_BACKOFF_MAX_MS = 3_000;

/**
 * How long to wait before retry `attempt` (1 for the first): full jitter under a ceiling that
 * doubles from `baseMs` up to `maxMs`, and never sooner than the store's own `retry-after`.
 * `random` is uniform in [0, 1).
 */
export function callBackoffMs(attempt: number, random: number, retryAfterMs: number | undefined, baseMs = CALL_BACKOFF_BASE_MS, maxMs = CALL_BACKOFF_MAX_MS): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.max(Math.floor(random * ceiling), retryAfterMs ?? 0);
}

/**
 * The instant (monotonic ms) past which no retry of a pass's store calls starts: the retry
 * budget after the pass starts, or never for a probe, whose one request is the answer. Final
 * passes (finalize, recover) have no such instant: they retry until their own window ends.
 */
export function passRetryUntil(decision: 'run' | 'probe', nowMs: number, retryBudgetMs: number): number {
  return decision === 'probe' ? Number.NEGATIVE_INFINITY : nowMs + retryBudgetMs;
}

/**
 * The waits (ms) before each scan taken again by a final pass (finalize, recover) that could not
 * read a file, and before each push-only pass run again for pushes that could not read theirs:
 * 1.35 s in all, short beside `finalSyncTimeout` (30 s by default), and long enough for
 * descriptors other reads of this process held to be closed. EMFILE and EIO are often gone a
 * moment later; what stays unreadable is named unpushed and keeps the folder. Ordinary passes
 * just try again at the next pass.
 */
export const REREAD_DELAYS_MS: readonly number[] = [50, 300, 1_000];

/** The first ceiling of the waits between push-only final passes run again for unknown writes. */
export const FINAL_RESEND_BASE_MS = 200;

/**
 * Whether a push-only final pass (finalize's flush, recover) runs again, and after how many ms;
 * null when it does not. `rereads` and `resends` count the passes run again so far for each
 * reason; `random` is uniform in [0, 1).
 *
 * - A push that could not read its file (EMFILE, EIO): after each of `REREAD_DELAYS_MS`, then no
 *   more; what stays unread is named unpushed and keeps the folder.
 * - A write of unknown outcome (a create, or another write never repeated, answered
 *   `unavailable`): the folder is removed next, so leaving it to a later pass would lose it. The
 *   pass runs again after a jittered, doubling wait, until the final window ends (the caller's
 *   signal). Sending it again is safe because the pass reads the store first: a memory holding
 *   the sent sha settles it as landed (SPEC 6.6, B35), and only what did not land is sent.
 * - A push the store contradicted (`CONTRADICTIONS`: another writer changed, took or removed the
 *   memory after the pass read it): the same waits. The pass lists the store in full first (the
 *   view is distrusted), so the push is decided again: sent against what the store now holds, or
 *   met as a conflict whose loser, the agent's bytes, is handed over (B43). Left to a later
 *   pass, it would be named unpushed and its folder removed with it.
 *
 * Both kinds at once: the shorter wait, since one pass does both.
 */
export function finalRepeatDelayMs(
  left: { unreadPushes: boolean; unknownWrites: boolean; contradictedPushes?: boolean },
  done: { rereads: number; resends: number },
  random: number,
): { ms: number; reason: 'reread' | 'resend' } | null {
  const reread = left.unreadPushes && done.rereads < REREAD_DELAYS_MS.length ? REREAD_DELAYS_MS[done.rereads]! : null;
  const resend = left.unknownWrites || left.contradictedPushes === true ? callBackoffMs(done.resends + 1, random, undefined, FINAL_RESEND_BASE_MS, CALL_BACKOFF_MAX_MS) : null;
  if (reread !== null && (resend === null || reread <= resend)) return { ms: reread, reason: 'reread' };
  if (resend !== null) return { ms: resend, reason: 'resend' };
  return null;
}

/**
 * Answers to a write that contradict the remote view the pass planned from: the next read lists
 * the store in full rather than trust the change feed.
 */
export const CONTRADICTIONS: ReadonlySet<StoreErrorKind | 'filesystem'> = new Set<StoreErrorKind>(['not_found', 'precondition_failed', 'path_conflict']);

/** The circuit breaker's delays: from one sync interval, doubling, up to five minutes. */
export function breakerPolicy(syncIntervalMs: number): BreakerPolicy {
  return { baseMs: syncIntervalMs, maxMs: MAX_BREAKER_DELAY_MS };
}

/** A push that failed so is not sent again until the file's content changes: the store would refuse it again. */
export function refusedUntilContentChanges(failure: StoreErrorKind | 'filesystem'): boolean {
  return failure === 'rejected';
}
