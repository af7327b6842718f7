import type { StoreErrorKind } from '../model/errors.js';
import type { Transfer } from './plan.js';
import type { PathReasonCode } from '../model/reasons.js';
import type { RemoteChange } from './feed-fold.js';

/**
 * What became of one transfer.
 * - `done`: it happened. `sha` is what the path now holds on both sides (a pull's content, a
 *   push's sent content); absent for deletes. `sent: false` for a `log_only` remote delete,
 *   which passed its checks and was only logged. `already`: a pull that found the file holding
 *   the store's content already (the agent wrote the same bytes meanwhile): nothing was written,
 *   and both sides agree on `sha`.
 * - `skipped`: the last-moment re-check found the world not as planned; nothing was changed.
 * - `failed`: a store call or the disk failed; `error` is the StoreError kind (or `filesystem`).
 *   `cutOff`: the time bound had run out by then (the call was most likely cancelled by it).
 * - `cut_off`: never started, the time bound had run out.
 */
export type Result =
  | { kind: 'done'; sha?: string; sent?: false; already?: true }
  | { kind: 'skipped'; code: PathReasonCode; detail: string }
  | { kind: 'failed'; error: StoreErrorKind | 'filesystem'; message: string; cutOff: boolean; cause?: unknown }
  | { kind: 'cut_off' };

export interface Outcome<T extends Transfer = Transfer> {
  action: T;
  result: Result;
  /** What the store answered about memories along the way (a write's result, a fetch, a delete), for the remote view. */
  learned: RemoteChange[];
  /** For a `rename_local` done whose `then` is a transfer: what became of that follow-up. */
  then?: Outcome;
}
