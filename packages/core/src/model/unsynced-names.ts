import { randomBytes } from 'node:crypto';

/**
 * Names of the temp files that atomic writes leave for an instant beside their target: ours, and
 * the agent toolset's (`.tmp-<pid>-<uuid>`, written next to the target then renamed over it).
 * Neither is ever synced: the scanner skips such files (never folders: a folder so named holds
 * memories like any other) and a remote memory with such a name is refused, because a file the
 * scanner cannot see would look deleted and be deleted remotely.
 *
 * Ours have one fixed length (24 bytes) whatever the target's name, so a target name of up to
 * NAME_MAX never makes its temp name too long.
 */
const OUR_TEMP = /^\.mm-tmp-[0-9a-f]{16}$/;
const TOOLSET_TEMP = /^\.tmp-\d+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Random bytes drawn ahead, 8 a name: one call to the CSPRNG per 512 names instead of one per
 * file written (a download writes thousands). Each name still takes 8 bytes no other name got,
 * so names stay as unpredictable to the agent as before: it cannot plant one in advance.
 */
const NAMES_PER_DRAW = 512;
let drawn = Buffer.alloc(0);
let next = 0;

/** A fresh `.mm-tmp-<16 hex>`: hidden, unique, recognisable, and short. */
export function tempFileName(): string {
  if (next + 8 > drawn.length) {
    drawn = randomBytes(8 * NAMES_PER_DRAW);
    next = 0;
  }
  const name = `.mm-tmp-${drawn.toString('hex', next, next + 8)}`;
  next += 8;
  return name;
}

export function isTempFileName(name: string): boolean {
  return OUR_TEMP.test(name) || TOOLSET_TEMP.test(name);
}

/**
 * A temp file of the engine's own writes (`tempFileName`), not the toolset's: what a
 * `FileSystem.writeFile` killed half-way leaves beside its target (a store folder's file, the
 * marker, a crash record in `stateDir`).
 */
export function isOwnTempFileName(name: string): boolean {
  return OUR_TEMP.test(name);
}

/**
 * Crash records in `stateDir` were once written through a temp file of their own,
 * `<record name>.tmp-<pid>-<8 hex>`, renamed over the record; they are now written by
 * `FileSystem.writeFile` alone (atomic already, its temp named by `tempFileName`). The old form
 * is recognised only so that `recover` still removes one an older version's process left when
 * it was killed mid-write: the writer's pid, or null for any other name.
 */
const OLDER_RECORD_TEMP = /^mm-state-[0-9a-f]{32}\.json\.tmp-(\d+)-[0-9a-f]{8}$/;

export function olderRecordTempWriter(name: string): number | null {
  const m = OLDER_RECORD_TEMP.exec(name);
  return m ? Number(m[1]) : null;
}

/** `notes.conflict-20250102T030405678Z.md`: a conflict copy written by `conflictCopies: true`. */
const CONFLICT_COPY = /\.conflict-\d{8}T\d{9}Z(\.[^./]*)?$/;

/**
 * A conflict copy (the `conflictCopies` option): the losing local content of a conflict,
 * kept beside the file for a human. Never synced: the scanner skips it, so the store never gets
 * it, and a remote memory so named is refused, as for temp files.
 */
export function isConflictCopyName(name: string): boolean {
  return CONFLICT_COPY.test(name);
}

/** Names the engine never syncs in either direction: temp files of atomic writes and conflict copies. */
export function isUnsyncedName(name: string): boolean {
  return isTempFileName(name) || isConflictCopyName(name);
}

/**
 * `<name>.conflict-<timestamp>.<ext>` beside `path`: `/a/notes.md` at 2025-01-02T03:04:05.678Z
 * -> `/a/notes.conflict-20250102T030405678Z.md`. A name without an extension (or a dotfile)
 * gets the suffix at its end. Such names never sync (see isConflictCopyName).
 */
export function conflictCopyPath(path: string, at: number): string {
  const slash = path.lastIndexOf('/');
  const dir = path.slice(0, slash + 1);
  const base = path.slice(slash + 1);
  const stamp = new Date(at).toISOString().replace(/[-:.]/g, '');
  const dot = base.lastIndexOf('.');
  if (dot <= 0) return `${dir}${base}.conflict-${stamp}`;
  return `${dir}${base.slice(0, dot)}.conflict-${stamp}${base.slice(dot)}`;
}
