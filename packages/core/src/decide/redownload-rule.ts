/**
 * The re-download rule, stated once. Pure.
 *
 * A wiped folder is downloaded again, and the baseline it agreed on with the store is cleared
 * first: a file gone from a wiped folder must never read as the agent's deletion. But the agent
 * may write at a memory's place after the wipe, before the download reaches that path (the
 * download then leaves the file: `taken`, `changed_during_sync`), or while a download that failed
 * (an outage during its listing, a pull the disk refused) is still to be retried. Met with no
 * baseline, that file and the store's copy (the engine's own earlier push) would be "both
 * created", a conflict the store wins: the agent's write gone (reliability B18).
 *
 * So an entry of the cleared baseline (`path` -> the sha both sides agreed on) is:
 * - **restored** where a file stands at its path and the store still holds exactly the agreed
 *   sha there: the file is the agent's edit of the memory it had, and the next plan pushes it;
 * - **waiting** while no file stands there and the store is unchanged: a file the agent makes
 *   there later is still its edit;
 * - **moot** once the path is in the baseline again (pulled) or the store holds anything else;
 * - **unseen** where the download's listing did not show the path at all: a listing may miss a
 *   memory (one skipped while another writer acts), and absent from one listing is not gone
 *   (reconcile.md), so the entry waits for a full listing to judge it, past the download's end.
 *   Dropped as moot instead, the memory met the agent's next file there with no baseline, as
 *   "both created": a conflict the store won, that nobody caused (reliability B40). A pass's
 *   view is judged the same way (B46): an ordinary listing can miss a memory as well.
 *
 * A path with no file never regains its entry, so the wipe still never reads as deletions. The
 * entries are kept until a download ends whole (`StoreSync.download`), and taken up by every
 * pass meanwhile (`StoreSync`'s decide step).
 */
export interface AgreedTakeUp {
  /** Entries to put back into the baseline. */
  restored: ReadonlyMap<string, string>;
  /** Entries still waiting for a file (the unseen ones included); null when none is. */
  waiting: ReadonlyMap<string, string> | null;
  /** Of those, the entries whose path the store's side did not show (`unseen`); null when none is. */
  unseen: ReadonlyMap<string, string> | null;
}

/**
 * `unseen`, when given, says which paths the store's side read did not show at all (a
 * download's listing, a pass's view); without it, a path the store does not show is moot.
 */
export function takeUpAgreed(
  cleared: ReadonlyMap<string, string>,
  baseline: ReadonlyMap<string, string>,
  storeSha: (path: string) => string | undefined,
  fileStands: (path: string) => boolean,
  unseen?: (path: string) => boolean,
): AgreedTakeUp {
  const restored = new Map<string, string>();
  const waiting = new Map<string, string>();
  const notShown = new Map<string, string>();
  for (const [path, agreed] of cleared) {
    if (baseline.has(path)) continue;
    const sha = storeSha(path);
    if (sha === undefined && unseen?.(path)) {
      waiting.set(path, agreed);
      notShown.set(path, agreed);
    } else if (sha !== agreed) continue;
    else if (fileStands(path)) restored.set(path, agreed);
    else waiting.set(path, agreed);
  }
  return { restored, waiting: waiting.size > 0 ? waiting : null, unseen: notShown.size > 0 ? notShown : null };
}

/** The baseline a re-download clears: what was agreed before, with any entries an earlier re-download left waiting. */
export function clearedByRedownload(waiting: ReadonlyMap<string, string> | null, baseline: ReadonlyMap<string, string>): ReadonlyMap<string, string> | null {
  const cleared = new Map([...(waiting ?? []), ...baseline]);
  return cleared.size > 0 ? cleared : null;
}
