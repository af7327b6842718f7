import { Semaphore } from 'async-mutex';
import { asStoreError, storeCall, StoreError } from './errors.js';
import { MAX_MEMORY_BYTES } from './limits.js';
import { readMarker } from './marker.js';
import type { Action } from './plan.js';
import type { RemoteChange } from './remote-feed.js';
import type { StoreSyncReport } from './reports.js';
import { sha256Hex } from './sha256.js';
import type { StoreClient, StoreMemory } from './store-client.js';
import { FolderRefusal, type LocalRead, type StoreFolder } from './store-folder.js';
import type { SyncState } from './sync-state.js';
import type { Logger } from './types.js';
import { decodeUtf8, encodeUtf8 } from './utf8.js';
import { conflictCopyPath, type StoreEvents } from './events.js';

/**
 * The executor: applies a plan through the two seams, with at most `concurrency` transfers in
 * flight. Each action re-checks the disk right before it acts and, on success, moves the
 * baseline for its own path only. Nothing here throws for a store, network or file problem:
 * each is logged with the path and written to the report.
 */
export interface ApplyContext {
  /** The store folder: every disk access of this module goes through it. */
  folder: StoreFolder;
  client: StoreClient;
  memoryStoreId: string;
  /** Bound to the store: every line carries memory_store_id. */
  logger: Logger;
  state: SyncState;
  report: StoreSyncReport;
  /** Aborted when a time bound runs out: no new action starts, calls in flight are cancelled. */
  signal: AbortSignal;
  concurrency: number;
  /** Where the events of this store go (`mounter.on`); absent: none are emitted. */
  events?: StoreEvents;
  /** Slots shared with other stores (the session's pool of transfers); else `concurrency` slots of its own. */
  slots?: Semaphore;
  /** Told what the store answered about a memory (a write's result, a fetch, a delete), so the remote view follows at once. */
  onRemote?: (change: RemoteChange) => void;
}

export async function applyPlan(ctx: ApplyContext, actions: readonly Action[]): Promise<void> {
  const slots = ctx.slots ?? new Semaphore(ctx.concurrency);
  let done = 0;
  const total = actions.length;
  if (total > 0) ctx.events?.progress(0, total);
  await Promise.all(
    actions.map((action) =>
      slots.runExclusive(async () => {
        if (ctx.signal.aborted) {
          ctx.report.cutOff.push(action.path);
          return;
        }
        try {
          await applyAction(ctx, action);
        } catch (err) {
          recordFailure(ctx, action, err);
        } finally {
          ctx.events?.progress(++done, total);
        }
      }),
    ),
  );
}

function applyAction(ctx: ApplyContext, action: Action): Promise<void> | void {
  switch (action.type) {
    case 'pull':
      return pull(ctx, action);
    case 'push':
      return push(ctx, action);
    case 'rename_local':
      return renameLocal(ctx, action);
    case 'rename_remote':
      return renameRemote(ctx, action);
    case 'delete_local':
      return deleteLocal(ctx, action);
    case 'delete_remote':
      return deleteRemote(ctx, action);
    case 'adopt':
      ctx.state.baseline.set(action.path, action.sha);
      return;
    case 'forget':
      ctx.state.baseline.delete(action.path);
      return;
    case 'refuse':
      ctx.state.refused.set(action.path, action.localSha);
      ctx.report.refused.push({ path: action.path, reason: action.reason });
      if (action.firstTime) ctx.events?.refused({ path: action.path, reason: action.reason });
      if (action.firstTime) ctx.logger.warn(`not pushed: file ${action.reason}`, { path: action.path });
      return;
    case 'note_conflict':
      ctx.report.conflicts.push(action.path);
      ctx.logger.warn('conflict: the file and the memory both changed; the store keeps its version and the local edit is not pushed', {
        path: action.path,
      });
      return;
    case 'keep_local': {
      ctx.report.refused.push({ path: action.path, reason: 'read-only store: local changes are never pushed' });
      const key = `keep:${action.path}:${action.localSha}`;
      if (action.warn && !ctx.state.warned.has(key)) {
        ctx.state.warned.add(key);
        ctx.events?.refused({ path: action.path, reason: 'read-only store: local changes are never pushed' });
        ctx.logger.warn('memory deleted in a read-only store; the local file is kept and never pushed', { path: action.path });
      }
      return;
    }
  }
}

async function pull(ctx: ApplyContext, action: Extract<Action, { type: 'pull' }>): Promise<void> {
  const { path } = action;
  const memory = await storeCall(ctx.client.get(ctx.memoryStoreId, action.memoryId, { signal: ctx.signal }));
  ctx.onRemote?.({ kind: 'memory', memory });
  if (memory.path !== path) return skip(ctx, path, 'memory was renamed during the sync; the next pass follows it');
  const content = memory.content;
  if (typeof content !== 'string') throw new StoreError('rejected', 'the store returned no content');
  const bytes = encodeUtf8(content);
  if (bytes.byteLength > MAX_MEMORY_BYTES) return refuseOversizePull(ctx, path, bytes.byteLength);
  const sha = sha256Hex(bytes);
  if (sha !== memory.content_sha256) throw new StoreError('rejected', 'the store returned content that does not match its sha256');

  const now = await ctx.folder.read(path);
  // An empty folder where the file goes (left by a remote delete) is no one's content: write()
  // removes it. Anything else that is not a file is left alone.
  if (now.kind === 'other' && now.code !== 'is_folder') return skip(ctx, path, `not written: ${path} ${now.reason}`);
  // The file changed after the scan: the planner has not seen this content, so it is not ours
  // to overwrite. The next pass plans with it.
  if (!stillAsPlanned(now, action.expectLocal)) return skip(ctx, path, 'changed on disk during the sync; left for the next pass');
  // The loser of a conflict goes to the listeners (and the conflict copy) before it is replaced.
  if (action.reason === 'conflict' && now.kind === 'file' && now.bytes) await handOverLoser(ctx, path, sha, now.sha, now.bytes);

  try {
    await ctx.folder.write(path, bytes);
  } catch (err) {
    if (err instanceof FolderRefusal) return skip(ctx, path, `not written: ${err.message}`);
    throw err;
  }
  ctx.state.baseline.set(path, sha);
  ctx.state.refused.delete(path);
  ctx.report.pulled.push(path);
  ctx.events?.pulled({ path, sha, reason: action.reason === 'conflict' || action.reason === 'restore' ? action.reason : 'remote_change' });
  if (action.reason === 'conflict') {
    ctx.report.conflicts.push(path);
    ctx.logger.warn('conflict: the file and the memory both changed; the store wins and the local edit is replaced', { path });
  } else if (action.reason === 'restore') {
    ctx.logger.warn('restored: the file was deleted locally but the memory changed in the store', { path });
  }
}

/** A memory over the size limit is never written: the mount holds only what the service allows. */
function refuseOversizePull(ctx: ApplyContext, path: string, size: number): void {
  const reason = `remote memory is ${size} bytes, over the ${MAX_MEMORY_BYTES}-byte limit; not written`;
  ctx.report.skippedPaths.push({ path, reason });
  const key = `oversize:${path}:${size}`;
  if (ctx.state.warned.has(key)) return;
  ctx.state.warned.add(key);
  ctx.logger.warn('remote memory over the size limit; not written to disk', { path, size });
}

async function push(ctx: ApplyContext, action: Extract<Action, { type: 'push' }>): Promise<void> {
  const { path } = action;
  const now = await ctx.folder.read(path);
  // Changed since the scan: push nothing the planner did not decide on; the next pass will.
  if (now.kind !== 'file' || !now.bytes || now.sha !== action.localSha) {
    return skip(ctx, path, 'changed on disk during the sync; left for the next pass');
  }
  const content = decodeUtf8(now.bytes);
  if (content === null) return skip(ctx, path, 'is not UTF-8 text');

  const signal = ctx.signal;
  let written: StoreMemory;
  try {
    if (action.memoryId !== undefined) {
      try {
        written = await storeCall(
          ctx.client.update(ctx.memoryStoreId, action.memoryId, { content, expected_content_sha256: action.expectedRemoteSha! }, { signal }),
        );
      } catch (err) {
        // Deleted in the store since the listing: the file is the only copy, so re-create it.
        if ((err as StoreError).kind !== 'not_found') throw err;
        ctx.onRemote?.({ kind: 'deleted', memoryId: action.memoryId });
        written = await storeCall(ctx.client.create(ctx.memoryStoreId, { path, content }, { signal }));
      }
    } else {
      written = await storeCall(ctx.client.create(ctx.memoryStoreId, { path, content }, { signal }));
    }
  } catch (err) {
    const storeError = asStoreError(err);
    if (storeError.kind === 'unavailable') ctx.state.unknownWrites.set(path, action.localSha);
    if (storeError.kind === 'rejected') {
      ctx.state.refused.set(path, action.localSha);
      ctx.report.refused.push({ path, reason: `rejected by the store: ${storeError.message}` });
      ctx.events?.refused({ path, reason: `rejected by the store: ${storeError.message}` });
      ctx.logger.warn('the store rejected this file; it is not sent again until it changes', { path, error: storeError.message });
      return;
    }
    throw storeError;
  }
  // The baseline takes the sha we sent: if the store normalised the content, its listing then
  // differs from the baseline and the next pass pulls the store's version.
  ctx.onRemote?.({ kind: 'memory', memory: written });
  ctx.state.baseline.set(path, action.localSha);
  ctx.state.unknownWrites.delete(path);
  ctx.state.refused.delete(path);
  ctx.report.pushed.push(path);
  ctx.events?.pushed({ path, sha: action.localSha });
}

/**
 * Follows the store's rename on disk: the file moves, nothing is transferred. Then an edit made
 * on either side is settled at the new path (`then`): a local edit goes to the renamed memory by
 * id, never re-created at the old path.
 */
async function renameLocal(ctx: ApplyContext, action: Extract<Action, { type: 'rename_local' }>): Promise<void> {
  const { from, path } = action;
  if (action.alreadyMoved) {
    // Moved alike on both sides: the file must still be at `path` and gone from `from`.
    const there = await ctx.folder.read(path);
    const back = await ctx.folder.stat(from).catch((err: unknown) => {
      if (err instanceof FolderRefusal) return err;
      throw err;
    });
    if (there.kind !== 'file' || there.sha !== action.expectLocal || back !== null) {
      return skip(ctx, path, 'changed on disk during the sync; left for the next pass');
    }
  } else {
    const now = await ctx.folder.read(from);
    if (now.kind !== 'file' || now.sha !== action.expectLocal) return skip(ctx, from, 'changed on disk during the sync; left for the next pass');
    try {
      await ctx.folder.move(from, path, now.stat);
    } catch (err) {
      if (err instanceof FolderRefusal) return skip(ctx, path, `not moved from ${from}: ${err.message}`);
      throw err;
    }
  }
  ctx.state.baseline.delete(from);
  ctx.state.baseline.set(path, action.baseSha);
  ctx.state.refused.delete(from);
  ctx.report.renamed.push({ from, to: path, side: 'local' });
  ctx.logger.info(action.alreadyMoved ? 'renamed alike on disk and in the store' : 'renamed on disk: the memory was renamed in the store', { path, from });
  // The edit on either side, settled at the new path; its failure is recorded under its own type.
  if (action.then) {
    try {
      await applyAction(ctx, action.then);
    } catch (err) {
      recordFailure(ctx, action.then, err);
    }
  }
}

/**
 * Follows the agent's rename in the store: the memory's path is updated (same id, same history),
 * guarded by the content both paths hold. Any failure leaves the baseline as it was, so the next
 * pass judges both paths again: a memory that changed or went meanwhile no longer reads as a
 * rename, and the rows (restore, create) lose nothing.
 */
async function renameRemote(ctx: ApplyContext, action: Extract<Action, { type: 'rename_remote' }>): Promise<void> {
  const { from, path, sha } = action;
  const now = await ctx.folder.read(path);
  if (now.kind !== 'file' || now.sha !== sha) return skip(ctx, path, 'changed on disk during the sync; left for the next pass');
  const back = await ctx.folder.stat(from).catch((err: unknown) => {
    if (err instanceof FolderRefusal) return err;
    throw err;
  });
  if (back !== null) return skip(ctx, from, 'reappeared before its memory was renamed; left for the next pass');
  let written: StoreMemory;
  try {
    written = await storeCall(ctx.client.update(ctx.memoryStoreId, action.memoryId, { path, expected_content_sha256: sha }, { signal: ctx.signal }));
  } catch (err) {
    const storeError = asStoreError(err);
    // Unknown outcome: a memory at `path` holding `sha` next pass is this rename.
    if (storeError.kind === 'unavailable') ctx.state.unknownWrites.set(path, sha);
    if (storeError.kind === 'not_found') ctx.onRemote?.({ kind: 'deleted', memoryId: action.memoryId });
    throw storeError;
  }
  ctx.onRemote?.({ kind: 'memory', memory: written });
  ctx.state.baseline.delete(from);
  ctx.state.baseline.set(path, sha);
  ctx.state.missingSince.delete(from);
  ctx.state.unknownWrites.delete(path);
  ctx.state.refused.delete(path);
  ctx.report.renamed.push({ from, to: path, side: 'remote' });
  ctx.logger.info('renamed in the store: the file was renamed locally', { path, from });
}

/**
 * The losing side of a conflict, before the store's version replaces it: with `conflictCopies`
 * it is written beside the file (through the store folder, under a name that never syncs), and
 * every `conflict` listener gets its bytes. A copy that cannot be written is logged; the pull
 * goes on (the store wins either way, SPEC 4.2).
 */
async function handOverLoser(ctx: ApplyContext, path: string, storeSha: string, localSha: string, bytes: Uint8Array): Promise<void> {
  const events = ctx.events;
  if (!events) return;
  let copyPath: string | null = null;
  if (events.conflictCopies) {
    const copy = conflictCopyPath(path, Date.now());
    try {
      await ctx.folder.write(copy, bytes);
      copyPath = events.hostPath(copy);
      ctx.logger.info('conflict copy written: the local edit is kept beside the file, never synced', { path, copy });
    } catch (err) {
      ctx.logger.warn('conflict copy could not be written', { path, copy, error: err instanceof Error ? err.message : String(err) });
    }
  }
  events.conflict({ path, storeSha, localSha, localContent: bytes, copyPath });
}

async function deleteLocal(ctx: ApplyContext, action: Extract<Action, { type: 'delete_local' }>): Promise<void> {
  if (!stillAsPlanned(await ctx.folder.read(action.path), action.expectLocal)) {
    return skip(ctx, action.path, 'changed on disk during the sync; not deleted');
  }
  try {
    await ctx.folder.unlink(action.path);
  } catch (err) {
    if (err instanceof FolderRefusal) return skip(ctx, action.path, `not deleted: ${err.message}`);
    throw err;
  }
  ctx.state.baseline.delete(action.path);
  ctx.report.deletedLocal.push(action.path);
  ctx.events?.deleted({ path: action.path, side: 'local' });
}

async function deleteRemote(ctx: ApplyContext, action: Extract<Action, { type: 'delete_remote' }>): Promise<void> {
  const { path } = action;
  // The fresh re-check of SPEC 4.3: still missing (nothing at all there) and the marker intact.
  // A refusal (a folder on the way swapped for a link) means the file's state is unknown: no delete.
  const there = await ctx.folder.stat(path).catch((err: unknown) => {
    if (err instanceof FolderRefusal) return err;
    throw err;
  });
  if (there !== null) {
    return skip(ctx, path, there instanceof FolderRefusal ? `not deleted remotely: ${there.message}` : 'reappeared before its remote delete; not deleted');
  }
  if ((await readMarker(ctx.folder, ctx.memoryStoreId)) !== 'ok') {
    if (action.mode === 'send') ctx.report.pendingDeletions.push(path); // log_only ones are listed already
    return skip(ctx, path, 'store marker failed its check; remote delete not sent');
  }
  if (action.mode === 'log_only') {
    ctx.logger.info('log_only: would delete this memory in the store', { path });
    return;
  }
  try {
    await storeCall(
      ctx.client.delete(ctx.memoryStoreId, action.memoryId, { expected_content_sha256: action.expectedRemoteSha, signal: ctx.signal }),
    );
  } catch (err) {
    // Already gone is what we wanted. A precondition failure means it changed in the store: it
    // is kept there and the next pass restores it to disk.
    if ((err as StoreError).kind !== 'not_found') throw err;
  }
  ctx.onRemote?.({ kind: 'deleted', memoryId: action.memoryId });
  ctx.state.baseline.delete(path);
  ctx.state.missingSince.delete(path);
  ctx.report.deletedRemote.push(path);
  ctx.events?.deleted({ path, side: 'remote' });
  ctx.logger.info('deleted in the store: the file was deleted locally', { path });
}

/** The local state a planner expected (`null`: absent) still holds. */
function stillAsPlanned(now: LocalRead, expected: string | null): boolean {
  if (expected === null) return now.kind === 'absent' || (now.kind === 'other' && now.code === 'is_folder');
  return now.kind === 'file' && now.sha === expected;
}

function skip(ctx: ApplyContext, path: string, reason: string): void {
  ctx.report.skippedPaths.push({ path, reason });
  ctx.logger.debug(reason, { path });
}

function recordFailure(ctx: ApplyContext, action: Action, err: unknown): void {
  if (ctx.signal.aborted) ctx.report.cutOff.push(action.path);
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof StoreError) {
    const storeError = err;
    ctx.report.errors.push({ path: action.path, operation: action.type, kind: storeError.kind, message });
    const quiet = storeError.kind === 'precondition_failed' || storeError.kind === 'path_conflict';
    ctx.logger[quiet ? 'info' : 'warn'](`${action.type} failed: ${storeError.kind}`, { path: action.path, error: message });
  } else {
    ctx.report.errors.push({ path: action.path, operation: action.type, kind: 'filesystem', message });
    ctx.logger.warn(`${action.type} failed on disk`, { path: action.path, error: message });
  }
}
