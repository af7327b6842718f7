import { hostname } from 'node:os';
import { posix } from 'node:path';
import { BoundedStoreClient } from '../remote/bounded-store-client.js';
import { RequestCounter } from '../remote/request-count.js';
import { MemoryConfigError } from '../model/errors.js';
import { errorCode, type DirHandle, type FileSystem } from '../local/file-system.js';
import { MARKER_FILE } from '../model/limits.js';
import { storeLogger } from '../session/logger.js';
import { readMarker } from '../local/marker.js';
import { MountChain, reachMountChain, stepProblem, type FolderIdentity } from '../local/mount-chain.js';
import { removeCreatedFolder, removeEmptyFolder } from '../local/mount-folders.js';
import { isWithin } from '../model/mount-path.js';
import { NodeFileSystem } from '../local/node-file-system.js';
import { resolveOptions } from '../session/options.js';
import { cutOffReport, finalPassOptions, passesWithin, timeBound } from '../session/deadline.js';
import { isoTime, type RecoveredStoreReport, type RecoveryLeftCode, type RecoveryReport, type StoreSyncReport } from '../model/reports.js';
import { listRecords, removeRecord, type RecordListing, type StateRecord } from './record-file.js';
import { MountRecord } from './mount-record.js';
import type { StoreClient } from '../remote/store-client.js';
import { StoreFolder } from '../local/store-folder.js';
import { StoreSync } from '../pass/store-sync.js';
import type { Logger, MountedStore } from '../model/types.js';
import { localChanges, unpushedChanges, wipedFolder } from '../decide/unpushed.js';
import { isOwnTempFileName } from '../model/unsynced-names.js';

/**
 * `MemoryMounter.recover`: finishes what a dead mounter left, from its state records.
 *
 * For each record whose folder is still there and still carries the record's store in its
 * marker, the engine (a StoreSync resumed with the recorded baseline and unsettled writes) runs
 * one push-only pass, the same pass finalize's flush runs:
 * - a local edit the store has not seen since the recorded baseline is pushed, guarded by the
 *   store's sha (a write the dead mounter may have sent is recognised, not taken for a remote
 *   edit: no false conflict);
 * - a real conflict (both sides changed since the baseline) leaves the store's version; the
 *   local edit is reported and dropped with the folder;
 * - a read-only store is never pushed;
 * - nothing is deleted in the store, ever: a file missing after a crash is not proof the agent
 *   deleted it, so its memory stays (reported in `deletionsNotSent`). A note is never lost to
 *   recovery; at worst a deletion has to be made again.
 * - nothing is pulled: the folder is removed right after.
 * A folder whose changes all reached the store (or lost a conflict) is removed with its record;
 * otherwise the record is rewritten with what was pushed and kept, for a later recover.
 */
export interface RecoverOptions {
  storeClient: StoreClient;
  /** The `stateDir` the dead mounter wrote its records in. */
  stateDir: string;
  /** Where `/mnt/memory` lies on this host, as given to the mounters. Default `/mnt/memory`. */
  memoryRoot?: string;
  /** Default `new NodeFileSystem()`. */
  fileSystem?: FileSystem;
  logger?: Logger;
  /** Seconds bounding the whole recovery sync, as for `finalize()`. Default 30. */
  finalSyncTimeout?: number;
  /** Seconds per store call. Default 30. */
  requestTimeout?: number;
  /** Clock in ms, for the report. Default `Date.now`. */
  now?: () => number;
  /**
   * Only the records of these stores are recovered; the others, and the folders they name, are
   * not touched and not reported. For a worker whose credential reaches some stores only (a
   * session's token reaches the stores attached to that session). Default: every record.
   */
  memoryStoreIds?: readonly string[];
}

/** Transfers in flight per store, as in a mounter's passes. */
const TRANSFERS_PER_STORE = 8;
/** A temp file in stateDir older than this is left from a write that will never finish. */
const STALE_TEMP_MS = 60_000;

interface Context {
  fs: FileSystem;
  /**
   * The engine's client for one record's store, counting its requests on `requests`: one each,
   * since records are recovered in parallel and two may name one store.
   */
  client: (requests: RequestCounter) => StoreClient;
  stateDir: string;
  memoryRoot: string;
  logger: Logger;
  now: () => number;
  deadline: AbortSignal;
}

export async function recoverStores(options: RecoverOptions): Promise<RecoveryReport> {
  if (typeof options !== 'object' || options === null) throw new MemoryConfigError('MemoryMounter.recover needs an options object');
  if (options.stateDir === undefined) {
    throw new MemoryConfigError('MemoryMounter.recover needs stateDir: the directory the mounters kept their state records in', 'stateDir');
  }
  const only = options.memoryStoreIds;
  if (only !== undefined && (!Array.isArray(only) || !only.every((id) => typeof id === 'string'))) {
    throw new MemoryConfigError('memoryStoreIds must be an array of store ids', 'memoryStoreIds');
  }
  const resolved = resolveOptions({
    storeClient: options.storeClient,
    stateDir: options.stateDir,
    ...(options.memoryRoot !== undefined && { memoryRoot: options.memoryRoot }),
    ...(options.fileSystem !== undefined && { fileSystem: options.fileSystem }),
    ...(options.logger !== undefined && { logger: options.logger }),
    ...(options.finalSyncTimeout !== undefined && { finalSyncTimeout: options.finalSyncTimeout }),
    ...(options.requestTimeout !== undefined && { requestTimeout: options.requestTimeout }),
    ...(options.now !== undefined && { now: options.now }),
  });
  const fs = resolved.fileSystem ?? new NodeFileSystem();
  const stateDir = resolved.stateDir!;
  const { logger, now, memoryRoot } = resolved;
  // One deadline for the whole recovery, as for finalize (session/deadline.ts).
  const deadline = timeBound('finalSyncTimeout', resolved.finalSyncTimeoutMs);
  const ctx: Context = {
    fs,
    client: (requests) => new BoundedStoreClient(resolved.storeClient, { requestTimeoutMs: resolved.requestTimeoutMs, logger, requests }),
    stateDir,
    memoryRoot,
    logger,
    now,
    deadline: deadline.signal,
  };
  const report: RecoveryReport = { startedAt: isoTime(now()), finishedAt: isoTime(now()), timedOut: false, stores: [], unreadableRecords: [], unvouched: [] };
  try {
    const listing = await readStateDir(fs, stateDir, logger);
    await removeDeadTemps(fs, stateDir, listing);
    for (const bad of listing.unreadable) {
      report.unreadableRecords.push(bad);
      logger.warn('state record unreadable; left as it is, and its folder untouched', { state_dir: stateDir, record: bad.file, reason: bad.reason });
    }
    const chosen = listing.records.filter(({ record }) => only === undefined || only.includes(record.memory_store_id));
    report.stores = await Promise.all(chosen.map(({ file, record }) => recoverOne(ctx, file, record)));
    report.timedOut = deadline.signal.aborted;
    report.unvouched = await unvouchedEntries(fs, memoryRoot, listing.records.map((r) => r.record.host_path));
    for (const u of report.unvouched) {
      logger.warn('left untouched: no state record names this entry under the memory root', { path: u.path, type: u.type, marker_store_id: u.markerStoreId });
    }
  } finally {
    deadline.clear();
  }
  report.finishedAt = isoTime(now());
  return report;
}

async function readStateDir(fs: FileSystem, stateDir: string, logger: Logger): Promise<RecordListing> {
  const empty: RecordListing = { records: [], unreadable: [], olderTemps: [], fsTemps: [] };
  let stat;
  try {
    stat = await fs.lstat(stateDir);
  } catch (err) {
    throw new MemoryConfigError(`stateDir ${stateDir} cannot be checked (${errorCode(err) ?? String(err)})`, 'stateDir');
  }
  if (stat === null) {
    logger.info('nothing to recover: stateDir does not exist', { state_dir: stateDir });
    return empty;
  }
  if (stat.type !== 'directory') throw new MemoryConfigError(`stateDir ${stateDir} is a ${stat.type}, not a directory (give its resolved path)`, 'stateDir');
  try {
    return await listRecords(fs, stateDir);
  } catch (err) {
    throw new MemoryConfigError(`stateDir ${stateDir} cannot be read (${errorCode(err) ?? String(err)})`, 'stateDir');
  }
}

/**
 * Temp files of record writes killed half-way: garbage. The FileSystem's own (no pid in the name)
 * are removed once older than STALE_TEMP_MS: no write in flight takes that long. Those of older
 * versions' record writes (`olderRecordTempWriter`) once their writer is gone (the pid in the name).
 */
async function removeDeadTemps(fs: FileSystem, stateDir: string, listing: RecordListing): Promise<void> {
  for (const temp of listing.olderTemps) {
    if (temp.pid === process.pid || !processAlive(temp.pid)) await fs.rm(posix.join(stateDir, temp.file)).catch(() => {});
  }
  for (const temp of listing.fsTemps) {
    if (Date.now() - temp.mtimeMs > STALE_TEMP_MS) await fs.rm(posix.join(stateDir, temp.file)).catch(() => {});
  }
}

async function recoverOne(ctx: Context, file: string, record: StateRecord): Promise<RecoveredStoreReport> {
  const mount: MountedStore = {
    memoryStoreId: record.memory_store_id,
    name: record.name,
    path: record.host_path,
    mountPath: record.mount_path,
    access: record.access,
  };
  const logger = storeLogger(ctx.logger, mount.memoryStoreId);
  const entry: RecoveredStoreReport = {
    record: file,
    memoryStoreId: mount.memoryStoreId,
    name: mount.name,
    access: mount.access,
    mountPath: mount.mountPath,
    path: mount.path,
    outcome: 'left',
    neverMounted: record.phase === 'materializing',
    pushed: [],
    conflicts: [],
    deletionsNotSent: [],
    unpushed: [],
    sync: null,
    recordRemoved: false,
  };
  const leave = (code: RecoveryLeftCode, reason: string): RecoveredStoreReport => {
    entry.outcome = 'left';
    entry.left = { code, reason };
    logger.warn(`recovery left the store folder in place: ${reason}`, { path: mount.path, code, record: file, unpushed: entry.unpushed });
    return entry;
  };
  const host = mount.path;
  if (host === ctx.memoryRoot || !isWithin(ctx.memoryRoot, host)) {
    return leave('outside_memory_root', `the record's folder is not under the memory root ${ctx.memoryRoot}`);
  }
  if (record.pid !== process.pid && record.hostname === hostname() && processAlive(record.pid)) {
    return leave('owner_alive', `the record was written by process ${record.pid}, which is still running on this host`);
  }
  const gone = async (): Promise<RecoveredStoreReport> => {
    // Nothing left to recover (removed by hand, or the mounter died after removing it).
    await removeEmptyFolders(ctx, record, ids);
    entry.recordRemoved = await dropRecord(ctx, record, logger);
    entry.outcome = 'gone';
    logger.info('recovery: the recorded folder is gone; record removed', { path: host, record: file });
    return entry;
  };
  // The folder is reached from memoryRoot one no-follow step at a time, each folder on the way
  // (and the folder itself) checked against the identity the record keeps: never by its path,
  // which the kernel would follow through a folder on the way that has become a link.
  let ids: Map<string, FolderIdentity>;
  let folder: StoreFolder;
  try {
    ids = await recordedIdentities(ctx, record);
    const chain = await reachMountChain(ctx.fs, ctx.memoryRoot, host, betweenPaths(ctx.memoryRoot, host).map((p) => ids.get(p)));
    if (!(chain instanceof MountChain)) {
      if (chain.problem === 'missing') return await gone();
      if (chain.problem === 'replaced') return leave('folder_replaced', `${chain.at}, on the way to the folder, is not the folder the record names`);
      return leave('not_a_folder', `${chain.at}, on the way to the folder, is a link or a file`);
    }
    const problem = await leafProblem(ctx.fs, chain, ids.get(host));
    if (problem) await chain.close();
    if (problem === 'missing') return await gone();
    if (problem === 'replaced') return leave('folder_replaced', "the folder at the record's path is not the one the record names");
    if (problem === 'not_directory') return leave('not_a_folder', "a link or a file is at the folder's path");
    // A folder the agent locked (chmod 0) cannot even be opened: the recorded one (and only it)
    // is given back to its owner first, through its parent's handle.
    const recorded = ids.get(host);
    if (recorded && ctx.fs.grantOwnerAccess) await ctx.fs.grantOwnerAccess(chain.leafVia, recorded).catch(() => {});
    try {
      folder = await StoreFolder.openIn(ctx.fs, host, chain);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ELOOP' || code === 'ENOTDIR') return leave('not_a_folder', 'the folder was replaced by something else');
      return leave('marker_unreadable', `the folder could not be opened (${code ?? String(err)})`);
    }
  } catch (err) {
    return leave('marker_unreadable', `the folder could not be checked (${errorCode(err) ?? String(err)})`);
  }
  const expected = ids.get(host);
  if (expected && (folder.identity.dev !== expected.dev || folder.identity.ino !== expected.ino)) {
    // Exchanged between the look and the open.
    await folder.close();
    return leave('folder_replaced', "the folder at the record's path is not the one the record names");
  }
  try {
    // A final sync, and the folder goes next: what the agent locked is given back to the owner
    // first (the marker included), so a `chmod 0` cannot make it unvouchable for ever.
    await folder.unlockRoot();
    const marker = await readMarker(folder, mount.memoryStoreId);
    if (record.phase === 'materializing') {
      // The mount never finished: the agent never had the folder, so nothing in it is the
      // agent's. Removed whole when its marker names the store; when the marker is not there yet
      // (a crash right after the mkdir, or while the marker was being written), only if it holds
      // nothing but the temp file of that write.
      const empty = marker === 'missing' && (await folder.topLevelNames()).every((name) => isOwnTempFileName(name));
      if (marker !== 'ok' && !empty) return leave(marker === 'unreadable' ? 'marker_unreadable' : 'marker_mismatch', markerReason(marker));
      return await removeRecovered(ctx, entry, record, folder, logger);
    }
    // A folder that holds nothing at all holds nothing of anyone's: it goes whatever its marker
    // says (finalize does the same), or the next session at this path would be refused.
    if (marker !== 'unreadable' && (await folder.topLevelNames()).length === 0) return await removeRecovered(ctx, entry, record, folder, logger);
    if (marker !== 'ok') return leave(marker === 'unreadable' ? 'marker_unreadable' : 'marker_mismatch', markerReason(marker));

    const recorder = new MountRecord(ctx.fs, ctx.stateDir, record.memory_root, mount, logger);
    recorder.restore(record);
    const requests = new RequestCounter();
    const store = new StoreSync(mount, folder, {
      client: ctx.client(requests),
      requests: () => requests.of(mount.memoryStoreId),
      // Each push is in the record before it goes out: a recover cut off mid-push leaves a
      // record whose next recover takes that write for ours, not for a remote edit.
      beforeSend: (path, sha) => recorder.beforeSend(path, sha),
      logger,
      // A push-only pass sends no deletion whatever the mode; the mode decides only whether a
      // local move is a rename (the old path leaves the store: only `enabled`, as the dead
      // mounter had it) or a create at the new path. A record that does not say: `disabled`.
      deletionMode: record.deletion_mode ?? 'disabled',
      concurrency: TRANSFERS_PER_STORE,
      recreateFolder: () => Promise.reject(new Error('recovery never re-creates a store folder')),
    });
    recorder.state = () => store.recordedState();
    await store.resume({
      baseline: new Map(Object.entries(record.baseline)),
      unknownWrites: new Map(Object.entries(record.unsettled_writes)),
      memoryIds: new Map(Object.entries(record.memory_ids)),
    });
    let settled = await passWithin(store, ctx);
    if (settled !== null && wipedFolder(settled) && store.state.distrusted === null && store.lastScan !== null) {
      // Every file of the recorded baseline is gone (a wipe): a push-only pass will not judge
      // the folder against that baseline. Nothing is left to compare with, so what is there now
      // is new: pushed as such (a memory holding other content wins, and is named a conflict).
      // Only then: a pass skipped for any other reason (cut off by the bound) leaves the
      // baseline as recorded, or the engine's own earlier pushes would read as remote edits.
      await store.resume({ baseline: new Map(), unknownWrites: new Map(Object.entries(record.unsettled_writes)) });
      settled = await passWithin(store, ctx);
    }
    const abandoned = settled === null;
    const sync = settled ?? cutOffReport(mount);
    entry.sync = sync;
    entry.pushed = [...sync.pushed];
    entry.conflicts = [...sync.conflicts];
    const scan = store.lastScan;
    if (scan) {
      const changes = localChanges({ baseline: store.state.baseline, files: scan.files, baselineAtScan: scan.baseline, blocked: scan.blocked });
      entry.deletionsNotSent = changes.filter((c) => c.change === 'deleted').map((c) => c.path);
    }
    const conflicts = new Set(sync.conflicts);
    entry.unpushed = unpushedChanges(sync, store.state.baseline, scan, store.state.baselineIds).filter((u) => !conflicts.has(u.path));
    // Content the store refuses (not UTF-8, too large) will never go: named above, and not a
    // reason to keep the folder, which would strand its mount path on every run. A path that
    // could not be read is named (code `unreadable`) and does keep it: its content is unknown.
    const refused = new Set(sync.refused.map((r) => r.path));
    const pending = entry.unpushed.filter((u) => !refused.has(u.path));
    if (abandoned || pending.length > 0 || scan === null) {
      // The record takes what was pushed, and stays for the next recover.
      await recorder.tryWrite();
      await recorder.retire({ remove: false });
      const why = abandoned
        ? 'the time bound cut the sync off while calls were still in flight'
        : pending.length > 0
          ? `${pending.length} local change(s) could not be pushed`
          : `the folder could not be scanned (${sync.reason ?? sync.status})`;
      return leave('unpushed', why);
    }
    const refusal = await store.removalRefusal();
    if (refusal) {
      await recorder.retire({ remove: false });
      // A distrusted folder here is one whose marker the sync found wrong.
      return leave(refusal.code === 'marker_unreadable' ? 'marker_unreadable' : 'marker_mismatch', refusal.reason);
    }
    await recorder.retire({ remove: false });
    return await removeRecovered(ctx, entry, record, folder, logger);
  } finally {
    // Idempotent; a pass left running keeps its handles until its acts end.
    await folder.close();
  }
}

/** Removes the folder (through its handle, links never followed), the empty folders above it that its mount made, and the record. */
async function removeRecovered(
  ctx: Context,
  entry: RecoveredStoreReport,
  record: StateRecord,
  folder: StoreFolder,
  logger: Logger,
): Promise<RecoveredStoreReport> {
  const outcome = await removeCreatedFolder(ctx.fs, ctx.memoryRoot, { path: record.host_path }, folder);
  if (!outcome.removed && !outcome.gone) {
    entry.outcome = 'left';
    entry.left = { code: 'not_removed', reason: `the folder ${outcome.reason}` };
    logger.warn(`recovery synced the store folder but left it: ${outcome.reason}`, { path: record.host_path, record: entry.record });
    return entry;
  }
  await removeEmptyFolders(ctx, record, await recordedIdentities(ctx, record).catch(() => new Map<string, FolderIdentity>()));
  entry.recordRemoved = await dropRecord(ctx, record, logger);
  entry.outcome = 'recovered';
  logger.info('recovered: store folder synced and removed', {
    path: record.host_path,
    record: entry.record,
    never_mounted: entry.neverMounted,
    pushed: entry.pushed,
    conflicts: entry.conflicts,
    deletions_not_sent: entry.deletionsNotSent,
  });
  return entry;
}

async function dropRecord(ctx: Context, record: StateRecord, logger: Logger): Promise<boolean> {
  try {
    await removeRecord(ctx.fs, ctx.stateDir, record.host_path, record.mount_id);
    return true;
  } catch (err) {
    logger.warn('state record could not be removed', { path: record.host_path, state_dir: ctx.stateDir, error: errorCode(err) ?? String(err) });
    return false;
  }
}

/**
 * rmdir of the folders the record's mount made, deepest first, each reached from memoryRoot
 * through its parent's handle and checked against its recorded identity where the record keeps
 * one: a folder that holds anything (another session's store, say), or is not the one made,
 * stays.
 */
async function removeEmptyFolders(ctx: Context, record: StateRecord, ids: ReadonlyMap<string, FolderIdentity>): Promise<void> {
  for (const path of [...record.created_folders].reverse()) {
    const way = [...betweenPaths(ctx.memoryRoot, path), path].map((p) => ids.get(p));
    await removeEmptyFolder(ctx.fs, ctx.memoryRoot, path, way).catch(() => {});
  }
}

/** The folders strictly between `memoryRoot` and `path`, outermost first. */
function betweenPaths(memoryRoot: string, path: string): string[] {
  const names = posix.relative(memoryRoot, path).split('/');
  return names.slice(0, -1).map((_, i) => posix.join(memoryRoot, ...names.slice(0, i + 1)));
}

/**
 * The record's folder identities by path. When memoryRoot now has another device number than
 * when they were taken (the same disk mounted again: a reboot, a new container), the folders
 * recorded on that device are read as on the new one; their inodes must still match. Empty for
 * a record that keeps none.
 */
async function recordedIdentities(ctx: Context, record: StateRecord): Promise<Map<string, FolderIdentity>> {
  const out = new Map<string, FolderIdentity>();
  if (!record.folder_ids || !record.memory_root_id) return out;
  const root = await ctx.fs.lstat(ctx.memoryRoot);
  const then = record.memory_root_id.dev;
  const now = root?.dev ?? then;
  for (const { path, dev, ino } of record.folder_ids) out.set(path, { dev: dev === then ? now : dev, ino });
  return out;
}

/** What is at the store folder's name in the chain's last folder, against its recorded identity (when there is one). */
async function leafProblem(fs: FileSystem, chain: MountChain, expect: FolderIdentity | undefined): Promise<'missing' | 'not_directory' | 'replaced' | null> {
  if (expect) return stepProblem(fs, chain.leafVia, expect);
  const stat = await fs.lstat(chain.leafVia);
  if (stat === null) return 'missing';
  return stat.type === 'directory' ? null : 'not_directory';
}

/** The store's push-only pass, within the recovery deadline plus the wind-down finalize's passes get; null if it had to be left running. */
async function passWithin(store: StoreSync, ctx: Context): Promise<StoreSyncReport | null> {
  // A final pass: every file is taken as it is, and one it cannot read is read again a few
  // times before it is named unpushed (and keeps the folder).
  const pass = store.pass(finalPassOptions(ctx.now(), ctx.deadline, true));
  const { reports: [report] } = await passesWithin([pass], ctx.deadline);
  return report ?? null;
}

function markerReason(marker: 'missing' | 'foreign' | 'unreadable' | 'ok'): string {
  if (marker === 'missing') return "the folder's marker is missing: it cannot be vouched for";
  if (marker === 'foreign') return "the folder's marker names another store, or is damaged";
  return "the folder's marker could not be read";
}

/**
 * Entries under `memoryRoot` that no record names, descending only into folders that hold a
 * recorded one. Each folder is opened no-follow from its parent's handle, memoryRoot's first, so
 * a folder on the way that has become a link is reported as a link, never listed through.
 */
async function unvouchedEntries(fs: FileSystem, memoryRoot: string, recorded: readonly string[]): Promise<RecoveryReport['unvouched']> {
  const out: RecoveryReport['unvouched'] = [];
  let root: DirHandle;
  try {
    root = await fs.openDir(memoryRoot);
  } catch {
    return out;
  }
  const visit = async (dir: DirHandle, dirPath: string): Promise<void> => {
    let entries;
    try {
      entries = await fs.readdir(dir.pinned ? `${dir.path}/.` : dir.path);
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = posix.join(dirPath, e.name);
      if (recorded.includes(path)) continue;
      let child: DirHandle | null = null;
      if (e.type === 'directory') child = await fs.openDir(`${dir.path}/${e.name}`).catch(() => null);
      try {
        if (child && recorded.some((p) => isWithin(path, p))) {
          await visit(child, path);
          continue;
        }
        const item: RecoveryReport['unvouched'][number] = { path, type: e.type, reason: 'no state record names it; left untouched' };
        if (child) {
          const id = await markerStoreId(fs, child);
          if (id !== undefined) item.markerStoreId = id;
        }
        out.push(item);
      } finally {
        await child?.close();
      }
    }
  };
  try {
    await visit(root, memoryRoot);
  } finally {
    await root.close();
  }
  return out;
}

/** The store the marker in the opened folder `dir` names, read without following links; undefined when there is none readable. */
async function markerStoreId(fs: FileSystem, dir: DirHandle): Promise<string | undefined> {
  let file;
  try {
    file = await fs.openFile(`${dir.path}/${MARKER_FILE}`);
  } catch {
    return undefined;
  }
  try {
    if (file.stat.type !== 'file' || file.stat.size > 4_096) return undefined;
    const id = (JSON.parse(new TextDecoder().decode(await file.read(4_096))) as { memory_store_id?: unknown }).memory_store_id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  } finally {
    await file.close();
  }
}

/** Whether a process with this pid runs on this host (EPERM: it does, as another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM';
  }
}
