import { asStoreError, listAll, storeCall, StoreError } from '../model/errors.js';
import type { Outcome, Result } from '../decide/outcome.js';
import { isConflictResolution } from '../decide/conflict-rule.js';
import type { RemoteChange } from '../decide/feed-fold.js';
import { sentThenDeleted } from '../decide/push-history.js';
import { FairSlots, type TransferSlots } from '../remote/fair-slots.js';
import { errorCode, unchangedSince } from '../local/file-system.js';
import { MAX_MEMORY_BYTES } from '../model/limits.js';
import { readMarker } from '../local/marker.js';
import type { Create, DeleteLocal, DeleteRemote, Pull, RenameLocal, RenameRemote, ReportAction, Transfer, Update } from '../decide/plan.js';
import type { PathReasonCode } from '../model/reasons.js';
import type { CarriedContent } from '../local/scan.js';
import { sha256Hex } from '../model/sha256.js';
import { FolderTurns } from '../decide/start-order.js';
import type { StoreClient, StoreMemory } from '../remote/store-client.js';
import { FolderRefusal, type LocalRead, type StoreFolder } from '../local/store-folder.js';
import type { Logger } from '../model/types.js';
import { decodeUtf8, encodeUtf8 } from '../model/utf8.js';
import type { StoreEvents } from '../model/events.js';
import { conflictCopyPath } from '../model/unsynced-names.js';

/**
 * The executor: performs a plan's transfers through the two seams, with at most `concurrency`
 * in flight, and returns one outcome per transfer. It decides nothing the planner decided and
 * writes no engine state: `settle` folds the outcomes into the baseline and the report. Each
 * transfer re-checks the disk right before it acts. Nothing here throws for a store, network or
 * file problem: each becomes a `failed` outcome.
 */
export interface ApplyIO {
  /** The store folder: every disk access of this module goes through it. */
  folder: StoreFolder;
  client: StoreClient;
  memoryStoreId: string;
  /** Bound to the store: every line carries memory_store_id. */
  logger: Logger;
  /** Aborted when a time bound runs out: no new transfer starts, calls in flight are cancelled. */
  signal: AbortSignal;
  concurrency: number;
  /** Where the transfers tell what happened (the pass tells listeners at its commit: `ToldAtCommit`); absent: nothing is told. */
  events?: StoreEvents;
  /** Slots shared with other stores (the session's pool of transfers); else `concurrency` slots of its own. */
  slots?: TransferSlots;
  /**
   * The folder is being materialized: made empty for this download and not yet given to anyone,
   * so a pull to where nothing is expected skips the read that re-checks it (see `place`).
   */
  materializing?: boolean;
  /** Content the pass's scan read, by path: a push sends it instead of reading the file again. */
  carried?: ReadonlyMap<string, CarriedContent>;
  /**
   * Whether the store's change feed may be read this session (the client has one and it was
   * never refused): only then is a memory's history asked for (see `sentBeforeDeletion`).
   */
  feedUsable?: boolean;
  /**
   * Awaited right before a push's content goes out (once per push, before its first request:
   * an update, or the create an update met `not_found` for sends the same content), with the
   * path and the sha of what is sent. The crash-recovery record names the write here, so a
   * write the store may have received is never taken for a remote edit at recovery. Absent:
   * nothing to tell.
   */
  beforeSend?: (path: string, sha: string) => Promise<void>;
}

/** Disk errors that say this one name cannot exist here, not that the disk is failing. */
const UNPLACEABLE_CODES = new Set(['ENAMETOOLONG', 'EINVAL', 'EILSEQ', 'ENOTDIR', 'EISDIR']);

/** Performs `transfers`; `outcomes[i]` is what became of `transfers[i]`. */
export function applyPlan(io: ApplyIO, transfers: readonly Transfer[]): Promise<Outcome[]> {
  return new TransferStream(io).run(transfers);
}

/**
 * The executor's schedule: transfers handed in batch by batch, possibly while earlier batches
 * still run (a download hands in each folder's pulls as its listing arrives), started with the
 * folders in turn (start-order.ts), each in a slot of the session's pool. `run` resolves with a
 * batch's outcomes once all of them are in. Progress counts every batch handed in so far.
 *
 * At most `concurrency` transfers wait for a slot or hold one: no more can run at once anyway
 * (the session's pool has that many slots), and a transfer not started yet is only an entry in
 * its folder's queue. Queuing every transfer at once kept a promise, a closure and an async
 * frame per transfer alive until its turn: about 1 kB each, 16,000 of them when eight stores of
 * 2,000 download together (docs/performance.md).
 *
 * A pull's content is dropped from the outcome once the pull is done: what settles a pass is
 * the path and the sha, and a download must not hold every memory's text until it ends.
 */
export class TransferStream {
  readonly #io: ApplyIO;
  readonly #slots: TransferSlots;
  readonly #turns = new FolderTurns<Queued>();
  #workers = 0;
  #done = 0;
  #total = 0;

  constructor(io: ApplyIO) {
    this.#io = io;
    this.#slots = io.slots ?? new FairSlots(io.concurrency).lane('');
  }

  run(transfers: readonly Transfer[]): Promise<Outcome[]> {
    if (transfers.length === 0) return Promise.resolve([]);
    return new Promise<Outcome[]>((resolve) => {
      const batch: Batch = { outcomes: new Array(transfers.length), left: transfers.length, resolve };
      transfers.forEach((action, index) => this.#turns.add({ path: action.path, action, index, batch }));
      this.#total += transfers.length;
      this.#io.events?.progress(this.#done, this.#total);
      const wanted = Math.min(Math.max(1, this.#io.concurrency), this.#workers + this.#turns.size);
      while (this.#workers < wanted) {
        this.#workers++;
        void this.#work();
      }
    });
  }

  async #work(): Promise<void> {
    for (let next = this.#turns.next(); next; next = this.#turns.next()) {
      const { action, index, batch } = next;
      const outcome = await this.#slots.runExclusive(() => runTransfer(this.#io, action));
      this.#io.events?.progress(++this.#done, this.#total);
      batch.outcomes[index] = withoutContent(outcome);
      if (--batch.left === 0) batch.resolve(batch.outcomes);
    }
    this.#workers--;
  }
}

interface Batch {
  outcomes: Outcome[];
  left: number;
  resolve(outcomes: Outcome[]): void;
}

interface Queued {
  path: string;
  action: Transfer;
  index: number;
  batch: Batch;
}

/** One transfer, in its slot: never throws, every problem is its outcome. */
async function runTransfer(io: ApplyIO, action: Transfer): Promise<Outcome> {
  const learned: RemoteChange[] = [];
  if (io.signal.aborted) return { action, result: { kind: 'cut_off' }, learned };
  try {
    if (action.type === 'rename_local') return await renameLocalThen(io, action, learned);
    return { action, result: await perform(io, action, learned), learned };
  } catch (err) {
    return { action, result: failure(io, err), learned };
  }
}

/** The outcome without the pull's content (its own, or its rename's follow-up's). */
function withoutContent(outcome: Outcome): Outcome {
  const action = bare(outcome.action);
  const then = outcome.then && withoutContent(outcome.then);
  if (action === outcome.action && then === outcome.then) return outcome;
  return { ...outcome, action, ...(then && { then }) };
}

function bare<T extends Transfer>(action: T): T {
  if (action.type === 'pull' && action.content !== undefined) {
    const { content: _written, ...rest } = action;
    return rest as T;
  }
  if (action.type === 'rename_local' && action.then?.type === 'pull' && action.then.content !== undefined) {
    return { ...action, then: bare(action.then) };
  }
  return action;
}

function perform(io: ApplyIO, action: Transfer, learned: RemoteChange[]): Promise<Result> {
  switch (action.type) {
    case 'pull':
      return pull(io, action, learned);
    case 'update':
    case 'create':
      return push(io, action, learned);
    case 'delete_local':
      return deleteLocal(io, action, learned);
    case 'delete_remote':
      return deleteRemote(io, action, learned);
    case 'rename_local':
      return renameLocal(io, action);
    case 'rename_remote':
      return renameRemote(io, action, learned);
    default:
      return unknownTransfer(action);
  }
}

/** A transfer kind added to the plan but not to the executor fails to compile here. */
function unknownTransfer(action: never): never {
  throw new Error(`applyPlan: no executor for ${(action as Transfer).type}`);
}

const skipped = (code: PathReasonCode, detail: string): Result => ({ kind: 'skipped', code, detail });

async function pull(io: ApplyIO, action: Pull, learned: RemoteChange[]): Promise<Result> {
  const { path } = action;
  // The content the listing carried, or the memory as the store holds it now (its sha may be
  // newer than the listing's: what is written is what is recorded).
  let content = action.content;
  let expectedSha = action.remoteSha;
  // The version the content is, for the listeners: the fetch's answer when there is one.
  let versionId = action.versionId;
  if (content === undefined) {
    const memory = await storeCall(io.client.get(io.memoryStoreId, action.memoryId, { signal: io.signal }));
    learned.push({ kind: 'memory', memory, fetched: true });
    if (memory.path !== path) return skipped('renamed_during_sync', 'memory was renamed during the sync; the next pass follows it');
    if (typeof memory.content !== 'string') throw new StoreError('rejected', 'the store returned no content');
    content = memory.content;
    expectedSha = memory.content_sha256;
    versionId = typeof memory.memory_version_id === 'string' ? memory.memory_version_id : undefined;
  }
  const bytes = encodeUtf8(content);
  if (bytes.byteLength > MAX_MEMORY_BYTES) {
    return skipped('remote_too_large', `remote memory is ${bytes.byteLength} bytes, over the ${MAX_MEMORY_BYTES}-byte limit; not written`);
  }
  if (sha256Hex(bytes) !== expectedSha) throw new StoreError('rejected', `the store returned content for ${path} that does not match its sha256`);

  try {
    // The listing's string, equal to the one just computed: the baseline and the remote view
    // then share one copy of each sha instead of holding two.
    return await place(io, action, bytes, { sha: expectedSha, ...(versionId !== undefined && { versionId }) });
  } catch (err) {
    if (err instanceof FolderRefusal) return skipped(err.code, `not written: ${err.message}`);
    // One name the disk cannot hold never fails the rest.
    const code = errorCode(err);
    if (code && UNPLACEABLE_CODES.has(code)) return skipped('disk_refused', `not written: the disk refused it (${code})`);
    throw err;
  }
}

/**
 * The disk half of a pull: `bytes` (of `written.sha`, held by the store's version
 * `written.versionId` when known) written at the action's path, if it still is as planned.
 */
async function place(io: ApplyIO, action: Pull, bytes: Uint8Array, written: { sha: string; versionId?: string }): Promise<Result> {
  const { path } = action;
  const { sha } = written;
  const ids = { memoryId: action.memoryId, ...(written.versionId !== undefined && { versionId: written.versionId }) };
  // In a folder being materialized nothing is expected anywhere, and the write's own
  // only-if-absent check refuses whatever is there (`taken`): reading first would only repeat it.
  const now: LocalRead = io.materializing && action.expectLocal === null ? { kind: 'absent' } : await io.folder.read(path);
  // An empty folder where the file goes (left by a remote delete) is no one's content: write()
  // removes it. Anything else that is not a file is left alone.
  if (now.kind === 'other' && now.code !== 'is_folder') return skipped(now.code, `not written: ${path} ${now.reason}`);
  // The file holds the store's content already (the agent wrote the very same bytes since the
  // scan, or at a memory's place during a re-download): both sides agree, nothing is written,
  // and the baseline takes it, so the agent's next edit is an edit, not a "both created" conflict.
  if (now.kind === 'file' && now.sha === sha) return { kind: 'done', sha, already: true };
  // The file changed after the scan: the planner has not seen this content, so it is not ours
  // to overwrite. The next pass plans with it.
  if (!stillAsPlanned(now, action.expectLocal)) return skipped('changed_during_sync', 'changed on disk during the sync; left for the next pass');
  // The loser of a conflict goes to the listeners (and the conflict copy) before it is replaced;
  // a loser that cannot be copied is not replaced (SPEC 6.6).
  if (isConflictResolution(action) && now.kind === 'file' && now.bytes) {
    const kept = await handOverLoser(io, { path, storeSha: sha, ...ids }, now.sha, now.bytes);
    if (kept) return kept;
  }
  // A loser the engine may not read (over the size limit, hard-linked) cannot be handed over nor
  // copied: it is kept, and the conflict waits until the file is one that can be (SPEC 6.6).
  if (isConflictResolution(action) && now.kind === 'file' && !now.bytes && io.events) {
    return skipped('conflict_loser_unread', `the local file is not read (${now.unpushable?.detail ?? 'not readable'}), so it cannot be handed over; it is kept and the store version not pulled`);
  }
  // Where nothing was, nothing may appear between the check and the write: a file the agent
  // made meanwhile is refused (`taken`), never written over.
  await io.folder.write(path, bytes, {
    onlyIfAbsent: action.expectLocal === null,
    ...(io.materializing && { firstDownload: true }),
    // What is replaced must still be the file just read: an edit since is the next pass's.
    ...(now.kind === 'file' && { ifStill: now.stat }),
  });
  io.events?.pulled({ path, sha, ...ids, reason: action.reason === 'conflict' || action.reason === 'restore' ? action.reason : 'remote_change' });
  return { kind: 'done', sha };
}

async function push(io: ApplyIO, action: Update | Create, learned: RemoteChange[]): Promise<Result> {
  const { path } = action;
  const content = await contentToPush(io, action);
  if (typeof content !== 'string') return content;
  // What is sent hashes to localSha: contentToPush returns only content the file held at that sha.
  await io.beforeSend?.(path, action.localSha);

  const { signal } = io;
  const create = () => storeCall(io.client.create(io.memoryStoreId, { path, content }, { signal }));
  let written: StoreMemory;
  if (action.type === 'update') {
    try {
      written = await storeCall(
        io.client.update(io.memoryStoreId, action.memoryId, { content, expected_content_sha256: action.expectedRemoteSha }, { signal }),
      );
    } catch (err) {
      if (asStoreError(err).kind !== 'not_found') throw err;
      if (await sentBeforeDeletion(io, action)) {
        // An earlier attempt of this very update landed (its answer was lost) and another writer
        // deleted the memory after it: the content was pushed, and the deletion is the store's
        // latest word. Nothing is re-created; the next pass follows the deletion on disk.
        learned.push({ kind: 'deleted', memoryId: action.memoryId });
        io.events?.pushed({ path, sha: action.localSha, memoryId: action.memoryId });
        return { kind: 'done', sha: action.localSha };
      }
      // Deleted in the store since the listing: the file is the only copy, so re-create it.
      learned.push({ kind: 'deleted', memoryId: action.memoryId, notFound: true });
      written = await create();
    }
  } else {
    written = await create();
  }
  learned.push({ kind: 'memory', memory: written });
  io.events?.pushed({ path, sha: action.localSha, ...idsOf(written) });
  // The baseline takes the sha we sent: if the store normalised the content, its listing then
  // differs from the baseline and the next pass pulls the store's version.
  return { kind: 'done', sha: action.localSha };
}

/**
 * Whether the memory an update met `not_found` for holds, in its history, this update's content
 * landed and then deleted (`sentThenDeleted`). Any doubt (no change feed, a failed read) is a
 * no: the file is then re-created, never dropped.
 */
async function sentBeforeDeletion(io: ApplyIO, action: Update): Promise<boolean> {
  const listVersions = io.client.listVersions?.bind(io.client);
  // A feed the session was refused is never asked again, for this no more than for a pass.
  if (!listVersions || io.feedUsable !== true) return false;
  try {
    const versions = await listAll(() => listVersions(io.memoryStoreId, { memoryId: action.memoryId, signal: io.signal }));
    return sentThenDeleted(versions, { sent: action.localSha, base: action.expectedRemoteSha });
  } catch {
    return false;
  }
}

/**
 * What a push sends: the content the plan was made from, only while the file still holds it.
 * The scan's own bytes when it kept them and an `lstat` now finds the very file it read, unwritten
 * since (same inode, size, mtime, ctime: any write moves ctime, and the agent cannot set it); else
 * the file is read again and must still hash to the planned sha. Either way what is sent is
 * content the file held at the scan, read through the confined folder; an edit after the check
 * is the next pass's change, as it always was after the read.
 */
async function contentToPush(io: ApplyIO, action: Update | Create): Promise<string | Result> {
  const { path } = action;
  const carried = io.carried?.get(path);
  if (carried?.sha === action.localSha) {
    const now = await io.folder.stat(path).catch((err: unknown) => {
      if (err instanceof FolderRefusal) return null;
      throw err;
    });
    if (unchangedSince(now, carried.stat)) return carried.content;
  }
  const now = await io.folder.read(path);
  // Changed since the scan: push nothing the planner did not decide on; the next pass will.
  if (now.kind !== 'file' || !now.bytes || now.sha !== action.localSha) {
    return skipped('changed_during_sync', 'changed on disk during the sync; left for the next pass');
  }
  const content = decodeUtf8(now.bytes);
  if (content === null) return skipped('not_utf8', 'is not UTF-8 text');
  return content;
}

/**
 * The losing side of a conflict, before the store's version replaces it: with `conflictCopies`
 * it is written beside the file (through the store folder, under a name that never syncs, never
 * over an entry already there), then every `conflict` listener gets its bytes. A copy that
 * cannot be written is a loser that cannot be kept: the answer is `conflict_copy_failed`, no
 * event is emitted, and the caller leaves the file as it is, so the next pass decides again
 * (SPEC 6.6). Null: handed over.
 */
async function handOverLoser(
  io: ApplyIO,
  winner: { path: string; storeSha: string; memoryId?: string; versionId?: string },
  localSha: string,
  bytes: Uint8Array,
): Promise<Result | null> {
  const { path } = winner;
  const events = io.events;
  if (!events) return null;
  let copyPath: string | null = null;
  if (events.conflictCopies) {
    const copy = conflictCopyPath(path, Date.now());
    try {
      await io.folder.write(copy, bytes, { onlyIfAbsent: true });
    } catch (err) {
      const why = err instanceof FolderRefusal ? err.code : (errorCode(err) ?? (err instanceof Error ? err.message : String(err)));
      return skipped('conflict_copy_failed', `the conflict copy ${copy} could not be written (${why}); the local file is kept and not replaced`);
    }
    copyPath = events.hostPath(copy);
    io.logger.info('conflict copy written: the local edit is kept beside the file, never synced', { path, copy });
  }
  events.conflict({ ...winner, localSha, localContent: bytes, copyPath });
  return null;
}

/**
 * A push-only flush (finalize; recovery has no listeners) pulls nothing, so a conflict is only
 * noted; its loser is still handed over, as a pull would before replacing it: every `conflict` listener gets the
 * file's bytes as they are now, read through the store folder, and with `conflictCopies` the copy
 * is written beside it. The file itself stays as it is. Nothing here moves the baseline or the
 * report (the note settles as a conflict either way); a copy that cannot be written is logged.
 */
export async function handOverNotedConflicts(io: ApplyIO, notes: readonly ReportAction[]): Promise<void> {
  if (!io.events) return;
  for (const note of notes) {
    if (note.type !== 'note_conflict' || io.signal.aborted) continue;
    try {
      const now = await io.folder.read(note.path);
      if (now.kind !== 'file' || !now.bytes) continue;
      const winner = {
        path: note.path,
        storeSha: note.storeSha,
        ...(note.memoryId !== undefined && { memoryId: note.memoryId }),
        ...(note.versionId !== undefined && { versionId: note.versionId }),
      };
      const kept = await handOverLoser(io, winner, now.sha, now.bytes);
      if (kept?.kind === 'skipped') io.logger.warn('conflict copy could not be written; the local file is kept', { path: note.path, detail: kept.detail });
    } catch (err) {
      io.logger.warn('conflict loser could not be read to hand over; the local file is kept', { path: note.path, error: err instanceof Error ? err.message : String(err) });
    }
  }
}

async function deleteLocal(io: ApplyIO, action: DeleteLocal, learned: RemoteChange[]): Promise<Result> {
  if (action.corroborate) {
    // Missing from one listing only (absence.ts): asked first, so that a memory the listing
    // missed is never taken for deleted. Only `not_found` confirms; any other failure is thrown
    // (a failed outcome: nothing deleted, the file kept), and the disk is re-checked after it.
    const found = await confirmedGone(io, action.corroborate.memoryId, learned);
    if (found) {
      const where = found.path === action.path ? 'the store still holds it' : `the store holds it at ${found.path} (renamed); the next pass follows it`;
      return skipped('absence_unconfirmed', `missing from the listing, but ${where}; not deleted`);
    }
  }
  const now = await io.folder.read(action.path);
  if (!stillAsPlanned(now, action.expectLocal)) {
    return skipped(now.kind === 'other' ? now.code : 'changed_during_sync', 'changed on disk during the sync; not deleted');
  }
  try {
    await io.folder.unlink(action.path);
  } catch (err) {
    if (err instanceof FolderRefusal) return skipped(err.code, `not deleted: ${err.message}`);
    throw err;
  }
  const memoryId = action.corroborate?.memoryId ?? action.memoryId;
  io.events?.deleted({ path: action.path, side: 'local', ...(memoryId !== undefined && { memoryId }) });
  return { kind: 'done' };
}

async function deleteRemote(io: ApplyIO, action: DeleteRemote, learned: RemoteChange[]): Promise<Result> {
  const { path } = action;
  // The fresh re-check of SPEC 4.3: still missing (nothing at all there) and the marker intact.
  // A refusal (a folder on the way swapped for a link) means the file's state is unknown: no delete.
  const there = await io.folder.stat(path).catch((err: unknown) => {
    if (err instanceof FolderRefusal) return err;
    throw err;
  });
  if (there instanceof FolderRefusal) return skipped(there.code, `not deleted remotely: ${there.message}`);
  if (there !== null) return skipped('reappeared', 'reappeared before its remote delete; not deleted');
  if ((await readMarker(io.folder, io.memoryStoreId)) !== 'ok') {
    return skipped('marker_check_failed', 'store marker failed its check; remote delete not sent');
  }
  if (action.mode === 'log_only') return { kind: 'done', sent: false };
  let notFound = false;
  try {
    await storeCall(io.client.delete(io.memoryStoreId, action.memoryId, { expected_content_sha256: action.expectedRemoteSha, signal: io.signal }));
  } catch (err) {
    // Already gone is what we wanted. A precondition failure means it changed in the store: it
    // is kept there and the next pass restores it to disk.
    if (asStoreError(err).kind !== 'not_found') throw err;
    notFound = true;
  }
  learned.push({ kind: 'deleted', memoryId: action.memoryId, ...(notFound && { notFound }) });
  io.events?.deleted({ path, side: 'remote', memoryId: action.memoryId });
  return { kind: 'done' };
}

/**
 * Asks the store for a memory one listing missed: `null` when it answers `not_found` (the absence
 * confirmed), else the memory as it holds it now. Either answer is learned for the remote view:
 * a memory found is in the view again, where it is (the next pass follows a rename), and a
 * deletion is known as one, corroborated by the listing and the answer together.
 */
async function confirmedGone(io: ApplyIO, memoryId: string, learned: RemoteChange[]): Promise<StoreMemory | null> {
  try {
    const memory = await storeCall(io.client.get(io.memoryStoreId, memoryId, { signal: io.signal }));
    learned.push({ kind: 'memory', memory, fetched: true });
    return memory;
  } catch (err) {
    if (asStoreError(err).kind !== 'not_found') throw err;
    learned.push({ kind: 'deleted', memoryId });
    return null;
  }
}

/** The local state a planner expected (`null`: absent) still holds. */
function stillAsPlanned(now: LocalRead, expected: string | null): boolean {
  if (expected === null) return now.kind === 'absent' || (now.kind === 'other' && now.code === 'is_folder');
  return now.kind === 'file' && now.sha === expected;
}

/**
 * A `rename_local` and, once the file has moved, its follow-up transfer at the new path (an edit
 * made on either side), which settles as a transfer of its own (`then`).
 */
async function renameLocalThen(io: ApplyIO, action: RenameLocal, learned: RemoteChange[]): Promise<Outcome> {
  const result = await renameLocal(io, action);
  const next = action.then;
  if (result.kind !== 'done' || !next || (next.type !== 'pull' && next.type !== 'update')) return { action, result, learned };
  const thenLearned: RemoteChange[] = [];
  let thenResult: Result;
  try {
    thenResult = await perform(io, next, thenLearned);
  } catch (err) {
    thenResult = failure(io, err);
  }
  return { action, result, learned, then: { action: next, result: thenResult, learned: thenLearned } };
}

/** Follows the store's rename on disk: the file moves (`StoreFolder.move`), nothing is transferred. */
async function renameLocal(io: ApplyIO, action: RenameLocal): Promise<Result> {
  const { from, path } = action;
  if (action.alreadyMoved) {
    // Moved alike on both sides: the file must still be at `path` and gone from `from`.
    const there = await io.folder.read(path);
    const back = await io.folder.stat(from).catch((err: unknown) => {
      if (err instanceof FolderRefusal) return err;
      throw err;
    });
    if (there.kind !== 'file' || there.sha !== action.expectLocal || back !== null) {
      return skipped('changed_during_sync', 'changed on disk during the sync; left for the next pass');
    }
    renamedLocally(io, action);
    return { kind: 'done', sha: action.baseSha };
  }
  const now = await io.folder.read(from);
  if (now.kind !== 'file' || now.sha !== action.expectLocal) return skipped('changed_during_sync', 'changed on disk during the sync; left for the next pass');
  try {
    await io.folder.move(from, path, now.stat);
  } catch (err) {
    if (err instanceof FolderRefusal) return skipped(err.code, `not moved from ${from}: ${err.message}`);
    throw err;
  }
  renamedLocally(io, action);
  return { kind: 'done', sha: action.baseSha };
}

/** The `renamed` event of a rename followed on disk: the file holds the baseline's content at its new path. */
function renamedLocally(io: ApplyIO, action: RenameLocal): void {
  io.events?.renamed({
    path: action.path,
    from: action.from,
    side: 'local',
    sha: action.baseSha,
    memoryId: action.memoryId,
    ...(action.versionId !== undefined && { versionId: action.versionId }),
  });
}

/**
 * Follows the agent's rename in the store: the memory's path is updated (same id, same history),
 * guarded by the content both paths hold. Any failure leaves the baseline as it was, so the next
 * pass judges both paths again: a memory that changed or went meanwhile no longer reads as a
 * rename, and the rows (restore, create) lose nothing.
 */
async function renameRemote(io: ApplyIO, action: RenameRemote, learned: RemoteChange[]): Promise<Result> {
  const { from, path, sha } = action;
  const now = await io.folder.read(path);
  if (now.kind !== 'file' || now.sha !== sha) return skipped('changed_during_sync', 'changed on disk during the sync; left for the next pass');
  const back = await io.folder.stat(from).catch((err: unknown) => {
    if (err instanceof FolderRefusal) return err;
    throw err;
  });
  if (back !== null) return skipped('reappeared', 'reappeared before its memory was renamed; left for the next pass');
  let written: StoreMemory;
  try {
    written = await storeCall(io.client.update(io.memoryStoreId, action.memoryId, { path, expected_content_sha256: sha }, { signal: io.signal }));
  } catch (err) {
    if (asStoreError(err).kind === 'not_found') learned.push({ kind: 'deleted', memoryId: action.memoryId });
    throw err;
  }
  learned.push({ kind: 'memory', memory: written });
  io.events?.renamed({ path, from, side: 'remote', sha, ...idsOf(written) });
  return { kind: 'done', sha };
}

/** The memory and version a write's answer named, for its event (a version only when the client returned one). */
function idsOf(written: StoreMemory): { memoryId: string; versionId?: string } {
  return { memoryId: written.id, ...(typeof written.memory_version_id === 'string' && { versionId: written.memory_version_id }) };
}

function failure(io: ApplyIO, err: unknown): Result {
  const cutOff = io.signal.aborted;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof StoreError) return { kind: 'failed', error: err.kind, message, cutOff, cause: err };
  return { kind: 'failed', error: 'filesystem', message, cutOff, cause: err };
}
