import { parseTimestamp } from './feed-fold.js';
import type { StoreMemoryVersion } from '../remote/store-client.js';

/**
 * Whether a memory's history shows that content a push would send reached the store and the
 * memory was deleted since. Pure.
 *
 * Why: an update whose response was lost may have landed; another writer can then read that
 * content and delete the memory before the engine's retry, which meets `not_found`. Re-creating
 * the memory from the file (the `not_found` rule of the table, right when the file is the only
 * copy) would bring back a memory someone deleted after seeing exactly this content. The history
 * tells the two apart: the update was guarded by `base`, so if it landed, a version holding
 * `sent` follows every version holding `base`.
 *
 * | what the retained versions of the memory show                             | answer |
 * |---------------------------------------------------------------------------|--------|
 * | a version holding `sent`, later than every version holding `base`, and a   | true   |
 * |   `deleted` version no earlier than it                                     |        |
 * | no version holding `base` (retention dropped it), or none holding `sent`   | false  |
 * | `sent` only at or before a `base` version (an older content come back)     | false  |
 * | any timestamp that does not parse, or a tie between `sent` and `base`      | false  |
 *
 * `false` always means "not shown": the caller keeps the agent's bytes (re-creates the memory).
 */
export function sentThenDeleted(versions: readonly StoreMemoryVersion[], sha: { sent: string; base: string }): boolean {
  let lastBase: bigint | null = null;
  const sentAt: bigint[] = [];
  const deletedAt: bigint[] = [];
  for (const version of versions) {
    const at = parseTimestamp(version.created_at);
    if (at === null) return false;
    if (version.operation === 'deleted') deletedAt.push(at);
    else if (version.content_sha256 === sha.base) lastBase = lastBase === null || at > lastBase ? at : lastBase;
    else if (version.content_sha256 === sha.sent) sentAt.push(at);
  }
  if (lastBase === null) return false;
  const base = lastBase;
  return sentAt.some((landed) => landed > base && deletedAt.some((deleted) => deleted >= landed));
}
