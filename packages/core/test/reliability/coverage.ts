
/**
 * What the random cases exercised, counted as they run, for the figures in docs/reliability.md:
 * a run that passes while exercising nothing would prove nothing.
 */
export const coverage = {
  cases: 0,
  steps: 0,
  passes: 0,
  agentActionsDuringPasses: 0,
  remoteDeletesSent: 0,
  mostDeletesInOnePass: 0,
  conflictsReported: 0,
  /** Renames that kept the memory: files moved after the store's rename, memories renamed after the agent's. */
  renamesFollowedOnDisk: 0,
  renamesSentToStore: 0,
  redownloads: 0,
  distrustedFolders: 0,
  faultsFired: 0,
  finalizes: 0,
  finalizeBoundsHit: 0,
  finalizesWithUnpushed: 0,
  /** Calls held forever by a stall fault, and calls failed by an outage. */
  stalledCalls: 0,
  outageFailures: 0,
  /** Passes a time bound cut short (a fault, or a slow host), and quiescent ones among them. */
  passesCutOff: 0,
  quiescentPassesCutOff: 0,
  /** The slowest reconcile and finalize seen on the wall clock. */
  slowestReconcileMs: 0,
  slowestFinalizeMs: 0,
  /** Workers killed (between steps or during a pass), recover runs, and what they did. */
  crashes: 0,
  recoveries: 0,
  recoverRetries: 0,
  /** Store-wins pulls made by a pass the kill cut short (its report lost with the worker). */
  conflictsCutByKill: 0,
  foldersRecovered: 0,
  /** Folders still left after the retry (the operator removes them), and those left as unpushed. */
  foldersLeftByRecover: 0,
  foldersLeftUnpushedAfterRetry: 0,
  /** Restarts whose download an outage failed, started again once it was over. */
  restartsRetried: 0,
  recoverPushed: 0,
  recoverConflicts: 0,
  /** The change feed (issue 9): cases that read it, feed reads, passes that took it alone or fell back to a listing. */
  casesUsingFeed: 0,
  feedReads: 0,
  passesByFeedAlone: 0,
  /** Cases on the real disk; folder watches the engine started there (Linux), and the events they reported. */
  casesOnRealDisk: 0,
  watchesStarted: 0,
  watchEvents: 0,
  /** The seam's optional calls the engine made (passed through the fuzz's wrappers, as production has them). */
  createdInPlace: 0,
  exclusiveWrites: 0,
  links: 0,
  lstatAlls: 0,
  passesFeedThenListing: 0,
  /** Feed and folder-listing faults played, versions redacted, and sessions the feed refused. */
  feedFaultsPlayed: 0,
  folderFaultsPlayed: 0,
  versionsRedacted: 0,
  feedRefusals: 0,
  /** The other writer's writes made while a read of the store was under way. */
  remoteActionsDuringReads: 0,
  /** Issue 18's faults: writes applied whose answer was lost, their retries, and retries the strict service refused. */
  answersLostAfterApply: 0,
  retriesAfterLostAnswer: 0,
  strictRetriesRefused: 0,
  /** Full listings that skipped an entry while the other writer wrote. */
  listingsSkippingAnEntry: 0,
  /** Opens of a file refused (EACCES/EIO/EMFILE), cases with conflictCopies, and conflict copies refused (ENOSPC). */
  opensRefused: 0,
  casesWithConflictCopies: 0,
  conflictCopiesRefused: 0,
  /** Time bounds met as legal outcomes: downloads cut off (then retried), quiescent passes still cut off (no I7), recover retries cut off. */
  materializeBoundsHit: 0,
  convergenceChecksCutOff: 0,
  recoverRetriesCutOff: 0,
  /** Wall time spent inside materialize, reconcile and finalize, all cases together. */
  engineWallMs: 0,
};

/** Zeroes the counters before a run. */
export function resetCoverage(): void {
  for (const key of Object.keys(coverage) as (keyof typeof coverage)[]) coverage[key] = 0;
}
