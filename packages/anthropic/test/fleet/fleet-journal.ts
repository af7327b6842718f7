import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * What a fleet worker (fleet-worker.ts) writes to its journal, one JSON object a line, and the
 * checker (fleet-check.ts) reads. Times are the host's `Date.now()`, shared by every process
 * of the fleet (one host), and compared with the emulator's version timestamps (ms too).
 *
 * A worker runs one thing at a time: an agent step, then maybe a pass, then the next step. So
 * `passes` on an agent step (how many passes had run before it) says exactly which steps a
 * pass could have seen.
 */
export type JournalEntry =
  | { type: 'materialize'; start: number; end: number }
  /** The agent wrote new content at `path` (an edit or a create). */
  | { type: 'write'; t: number; passes: number; path: string; sha: string }
  /** The agent deleted the file at `path`, which held `sha`. */
  | { type: 'delete'; t: number; passes: number; path: string; sha: string }
  /** The agent moved the file at `path`, which held `sha`, to `to` (free until then). */
  | { type: 'rename'; t: number; passes: number; path: string; to: string; sha: string }
  | { type: 'pass_start'; n: number; t: number; phase: PassPhase; requests: number }
  | { type: 'pass'; n: number; t: number; phase: PassPhase; requests: number; report: PassSummary | null }
  | { type: 'pushed' | 'pulled'; t: number; path: string; sha: string }
  | { type: 'conflict'; t: number; path: string; storeSha: string; localSha: string }
  | { type: 'deleted'; t: number; path: string; side: 'local' | 'remote' }
  /** One write call the engine made (its SDK retries inside), for telling its versions from others'. */
  | { type: 'request'; op: 'create' | 'update' | 'delete'; start: number; end: number; memoryId?: string; path?: string; newPath?: string; sha?: string; ok: boolean }
  | { type: 'finalized'; t: number; unpushed: { path: string; code: string }[]; requests: number };

/** `reconcile` (a pass the agent's loop ran), or one of finalize's two. */
export type PassPhase = 'reconcile' | 'final_sync' | 'flush';

/** The paths of one store's pass report that matter to the checker. */
export interface PassSummary {
  status: string;
  pushed: string[];
  pulled: string[];
  deletedLocal: string[];
  deletedRemote: string[];
  renamed: { from: string; to: string; side: 'local' | 'remote' }[];
  conflicts: string[];
  errors: number;
  /** Paths an action of the pass failed at (a push, a rename's follow-up push): those were not synced. */
  errorPaths?: string[];
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function readJournal(file: string): JournalEntry[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JournalEntry);
}
