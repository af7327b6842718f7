import { posix } from 'node:path';
import { Semaphore } from 'async-mutex';
import { applyPlan } from './apply.js';
import { listAll, storeCall, StoreError } from './errors.js';
import { errorCode, type FileSystem } from './file-system.js';
import { MARKER_FILE } from './limits.js';
import { assessFolder } from './folder-trust.js';
import { ensureFolders, hostPathOf, localNow } from './local-io.js';
import { readMarker, writeMarker } from './marker.js';
import { planStore, settleUnknownWrites } from './plan.js';
import { alignLocalCase, indexRemote } from './remote-index.js';
import type { StoreSyncReport } from './reports.js';
import { scanStore, type LocalSnapshot } from './scan.js';
import { sha256Hex } from './sha256.js';
import type { StoreClient } from './store-client.js';
import { emptySyncState, type SyncState } from './sync-state.js';
import type { LastScan } from './unpushed.js';
import type { DeletionMode, Logger, MountedStore } from './types.js';
import { encodeUtf8 } from './utf8.js';

export interface StoreSyncDeps {
  fs: FileSystem;
  client: StoreClient;
  /** Already bound to this store. */
  logger: Logger;
  deletionMode: DeletionMode;
  concurrency: number;
  /** Makes the store folder again (and any folder above it, up to memoryRoot) with its marker. */
  recreateFolder: () => Promise<void>;
}

export interface PassOptions {
  now: number;
  /** 0 waives the grace period (final sync). */
  graceMs: number;
  pushOnly: boolean;
  signal: AbortSignal;
}

/**
 * One store's side of the mounter: its state between passes, the full download, and one
 * scan -> plan -> apply pass. I/O happens here and in the executor; decisions in the planner
 * and the folder-trust check, which are pure.
 */
export class StoreSync {
  readonly state: SyncState = emptySyncState();
  /** The last trusted scan, so finalize can name local changes a failed flush never pushed. */
  lastScan: LastScan | null = null;
  /** Whether the disk under this store folds case (/A.md and /a.md one file); probed at download. */
  #caseInsensitive = false;

  constructor(
    readonly mount: MountedStore,
    private readonly deps: StoreSyncDeps,
  ) {}

  /**
   * Downloads the whole store into its (existing) folder and makes that the baseline. Throws
   * on the first failure; what was written before it stays in the baseline.
   */
  async download(signal: AbortSignal): Promise<{ written: string[]; skipped: { path: string; reason: string }[] }> {
    const { fs, client, logger } = this.deps;
    const storeId = this.mount.memoryStoreId;
    // The marker exists now: if its name in upper case finds it too, the disk ignores case.
    this.#caseInsensitive = (await fs.lstat(posix.join(this.mount.path, MARKER_FILE.toUpperCase()))) !== null;
    const listed = await listAll(() => client.list(storeId, { withContent: true, signal }));
    const { remote, skipped } = indexRemote(listed, { caseInsensitiveDisk: this.#caseInsensitive });
    for (const { path, reason } of skipped) this.warnOnce(`remote:${path}:${reason}`, `remote memory skipped: ${reason}`, { path });
    const byPath = new Map(listed.map((m) => [m.path, m]));

    this.state.baseline.clear();
    this.state.missingSince.clear();
    const written: string[] = [];
    const clashes: { path: string; reason: string }[] = [];
    const slots = new Semaphore(this.deps.concurrency);
    await Promise.all(
      [...remote.keys()].map((path) =>
        slots.runExclusive(async () => {
          signal.throwIfAborted();
          let memory = byPath.get(path)!;
          if (typeof memory.content !== 'string') memory = await storeCall(client.get(storeId, memory.id, { signal }));
          const bytes = encodeUtf8(memory.content ?? '');
          if (typeof memory.content !== 'string' || sha256Hex(bytes) !== memory.content_sha256) {
            throw new StoreError('rejected', `the store returned content for ${path} that does not match its sha256`);
          }
          const folderProblem = await ensureFolders(fs, this.mount.path, path);
          const hostPath = hostPathOf(this.mount.path, path);
          // A fresh folder holds nothing, so anything here is a name clash (a case-insensitive
          // disk, or a file/folder overlap): never write over it.
          const there = folderProblem ? null : await localNow(fs, hostPath);
          if (folderProblem || there?.kind !== 'absent') {
            const detail = folderProblem ?? `${hostPath} already exists`;
            clashes.push({ path, reason: `its place on disk is taken: ${detail}` });
            this.warnOnce(`clash:${path}`, 'remote memory skipped: its place on disk is taken', { path, detail });
            return;
          }
          await fs.writeFile(hostPath, bytes, { mode: 0o600 });
          this.state.baseline.set(path, memory.content_sha256);
          written.push(path);
        }),
      ),
    );
    logger.debug('downloaded', { path: this.mount.path, memories: written.length });
    return { written: written.sort(), skipped: [...skipped, ...clashes] };
  }

  async pass(opts: PassOptions): Promise<StoreSyncReport> {
    const report = emptyReport(this.mount);
    try {
      await this.runPass(opts, report);
    } catch (err) {
      // Everything below is caught per action; reaching here means the pass could not run.
      report.status = opts.signal.aborted ? 'skipped' : 'failed';
      report.reason = opts.signal.aborted ? 'cut off by the time bound' : describe(err);
      if (!opts.signal.aborted) this.deps.logger.warn('sync failed for this store', { path: this.mount.path, error: report.reason });
    }
    return report;
  }

  private async runPass(opts: PassOptions, report: StoreSyncReport): Promise<void> {
    const { fs, client, logger } = this.deps;
    const { state, mount } = this;
    if (state.distrusted) {
      report.status = 'skipped';
      report.reason = `folder not trusted: ${state.distrusted}`;
      return;
    }
    opts.signal.throwIfAborted();

    const scanned = await scanStore(fs, mount.path, mount.memoryStoreId, state.scanCache);
    let snapshot = this.inStoreSpelling(scanned, state.baseline.keys());
    // Files already known missing (deletion candidates) are not expected on disk: a folder
    // emptied one deletion at a time is not a wipe.
    const expectedOnDisk = [...state.baseline.keys()].filter((path) => !state.missingSince.has(path));
    const verdict = assessFolder(snapshot, new Set(expectedOnDisk));
    switch (verdict.kind) {
      case 'distrusted':
        state.distrusted = verdict.reason;
        logger.warn(`folder left exactly as found and never synced again: ${verdict.reason}`, { path: mount.path });
        report.status = 'skipped';
        report.reason = `folder not trusted: ${verdict.reason}`;
        return;
      case 'unreadable':
        report.status = 'failed';
        report.reason = verdict.reason;
        logger.warn(`sync skipped: ${verdict.reason}`, { path: mount.path });
        return;
      case 'redownload':
        if (opts.pushOnly) {
          this.keepScan(snapshot); // files made since the wipe are not pushed: finalize names them
          report.status = 'skipped';
          report.reason = `${verdict.reason}; a push-only flush does not re-download`;
          return;
        }
        logger.warn(`re-downloading the store: ${verdict.reason}`, { path: mount.path });
        if (snapshot.root === 'missing') await this.deps.recreateFolder();
        else if (snapshot.marker !== 'ok') await writeMarker(fs, mount.path, mount.memoryStoreId);
        {
          const { written, skipped } = await this.download(opts.signal);
          report.pulled = written;
          report.skippedPaths.push(...skipped);
        }
        report.status = 'redownloaded';
        report.reason = verdict.reason;
        return;
      case 'trusted':
        break;
    }
    this.keepScan(snapshot);

    for (const [path, reason] of snapshot.blocked) {
      report.skippedPaths.push({ path, reason });
      this.warnOnce(`blocked:${path}:${reason}`, `left alone: ${reason}`, { path });
    }
    const listed = await listAll(() => client.list(mount.memoryStoreId, { signal: opts.signal }));
    const { remote, skipped } = indexRemote(listed, { caseInsensitiveDisk: this.#caseInsensitive });
    snapshot = this.inStoreSpelling(scanned, [...remote.keys(), ...state.baseline.keys()]);
    for (const { path, reason } of skipped) {
      report.skippedPaths.push({ path, reason });
      this.warnOnce(`remote:${path}:${reason}`, `remote memory skipped: ${reason}`, { path });
    }

    state.baseline = settleUnknownWrites(state.baseline, state.unknownWrites, remote);
    state.unknownWrites.clear();
    const plan = planStore({
      access: mount.access,
      deletionMode: this.deps.deletionMode,
      now: opts.now,
      graceMs: opts.graceMs,
      pushOnly: opts.pushOnly,
      baseline: state.baseline,
      localFiles: snapshot.files,
      localBlocked: snapshot.blocked,
      remote,
      missingSince: state.missingSince,
      refused: state.refused,
    });
    state.missingSince = plan.missingSince;
    report.pendingDeletions.push(...plan.pendingDeletions);
    for (const entry of plan.skipped) if (!snapshot.blocked.has(entry.path)) report.skippedPaths.push(entry);

    await applyPlan(
      {
        fs,
        client,
        memoryStoreId: mount.memoryStoreId,
        storeRoot: mount.path,
        logger,
        state,
        report,
        signal: opts.signal,
        concurrency: this.deps.concurrency,
      },
      plan.actions,
    );
  }

  private keepScan(snapshot: LocalSnapshot): void {
    this.lastScan = { files: snapshot.files, blocked: snapshot.blocked, baseline: new Map(this.state.baseline) };
  }

  /** On a case-insensitive disk, local paths renamed to the spelling of the memories they hold. */
  private inStoreSpelling(snapshot: LocalSnapshot, known: Iterable<string>): LocalSnapshot {
    if (!this.#caseInsensitive) return snapshot;
    const paths = [...known];
    return { ...snapshot, files: alignLocalCase(snapshot.files, paths), blocked: alignLocalCase(snapshot.blocked, paths) };
  }

  /** Why finalize must leave this store's folder in place, or null when it may go. */
  async removalRefusal(): Promise<string | null> {
    if (this.state.distrusted) return `folder not trusted: ${this.state.distrusted}`;
    if ((await this.deps.fs.lstat(this.mount.path))?.type !== 'directory') return null;
    const marker = await readMarker(this.deps.fs, this.mount.path, this.mount.memoryStoreId);
    return marker === 'ok' ? null : `marker check failed (${marker})`;
  }

  private warnOnce(key: string, msg: string, fields: Record<string, unknown>): void {
    if (this.state.warned.has(key)) return;
    this.state.warned.add(key);
    this.deps.logger.warn(msg, fields);
  }
}

export function emptyReport(mount: MountedStore): StoreSyncReport {
  return {
    memoryStoreId: mount.memoryStoreId,
    name: mount.name,
    path: mount.path,
    access: mount.access,
    status: 'synced',
    pulled: [],
    pushed: [],
    deletedLocal: [],
    deletedRemote: [],
    conflicts: [],
    refused: [],
    pendingDeletions: [],
    skippedPaths: [],
    errors: [],
    cutOff: [],
  };
}

function describe(err: unknown): string {
  // Every store call reaches here as a StoreError (storeCall, listAll); anything else is the disk's.
  if (err instanceof StoreError) return `store ${err.kind}: ${err.message}`;
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  return code ? `filesystem ${code}: ${message}` : message;
}
