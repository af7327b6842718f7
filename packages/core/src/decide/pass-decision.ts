import { blockedReason, planStore, pushOnlyView, settleUnknownWrites, stillUnknownWrites, type Plan, type PlanInput } from './plan.js';
import { takeUpAgreed } from './redownload-rule.js';
import { movedAlikeThenDeleted } from './renames.js';

/**
 * The decide step of a pass: from what the pass observed and the state before it, everything the
 * pass will do, and the state its plan was made from. Pure: the caller commits the result.
 *
 * In order:
 * 1. writes of unknown outcome are settled by what the store now shows (a memory holding exactly
 *    the sha sent is the engine's own write: the baseline takes it; so is one the feed showed,
 *    never known before, holding it at that path and then deleted); those the store does not
 *    show yet stay unknown;
 * 2. a move the agent made alike to another writer's, who then deleted the memory at its new
 *    path (the feed said where and with what), moves the baseline with it, so the table follows
 *    the deletion rather than take the file for a new one (renames.ts `movedAlikeThenDeleted`);
 * 3. the entries a re-download cleared are taken up (redownload-rule.ts);
 * 4. the table runs on the result (plan.ts), and a push-only pass keeps only its pushes.
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
  let baselineIds = input.baselineIds;
  if (sent.size > 0) {
    const still = stillUnknownWrites(baseline, sent, input.remote);
    baseline = settleUnknownWrites(baseline, sent, input.remote);
    // A write the store shows its path free for, but whose very content a memory the store then
    // deleted held there (the feed showed it, a memory this view never knew: created and deleted
    // between two reads): it landed, and another writer deleted it since. Sent again it would
    // bring back what was deleted, so it is settled as landed: the baseline takes the sent sha
    // with that memory's id, whose deletion then corroborates the absence, and the table follows
    // the deletion (the file goes, or is kept as an edit if it changed since).
    for (const [path, sha] of [...still]) {
      const deleted = input.remote.has(path) ? undefined : input.absence?.landedThenDeleted?.(path, sha);
      if (deleted === undefined) continue;
      still.delete(path);
      baseline = new Map(baseline).set(path, sha);
      baselineIds = new Map(baselineIds ?? []).set(path, deleted);
    }
    unknownWrites = still;
  }
  // A move the agent made alike to another writer's, who then deleted the memory at its new
  // path: the baseline follows the move, so the table follows the deletion (renames.ts).
  const deletedAs = input.absence?.deletedAs;
  if (deletedAs) {
    const moves = movedAlikeThenDeleted({ baseline, baselineIds: baselineIds ?? new Map(), localFiles: input.localFiles, remote: input.remote, blocked: (path) => (blockedReason(path, input.localBlocked) === undefined ? undefined : 'blocked'), deletedAs });
    if (moves.length > 0) {
      const movedBaseline = new Map(baseline);
      const movedIds = new Map(baselineIds ?? []);
      for (const { from, to, memoryId, sha } of moves) {
        movedBaseline.delete(from);
        movedIds.delete(from);
        movedBaseline.set(to, sha);
        movedIds.set(to, memoryId);
      }
      baseline = movedBaseline;
      baselineIds = movedIds;
    }
  }
  let waiting: ReadonlyMap<string, string> | null = null;
  if (cleared) {
    // A path the store's side does not show is unseen, not moot: one listing can miss a memory
    // (absence.ts), and the entry dropped on its word met the agent's next file there as "both
    // created", a conflict nobody caused (B46; B40 was the same for the download's listing). A
    // waiting entry never comes back unless the store shows exactly the agreed sha there again.
    const takeUp = takeUpAgreed(cleared, baseline, (path) => input.remote.get(path)?.sha, (path) => input.localFiles.has(path), (path) => !input.remote.has(path));
    if (takeUp.restored.size > 0) baseline = new Map([...baseline, ...takeUp.restored]);
    waiting = takeUp.waiting;
  }
  const full = planStore({ ...rest, baseline, ...(baselineIds && { baselineIds }) });
  return { baseline, unknownWrites, cleared: waiting, full, plan: pushOnly ? pushOnlyView(full) : full };
}
