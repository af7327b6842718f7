import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { posix } from 'node:path';
import { MemoryMountError } from '../model/errors.js';
import { errorCode, type FileSystem } from '../local/file-system.js';
import {
  removeRecord,
  STATE_RECORD_FORMAT,
  STATE_RECORD_VERSION,
  writeRecord,
  type RecordedFolderId,
  type RecordPhase,
  type StateRecord,
} from './record-file.js';
import type { RecordedState } from '../model/sync-state.js';
import type { DeletionMode, Logger, MountedStore } from '../model/types.js';

/**
 * Keeps one store folder's crash-recovery record (record-file.ts) up to date: written before
 * the folder is made, after the download, after every pass, and before every push (so a write
 * the store may have received is never mistaken for a remote edit at recovery); removed when
 * the folder is. It is told, never finds out: the pass's owner (the mounter, recover) calls
 * `write`/`tryWrite` when it ends a pass, and the executor awaits `beforeSend` right before a
 * push goes out (`StoreSyncDeps.beforeSend`). What it writes is the engine's state as it is
 * (`state`): the baseline, its memory ids, the writes of unknown outcome.
 *
 * Writes are serialised and coalesced: one runs at a time, a request made while one is waiting
 * joins it, and each write takes the state as it is when it starts, so the newest state is
 * always the last written.
 */
export class MountRecord {
  /** Random per mount, written into the record: only this mount's record is ever removed by it. */
  mountId = randomBytes(8).toString('hex');
  phase: RecordPhase = 'materializing';
  /** Folders between memoryRoot and the store folder that were absent when the mount began. */
  createdFolders: string[] = [];
  /**
   * The engine state the record mirrors, once the store's StoreSync exists: asked at each write
   * (`StoreSync.recordedState`), so a record written while a pass acts names the state that
   * pass planned from.
   */
  state: (() => RecordedState) | null = null;
  /**
   * The identities of memoryRoot and of each folder on the mount path (the store folder last), as
   * held now; unset until the folder exists, and null while a pass makes it again (mounter.ts).
   */
  identities: (() => MountPathIdentities | null) | null = null;
  /** The mounter's `memory_sync_deletions`, for recovery's handling of local moves; unset: not written. */
  deletionMode: DeletionMode | undefined;
  /** path -> sha of content about to be sent (or sent) that no pass has settled yet. */
  readonly #intents = new Map<string, string>();
  #retired = false;
  #queued: Promise<void> | null = null;
  #tail: Promise<void> = Promise.resolve();
  #failing = false;

  constructor(
    private readonly fs: FileSystem,
    readonly stateDir: string,
    readonly memoryRoot: string,
    readonly mount: MountedStore,
    private readonly logger: Logger,
  ) {}

  /** The record as it would be written now. */
  snapshot(): StateRecord {
    const baseline: Record<string, string> = {};
    const memoryIds: Record<string, string> = {};
    const unsettled: Record<string, string> = {};
    const state = this.state?.();
    if (this.phase === 'mounted' && state) {
      for (const [path, sha] of [...state.baseline].sort(byKey)) {
        baseline[path] = sha;
        // The id the engine agreed the path with (one map: the state's), not the last answer's.
        const id = state.baselineIds.get(path);
        if (id !== undefined) memoryIds[path] = id;
      }
      for (const [path, sha] of state.unknownWrites) unsettled[path] = sha;
      for (const [path, sha] of this.#intents) {
        // Settled: the push landed and the baseline took it.
        if (state.baseline.get(path) === sha) this.#intents.delete(path);
        else unsettled[path] = sha;
      }
    }
    return {
      format: STATE_RECORD_FORMAT,
      version: STATE_RECORD_VERSION,
      phase: this.phase,
      mount_id: this.mountId,
      memory_store_id: this.mount.memoryStoreId,
      name: this.mount.name,
      access: this.mount.access,
      mount_path: this.mount.mountPath,
      host_path: this.mount.path,
      memory_root: this.memoryRoot,
      created_folders: [...this.createdFolders],
      baseline,
      memory_ids: memoryIds,
      unsettled_writes: unsettled,
      ...(this.deletionMode !== undefined && { deletion_mode: this.deletionMode }),
      ...identityFields(this.identities?.() ?? undefined),
      pid: process.pid,
      hostname: hostname(),
      written_at: new Date().toISOString(),
    };
  }

  /**
   * Writes the record now (or joins a write not yet started). Rejects when the write fails; a
   * retired record is never written again.
   */
  write(): Promise<void> {
    if (this.#retired) return Promise.resolve();
    if (this.#queued) return this.#queued;
    const run = this.#tail.then(async () => {
      this.#queued = null;
      if (this.#retired) return;
      await writeRecord(this.fs, this.stateDir, this.snapshot());
      if (this.#failing) this.logger.info('state record written again', { path: this.mount.path });
      this.#failing = false;
    });
    this.#queued = run;
    this.#tail = run.catch(() => {});
    return run;
  }

  /** Like `write`, but a failure is logged (once per run of failures), not thrown: the sync goes on. */
  async tryWrite(): Promise<void> {
    try {
      await this.write();
    } catch (err) {
      if (this.#failing) return;
      this.#failing = true;
      this.logger.warn('state record could not be written; crash recovery would use the last one written', {
        path: this.mount.path,
        state_dir: this.stateDir,
        error: errorCode(err) ?? (err instanceof Error ? err.message : String(err)),
      });
    }
  }

  /**
   * No more writes. With `remove`, the record goes too (if it is still this mount's); otherwise
   * it stays, as last written, for `MemoryMounter.recover`.
   */
  async retire(opts: { remove: boolean }): Promise<void> {
    this.#retired = true;
    await this.#tail;
    if (!opts.remove) return;
    try {
      await removeRecord(this.fs, this.stateDir, this.mount.path, this.mountId);
    } catch (err) {
      this.logger.warn('state record could not be removed; MemoryMounter.recover will find its folder gone and remove it', {
        path: this.mount.path,
        state_dir: this.stateDir,
        error: errorCode(err) ?? (err instanceof Error ? err.message : String(err)),
      });
    }
  }

  /**
   * Seeds what a recovered record knew of the mount, so rewriting it loses nothing. Its baseline,
   * ids and unsettled writes are the engine's to take up (`StoreSync.resume`): the record
   * mirrors the state that holds them.
   */
  restore(record: StateRecord): void {
    this.mountId = record.mount_id;
    const { folder_ids: folders, memory_root_id: root } = record;
    if (folders && root) this.identities = () => ({ root, folders });
    if (record.deletion_mode !== undefined) this.deletionMode = record.deletion_mode;
    this.phase = record.phase;
    this.createdFolders = [...record.created_folders];
  }

  /**
   * The push of content of `sha` to `path` is about to go out (the executor awaits this right
   * before the request): the record names it among the unsettled writes before the store can
   * receive it, until a pass settles it into the baseline. A failed write is logged, never
   * thrown (`tryWrite`): the push goes on, and recovery would use the last record written.
   */
  async beforeSend(path: string, sha: string): Promise<void> {
    if (this.#retired) return;
    this.#intents.set(path, sha);
    await this.tryWrite();
  }
}

/**
 * `stateDir` must be a directory the worker can write (the operator prepares it, like
 * `memoryRoot`): checked before anything is created, so a session never runs with recovery
 * silently off.
 */
export async function checkStateDir(fs: FileSystem, stateDir: string): Promise<void> {
  const stat = await fs.lstat(stateDir).catch((err: unknown) => {
    throw new MemoryMountError('state_dir_unusable', `stateDir ${stateDir} cannot be checked (${errorCode(err) ?? String(err)})`, {
      path: stateDir,
      cause: err,
    });
  });
  if (stat?.type === 'directory') return;
  const found = stat ? `is a ${stat.type}, not a directory (give its resolved path)` : 'does not exist';
  throw new MemoryMountError(
    'state_dir_unusable',
    `stateDir ${stateDir} ${found}. The operator prepares it once, outside the sandbox: ` +
      `\`mkdir -p ${stateDir} && chown <worker user> ${stateDir} && chmod 700 ${stateDir}\`.`,
    { path: stateDir },
  );
}

/**
 * Starts the record of a mount about to be created. When something is already at the store's
 * path (a folder a dead mounter left, say), nothing is written: the mount will be refused with
 * `mount_path_exists`, and a record there may be the only way to recover that folder.
 * Throws (MemoryMountError `state_dir_unusable`) when the record cannot be written.
 */
export async function beginRecord(
  fs: FileSystem,
  stateDir: string,
  memoryRoot: string,
  mount: MountedStore,
  logger: Logger,
  deletionMode?: DeletionMode,
): Promise<MountRecord | null> {
  const record = new MountRecord(fs, stateDir, memoryRoot, mount, logger);
  if (deletionMode !== undefined) record.deletionMode = deletionMode;
  const relative = posix.relative(memoryRoot, mount.path).split('/');
  let dir = memoryRoot;
  for (const segment of relative.slice(0, -1)) {
    dir = posix.join(dir, segment);
    if ((await fs.lstat(dir)) === null) record.createdFolders.push(dir);
  }
  if ((await fs.lstat(mount.path)) !== null) return null;
  try {
    await record.write();
  } catch (err) {
    throw new MemoryMountError(
      'state_dir_unusable',
      `store ${mount.memoryStoreId}: its crash-recovery record could not be written in ${stateDir} (${errorCode(err) ?? String(err)})`,
      { memoryStoreId: mount.memoryStoreId, path: stateDir, cause: err },
    );
  }
  return record;
}

/** memoryRoot's identity and each mount-path folder's, the store folder last (StoreFolder.mountPathIdentities). */
export interface MountPathIdentities {
  root: { dev: number; ino: number };
  folders: RecordedFolderId[];
}

function identityFields(ids: MountPathIdentities | undefined): Pick<StateRecord, 'folder_ids' | 'memory_root_id'> {
  return ids ? { folder_ids: ids.folders.map((f) => ({ ...f })), memory_root_id: { ...ids.root } } : {};
}

function byKey(a: [string, unknown], b: [string, unknown]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}
