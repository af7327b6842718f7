import { planStore, pushOnlyView, settleUnknownWrites, stillUnknownWrites, type Plan, type PlanInput } from './plan.js';
import { takeUpAgreed } from './redownload-rule.js';

/**
 * The decide step of a pass: from what the pass observed and the state before it, everything the
 * pass will do, and the state its plan was made from. Pure: the caller commits the result.
 *
 * In order:
 * 1. writes of unknown outcome are settled by what the store now shows (a memory holding exactly
 *    the sha sent is the engine's own write: the baseline takes it); those the store does not
 *    show yet stay unknown;
 * 2. the entries a re-download cleared are taken up (redownload-rule.ts);
 * 3. the table runs on the result (plan.ts), and a push-only pass keeps only its pushes.
 *
 * The maps come back as the very objects given when a step changes nothing: a pass whose state
 * did not move can be recognised by identity (`StoreSync`'s quiet pass).
 */
export interface PassDecisionInput extends Omit<PlanInput, 'baseline'> {
  baseline: ReadonlyMap<string, string>;
  /** path -> sha of writes whose outcome was unknown when the pass began. */
  unknownWrites: ReadonlyMap<string, string>;
  /** The baseline a re-download cleared, still waiting to be taken up; null when none is. */
  cleared: ReadonlyMap<string, string> | null;
  /** A push-only pass (finalize's flush, recovery): no pulls, no deletions. */
  pushOnly: boolean;
}

export interface PassDecision {
  /** The baseline the plan was made from: the pass's starting point for the fold. */
  baseline: ReadonlyMap<string, string>;
  /** The writes still of unknown outcome. */
  unknownWrites: ReadonlyMap<string, string>;
  /** The cleared entries still waiting; null when none is. */
  cleared: ReadonlyMap<string, string> | null;
  /** The table's whole plan (what the pass would do were it not push-only). */
  full: Plan;
  /** What the pass does: `full`, or its push-only view. */
  plan: Plan;
}

export function decidePass(input: PassDecisionInput): PassDecision {
  const { unknownWrites: sent, cleared, pushOnly, ...rest } = input;
  let baseline = input.baseline;
  let unknownWrites = sent;
  if (sent.size > 0) {
    unknownWrites = stillUnknownWrites(baseline, sent, input.remote);
    baseline = settleUnknownWrites(baseline, sent, input.remote);
  }
  let waiting: ReadonlyMap<string, string> | null = null;
  if (cleared) {
    const takeUp = takeUpAgreed(cleared, baseline, (path) => input.remote.get(path)?.sha, (path) => input.localFiles.has(path));
    if (takeUp.restored.size > 0) baseline = new Map([...baseline, ...takeUp.restored]);
    waiting = takeUp.waiting;
  }
  const full = planStore({ ...rest, baseline });
  return { baseline, unknownWrites, cleared: waiting, full, plan: pushOnly ? pushOnlyView(full) : full };
}
