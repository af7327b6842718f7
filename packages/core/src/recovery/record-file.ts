import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { errorCode, type FileSystem } from '../local/file-system.js';
import { mountablePathProblem } from '../model/memory-path.js';
import { hostPathOf, isWithin, mountPathProblem } from '../model/mount-path.js';
import type { Access, DeletionMode } from '../model/types.js';
import { isOwnTempFileName, olderRecordTempWriter } from '../model/unsynced-names.js';

/**
 * Crash-recovery records: one JSON file per mounted store folder in the operator's
 * `stateDir`, saying which store the folder holds, where it is mounted, and the baseline the
 * engine last agreed on with the store. `MemoryMounter.recover` reads them after a crash to
 * final-sync each folder against its recorded baseline.
 *
 * The file name is derived from the folder's host path alone (`mm-state-<first 32 hex digits of
 * sha256(host path)>.json`): one folder, one record, and a later mount at the same path writes
 * the same name. Writes are atomic (`FileSystem.writeFile`: a temp file beside the record, renamed
 * over it), so a reader (or a crash) sees the old record or the new one, whole.
 *
 * `stateDir` belongs to the operator, not the agent, so it is reached by plain paths through the
 * mounter's FileSystem; what a record says about a store folder is still checked against the
 * folder itself (its marker) before recovery touches it.
 */

export const STATE_RECORD_FORMAT = 'memory-mounter/state-record';
export const STATE_RECORD_VERSION = 1;

/** Larger than any real record (a store's whole baseline), so a file past it is not ours. */
const MAX_RECORD_BYTES = 64 * 1024 * 1024;
const RECORD_NAME = /^mm-state-[0-9a-f]{32}\.json$/;
const SHA256 = /^[0-9a-f]{64}$/;

/**
 * `materializing`: written before the store folder is created; the folder has not been handed to
 * the agent yet, so nothing in it is the agent's. `mounted`: the download finished; the baseline
 * is the engine's, rewritten after every pass.
 */
export type RecordPhase = 'materializing' | 'mounted';

/** One record, as stored (snake_case, like the wire). */
export interface StateRecord {
  format: typeof STATE_RECORD_FORMAT;
  version: typeof STATE_RECORD_VERSION;
  phase: RecordPhase;
  /** Random per mount: a mounter removes a record only while it still holds its own id. */
  mount_id: string;
  memory_store_id: string;
  name: string;
  access: Access;
  /** As the agent sees it: `/mnt/memory/notes`. */
  mount_path: string;
  /** The store folder on the host. */
  host_path: string;
  memory_root: string;
  /**
   * Folders between `memory_root` and `host_path` that were absent when the mount began, so
   * that this mount made (or would make) them; outermost first. Removed at recovery if empty.
   */
  created_folders: string[];
  /** path -> sha256 both sides held at the last transfer: the engine's baseline. */
  baseline: Record<string, string>;
  /** path -> memory id, as last listed (or created), for the baseline's paths. */
  memory_ids: Record<string, string>;
  /**
   * path -> sha256 of content sent to the store whose outcome is not known to the record: a
   * push about to go out or in flight, or one that failed `unavailable`. A memory holding
   * exactly that sha is our write (the engine's unknown-write rule), not a remote edit.
   */
  unsettled_writes: Record<string, string>;
  /**
   * The mounter's `memory_sync_deletions`, so recovery follows a local move as that mounter would
   * have: a rename with `enabled`, otherwise a create at the new path that leaves the old memory.
   * Absent in records written before it was kept: recovery then takes `disabled`.
   */
  deletion_mode?: DeletionMode;
  /**
   * Each folder on the mount path below `memory_root`, outermost first and the store folder
   * last, with its identity as the mount made or first opened it. Recovery reaches the folder
   * through them and leaves it when one differs (another folder put at its place is never
   * adopted). Absent in records written before they were kept, or before the folder existed:
   * recovery then walks the path no-follow without them.
   */
  folder_ids?: RecordedFolderId[];
  /**
   * `memory_root`'s identity when `folder_ids` were taken. A memory root found with another
   * device number is the same disk mounted again (a reboot, a new container): the folders' device
   * numbers are then read as that one, and their inodes must still match.
   */
  memory_root_id?: { dev: number; ino: number };
  /** The process that wrote the record, so recovery can leave a live mounter's folder alone. */
  pid: number;
  hostname: string;
  /** ISO 8601. */
  written_at: string;
}

/** A folder on a mount path and its identity, in a record. */
export interface RecordedFolderId {
  path: string;
  dev: number;
  ino: number;
}

/** The record's file name for a store folder at `hostPath`. */
export function recordFileName(hostPath: string): string {
  return `mm-state-${createHash('sha256').update(hostPath, 'utf8').digest('hex').slice(0, 32)}.json`;
}

function isRecordFileName(name: string): boolean {
  return RECORD_NAME.test(name);
}

function encodeRecord(record: StateRecord): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(record, null, 1)}\n`);
}

export type ParsedRecord = { ok: true; record: StateRecord } | { ok: false; reason: string };

/**
 * Checks every field, so that recovery acts only on a record this library could have written:
 * a damaged or foreign file is reported, never half-trusted. `fileName`, when given, must be the
 * name the record's host path gives.
 */
export function parseRecord(bytes: Uint8Array, fileName?: string): ParsedRecord {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    return { ok: false, reason: `not valid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
  const problem = recordProblem(value);
  if (problem) return { ok: false, reason: problem };
  const record = value as StateRecord;
  if (fileName !== undefined && fileName !== recordFileName(record.host_path)) {
    return { ok: false, reason: `its name is not the one its host_path gives (${recordFileName(record.host_path)})` };
  }
  return { ok: true, record };
}

function recordProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const r = value as Record<string, unknown>;
  if (r.format !== STATE_RECORD_FORMAT) return `format is not ${JSON.stringify(STATE_RECORD_FORMAT)}`;
  if (r.version !== STATE_RECORD_VERSION) return `unsupported version ${JSON.stringify(r.version)} (this library reads ${STATE_RECORD_VERSION})`;
  if (r.phase !== 'materializing' && r.phase !== 'mounted') return 'phase is not materializing or mounted';
  for (const key of ['mount_id', 'memory_store_id', 'name', 'mount_path', 'host_path', 'memory_root', 'hostname', 'written_at'] as const) {
    if (typeof r[key] !== 'string' || (key !== 'name' && key !== 'hostname' && (r[key] as string).length === 0)) return `${key} is not a string`;
  }
  if (r.access !== 'read_write' && r.access !== 'read_only') return 'access is not read_write or read_only';
  if (r.deletion_mode !== undefined && r.deletion_mode !== 'enabled' && r.deletion_mode !== 'log_only' && r.deletion_mode !== 'disabled') {
    return 'deletion_mode is not enabled, log_only or disabled';
  }
  if (!Number.isSafeInteger(r.pid) || (r.pid as number) <= 0) return 'pid is not a positive integer';
  const root = r.memory_root as string;
  const host = r.host_path as string;
  if (!isCleanAbsolute(root)) return 'memory_root is not a normalised absolute path';
  const mountProblem = mountPathProblem(r.mount_path as string);
  if (mountProblem) return `mount_path ${mountProblem}`;
  if (host !== hostPathOf(root, r.mount_path as string)) return 'host_path is not where mount_path lies under memory_root';
  if (!Array.isArray(r.created_folders)) return 'created_folders is not an array';
  for (const folder of r.created_folders) {
    if (typeof folder !== 'string' || !isCleanAbsolute(folder) || folder === root || folder === host || !isWithin(root, folder) || !isWithin(folder, host)) {
      return 'created_folders holds a path that is not between memory_root and host_path';
    }
  }
  const isId = (v: unknown) => {
    const id = v as { dev?: unknown; ino?: unknown } | null;
    return typeof id === 'object' && id !== null && Number.isSafeInteger(id.dev) && Number.isSafeInteger(id.ino);
  };
  if (r.folder_ids !== undefined) {
    if (!Array.isArray(r.folder_ids)) return 'folder_ids is not an array';
    for (const id of r.folder_ids as unknown[]) {
      const path = (id as { path?: unknown } | null)?.path;
      if (!isId(id) || typeof path !== 'string' || !isCleanAbsolute(path) || path === root || !isWithin(root, path) || !isWithin(path, host)) {
        return 'folder_ids holds an entry that is not a folder between memory_root and host_path with its dev and ino';
      }
    }
  }
  if (r.memory_root_id !== undefined && !isId(r.memory_root_id)) return 'memory_root_id is not a dev and an ino';
  for (const key of ['baseline', 'memory_ids', 'unsettled_writes'] as const) {
    const map = r[key];
    if (typeof map !== 'object' || map === null || Array.isArray(map)) return `${key} is not an object`;
    for (const [path, v] of Object.entries(map)) {
      const pathProblem = mountablePathProblem(path);
      if (pathProblem) return `${key} has a path that ${pathProblem}: ${JSON.stringify(path)}`;
      if (typeof v !== 'string' || (key !== 'memory_ids' ? !SHA256.test(v) : v.length === 0)) {
        return `${key} has a bad value for ${JSON.stringify(path)}`;
      }
    }
  }
  return null;
}

function isCleanAbsolute(path: string): boolean {
  return path.startsWith('/') && !path.includes('\0') && posix.normalize(path) === path && (path === '/' || !path.endsWith('/'));
}

/**
 * Writes the record. `FileSystem.writeFile` is atomic by contract (a temp file beside the record,
 * renamed over it): a failed write leaves the previous record as it was, and a write killed
 * half-way leaves at most that temp file, which `recover` removes once it is stale.
 */
export async function writeRecord(fs: FileSystem, stateDir: string, record: StateRecord): Promise<void> {
  await fs.writeFile(posix.join(stateDir, recordFileName(record.host_path)), encodeRecord(record), { mode: 0o600 });
}

/** Reads the record for `hostPath`, if there is one. */
export async function readRecord(fs: FileSystem, stateDir: string, hostPath: string): Promise<ParsedRecord | null> {
  const name = recordFileName(hostPath);
  return readRecordFile(fs, stateDir, name);
}

async function readRecordFile(fs: FileSystem, stateDir: string, name: string): Promise<ParsedRecord | null> {
  const path = posix.join(stateDir, name);
  let bytes: Uint8Array;
  try {
    const stat = await fs.lstat(path);
    if (stat === null) return null;
    if (stat.type !== 'file') return { ok: false, reason: `is a ${stat.type}, not a file` };
    if (stat.size > MAX_RECORD_BYTES) return { ok: false, reason: `is larger than ${MAX_RECORD_BYTES} bytes` };
    bytes = await fs.readFile(path);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    return { ok: false, reason: `could not be read (${errorCode(err) ?? String(err)})` };
  }
  return parseRecord(bytes, name);
}

/**
 * Removes the record for `hostPath`, but only while it is the one `mountId` wrote: a mount that
 * lost the race for a path must not remove the winner's record. Absent is fine.
 */
export async function removeRecord(fs: FileSystem, stateDir: string, hostPath: string, mountId?: string): Promise<void> {
  if (mountId !== undefined) {
    const current = await readRecord(fs, stateDir, hostPath);
    if (current === null) return;
    if (current.ok && current.record.mount_id !== mountId) return;
  }
  await fs.rm(posix.join(stateDir, recordFileName(hostPath)));
}

export interface RecordListing {
  records: { file: string; record: StateRecord }[];
  unreadable: { file: string; reason: string }[];
  /** Temp files of record writes by older versions (`olderRecordTempWriter`), with the pid of their writer. */
  olderTemps: { file: string; pid: number }[];
  /** The FileSystem's own temp files (`isOwnTempFileName`), with their mtime. */
  fsTemps: { file: string; mtimeMs: number }[];
}

/** Every record in `stateDir`; a damaged one is listed as unreadable, never thrown. Other files are ignored. */
export async function listRecords(fs: FileSystem, stateDir: string): Promise<RecordListing> {
  const out: RecordListing = { records: [], unreadable: [], olderTemps: [], fsTemps: [] };
  const entries = await fs.readdir(stateDir);
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const writer = olderRecordTempWriter(entry.name);
    if (writer !== null) {
      out.olderTemps.push({ file: entry.name, pid: writer });
      continue;
    }
    if (isOwnTempFileName(entry.name)) {
      const stat = await fs.lstat(posix.join(stateDir, entry.name)).catch(() => null);
      if (stat?.type === 'file') out.fsTemps.push({ file: entry.name, mtimeMs: stat.mtimeMs });
      continue;
    }
    if (!isRecordFileName(entry.name)) continue;
    const parsed = await readRecordFile(fs, stateDir, entry.name);
    if (parsed === null) continue; // removed meanwhile
    if (parsed.ok) out.records.push({ file: entry.name, record: parsed.record });
    else out.unreadable.push({ file: entry.name, reason: parsed.reason });
  }
  return out;
}
