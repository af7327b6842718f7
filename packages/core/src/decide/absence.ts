/**
 * Whether a memory missing from the remote view is known to be gone from the store (SPEC 6.6: a
 * memory absent from one listing is deleted locally only when corroborated). Pure.
 *
 * Why: a paged full listing can miss a memory while another writer deletes or renames (a page
 * boundary moves under the cursor), and the view a listing builds replaces what was known before.
 * A miss then looks exactly like a deletion, and no later version of the change feed names the
 * memory to correct it: the file would be deleted and never come back. So the table's
 * `remote_missing` row (R gone, L = B: delete the file) runs only on evidence, and whenever there
 * is none the agent's file stays.
 *
 * | what is known of the memory behind the path                              | verdict                        |
 * | ------------------------------------------------------------------------ | ------------------------------ |
 * | the store said it is deleted this session (a `deleted` version folded    | corroborated `deleted`         |
 * |   from the feed, this session's own delete, a `not_found` for it)        |                                |
 * | the view holds it (at another path, or at one the index set aside)       | corroborated `held`            |
 * | a full listing after the one that first missed it misses it too          | corroborated `second_listing`  |
 * | otherwise                                                                | unconfirmed, since that listing |
 *
 * A `second_listing` verdict is still asked about by id while the gets fit (plan.ts): two
 * listings can both miss a memory while other writers act (B47), and a get costs one request.
 *
 * `held` is no absence from the store at all: the memory is there, not at this path, and the
 * rows settle the two paths as they always did (the rename rows first). An unconfirmed absence is
 * settled by the executor asking the store for the memory by id just before it would delete (see
 * `DeleteLocal.corroborate`), or, with no id recorded for the path or more than
 * `MAX_ABSENCE_GETS` absences in one pass, by the next pass's full listing: one listing costs
 * fewer requests than many gets, and many absences at once are more likely one short listing
 * than many deletions.
 */

/** At most this many unconfirmed absences in one pass are each asked about with a `get`; more wait for a second listing. */
export const MAX_ABSENCE_GETS = 8;

export interface AbsenceEvidence {
  /** Ids of memories the store said are deleted, this session. */
  gone: { has(memoryId: string): boolean; readonly size: number };
  /** The memories the remote view holds, by id (whatever their path, indexed or set aside). */
  held: { has(memoryId: string): boolean };
  /**
   * The memory the store deleted after it held exactly `sha` at `path`, as far as the view saw
   * (the change feed's versions; a listing shows no deletion): `feed-fold.ts` `landedThenDeleted`.
   */
  landedThenDeleted?(path: string, sha: string): string | undefined;
  /** The path and sha `memoryId` held when the store deleted it, when the feed showed it (`GoneMemory.deletedAs`). */
  deletedAs?(memoryId: string): { path: string; sha: string } | undefined;
  /** The serial of the full listing the remote view rests on (counted by the view, from 1). */
  listing: number;
  /** path -> serial of the first full listing that missed its memory, while unconfirmed. */
  absentFrom: ReadonlyMap<string, number>;
}

export type AbsenceVerdict =
  | { kind: 'corroborated'; by: 'deleted' | 'held' | 'second_listing' }
  | { kind: 'unconfirmed'; firstListing: number };

/** Why the baseline's memory at `path` (`memoryId`, when recorded) is not in the remote view, as far as the evidence goes. */
export function judgeAbsence(path: string, memoryId: string | undefined, evidence: AbsenceEvidence): AbsenceVerdict {
  if (memoryId !== undefined && evidence.gone.has(memoryId)) return { kind: 'corroborated', by: 'deleted' };
  if (memoryId !== undefined && evidence.held.has(memoryId)) return { kind: 'corroborated', by: 'held' };
  const first = evidence.absentFrom.get(path);
  if (first !== undefined && first < evidence.listing) return { kind: 'corroborated', by: 'second_listing' };
  return { kind: 'unconfirmed', firstListing: first ?? evidence.listing };
}
