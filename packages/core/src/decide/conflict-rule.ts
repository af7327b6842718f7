import type { NoteConflict, Pull } from './plan.js';

/**
 * The conflict rule, in one place: what a pass does with a path whose file and memory both
 * changed since the baseline, to different content (the `both_changed_differ` row, and the same
 * row met at the new path of a remote rename). Pure.
 *
 * The store is the source of truth, so it wins: the pass pulls the store's content over the
 * file. The file's bytes are never dropped unnamed: the executor reads them right before the
 * pull and hands them to `conflict` listeners (and, with `conflictCopies`, writes them beside the
 * file); if that copy fails, the pull does not happen (pass/apply.ts). A push-only flush may not
 * pull: it notes the conflict, the local edit is not sent, and finalize names the path in
 * `conflicts` (decide/unpushed.ts).
 *
 * A future "keep both" choice is a policy here: the planner, the flush view, the executor and
 * settle all ask this module what a conflict became, rather than knowing it.
 */
export type ConflictPolicy = 'store_wins';

/** The two sides of a conflicting path, as the planner knows them. */
export interface ConflictSides {
  path: string;
  memoryId: string;
  remoteSha: string;
  localSha: string;
  /** The store's content, when the read carried it. */
  content?: string;
  /** The store's version holding `remoteSha`, when known (events name it). */
  versionId?: string;
}

/** The action a pass takes for a conflict. */
export function resolveConflict(sides: ConflictSides, policy: ConflictPolicy = 'store_wins'): Pull {
  switch (policy) {
    case 'store_wins':
      return {
        type: 'pull',
        path: sides.path,
        memoryId: sides.memoryId,
        remoteSha: sides.remoteSha,
        expectLocal: sides.localSha,
        reason: 'conflict',
        ...(sides.content !== undefined && { content: sides.content }),
        ...(sides.versionId !== undefined && { versionId: sides.versionId }),
      };
  }
}

/** Whether an action is the resolution of a conflict (its loser is the file the pull replaces). */
export function isConflictResolution(action: { type: string; reason?: string }): action is Pull & { reason: 'conflict' } {
  return action.type === 'pull' && action.reason === 'conflict';
}

/** What a push-only flush does instead of a conflict's resolution: note it, at `path` (where the file is now). */
export function flushedConflict(resolution: Pull, path: string = resolution.path): NoteConflict {
  return {
    type: 'note_conflict',
    path,
    storeSha: resolution.remoteSha,
    memoryId: resolution.memoryId,
    ...(resolution.versionId !== undefined && { versionId: resolution.versionId }),
  };
}
