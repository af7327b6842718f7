import { posix } from 'node:path';
import { isTempFileName, MARKER_FILE } from '@memory-mounter/core';
import type { Access, DeletionMode, FinalizeReport, RecoveredStoreReport, RecoveryReport, StoreSyncReport, SyncReport } from '@memory-mounter/core';
import type { EntryKind, Tree } from './host-disk.js';
import type { OutgoingRequest } from './observed-store-client.js';
import { blockedEntries, conflictCopies, describeTreeDiff, hasEntries, markerIntact, memoryFiles, sameTree, sha256 } from './tree.js';

/**
 * The reference model of the reliability tests, and the invariants it checks.
 *
 * The model does not re-implement the planner. It records what the *agent* did (from tree
 * diffs around each agent action) and what the engine *sent* (every request, before the store
 * applies it), and holds the engine to these promises:
 *
 *  I1 no remote delete unless SPEC 4.3 held when it was sent: mode `enabled`, read_write store,
 *     not a push-only flush, the file missing at send time for at least the grace period (waived
 *     by finalize('completed')), the marker intact, a precondition sent, no more deletes in the
 *     pass than the cap allows, and the content deleted is one the folder held at that path;
 *     a pass that finds every memory file gone while two or more were in sync sends none (4.4);
 *  I2 no acknowledged local write lost unless a named report entry says so: every content the
 *     agent wrote, and did not itself overwrite or remove, is on disk or in the store after every
 *     step, unless a later pass reported the path in `conflicts` (store wins) — or finalize
 *     named it in `unpushed`, with a reason, before removing the folder, and its warning named
 *     the path too (SPEC 6.2). A conflict counts only if it is real (every reported one is
 *     judged): the other writer wrote that path since the last pass that ended with it in sync,
 *     and the store does not hold there content only the engine itself ever sent (its own
 *     earlier push taken for a remote edit would overwrite the agent's later write in the
 *     store's name); with conflictCopies, a loser a pull replaced is in a conflict copy;
 *  I3 nothing outside the mounts read or written (checked by the Case: canary, uploads, paths);
 *  I4 the marker and temp files never uploaded; an upload holds only content the folder held
 *     at that memory's path (or at a path the memory had before the store renamed it);
 *  I5 read-only stores never receive create, update or delete;
 *  I6 a folder is distrusted only after its marker was damaged, and a distrusted folder is left
 *     exactly as found (finalize removes it only when it is empty); a re-download happens only when the folder is gone, emptied, or wiped
 *     (no file the baseline knows is left);
 *  I7 after quiescence a read_write store and its folder hold the same files, every difference
 *     being reported (refused, skipped, pending deletion); a read-only folder differs only by
 *     the agent's own edits (reported refused) and deletions;
 *  I8 an unforced reconcile runs exactly when memory_sync_interval has passed;
 *  I9 a memory is renamed (an update of its path) only with a precondition, never onto the
 *     marker or a temp file's name, and only to a path where the folder held the content the
 *     memory holds: the store follows the agent's rename, it never invents one;
 *  I10 a file is deleted locally only where its memory really left that path in the store
 *     (deleted, renamed away, or answered not_found) since its last sync: an absence from one
 *     listing is no deletion (SPEC 6.6);
 *  I11 with deletions log_only or disabled, no update moves a memory's path (SPEC 6.6);
 *  T1 (checked by the Case, on the wall clock) reconcile and materialize return within
 *     `syncTimeout` + 1.5 s, finalize and recover within `finalSyncTimeout` + 2 s, whatever the
 *     store does; a bound met is a legal outcome, judged by the other invariants;
 *  R1 after finalize, stateDir holds a state record for exactly the folders left in place;
 *  R2 after a crash (SIGKILL, between steps or at a request of a pass), `MemoryMounter.recover`:
 *     sends no delete and nothing to a read-only store; removes a folder only when every agent
 *     write in it that reached the disk before the kill is in the store or lost a real conflict
 *     it reports; leaves any other folder exactly as it was, saying why (its marker damaged, or
 *     `unpushed` naming every write it could not push); and once faults are over and the
 *     operator removed what it could not vouch for, the next worker materializes at the same
 *     paths (0 refused restarts) with no state record left behind.
 */
export type StoreKey = 'rw' | 'ro';

export interface StoreSpec {
  key: StoreKey;
  id: string;
  access: Access;
  mountPath: string;
  /** Host path of the store folder. */
  root: string;
}

export interface OracleSettings {
  deletionMode: DeletionMode;
  graceMs: number;
  syncIntervalMs: number;
  /** Text only the canary files outside the mounts hold. */
  canaryText: string;
  /** The mounter writes the loser of each conflict beside the file (`conflictCopies: true`). */
  conflictCopies?: boolean;
}

/** What the oracle may look at in the world. */
export interface OracleView {
  now(): number;
  kindOf(path: string): EntryKind | null;
  readFile(path: string): Uint8Array | null;
  storeShas(storeId: string): Map<string, string>;
}

/**
 * Deletes one pass may send (SPEC 4.3): clamp(floor(baseline size / 4), 8, 50). The model does
 * not know the baseline, but the baseline only holds paths the folder has held, so the number of
 * such paths bounds it from above (and so the cap).
 */
export function deleteCapAtMost(pathsEverHeld: number): number {
  return Math.min(50, Math.max(8, Math.floor(pathsEverHeld / 4)));
}

export interface PendingWrite {
  sha: string;
  /** Agent action number: a conflict settles the write only if the pass began after it. */
  seq: number;
}

/** The model of one store and its folder. */
export class StoreModel {
  /** Agent writes not yet seen in the store nor reported lost to a conflict (read_write only). */
  readonly pending = new Map<string, PendingWrite>();
  /** path -> clock (ms) when the file went missing; forgotten once a scan sees it again. */
  readonly missingSince = new Map<string, number>();
  /** path -> every sha the folder has held at that path. */
  readonly seen = new Map<string, Set<string>>();
  /** path -> every sha the other writer put at that path (a write, a copy, a rename onto it). */
  readonly remoteAuthored = new Map<string, Set<string>>();
  /** path -> every sha the engine sent to that path (create or update). */
  readonly enginePushed = new Map<string, Set<string>>();
  /**
   * Paths the other writer wrote (content changed, a memory arrived or left) since the
   * last pass that ended with the path in sync: a conflict anywhere else is a false one (I2).
   */
  readonly remoteWroteSinceSync = new Set<string>();
  /**
   * Paths whose memory left them (the other writer deleted or renamed it away, or the store
   * answered `not_found` for it) since the last pass that ended with the path in sync: a local
   * deletion anywhere else was not corroborated by the store (I10).
   */
  readonly remoteRemovedSinceSync = new Set<string>();
  /**
   * path of an agent write -> the path of the memory the engine sent it to when that memory had
   * been renamed in the store (the edit follows the memory): the write is saved once it is there.
   */
  readonly sentToRenamed = new Map<string, string>();
  /** Paths the agent deleted in a read-only folder (the engine leaves them gone). */
  readonly agentDeleted = new Set<string>();
  /** Paths whose file matched the store right after the last pass that ran the table. */
  syncedAtLastPass = new Set<string>();
  /** path -> the content both sides held right after that pass (what the engine's baseline holds). */
  syncedShas = new Map<string, string>();
  markerTouched = false;
  /** Paths a disk fault made unopenable at some point of the case (`unreadable(...)`). */
  readonly madeUnreadable = new Set<string>();
  distrusted = false;

  constructor(readonly spec: StoreSpec) {}

  see(path: string, sha: string): void {
    addTo(this.seen, path, sha);
  }
}

function addTo(map: Map<string, Set<string>>, path: string, sha: string): void {
  let shas = map.get(path);
  if (!shas) map.set(path, (shas = new Set()));
  shas.add(sha);
}

type Phase = 'idle' | 'reconcile' | 'finalize_completed' | 'finalize_aborted' | 'recover';

interface ScanTime {
  tree: Tree;
  rootKind: EntryKind | null;
  markerOk: boolean;
  /** missingSince entries taken out because the scan is about to see the file. */
  cleared: Map<string, number>;
}

export class Oracle {
  readonly violations: string[] = [];
  readonly stores: StoreModel[];
  finalized = false;
  /** The worker was killed and no new one has started yet. */
  crashed = false;
  /** Each folder as it was when the running recover began. */
  #atRecover = new Map<StoreKey, Tree>();
  #seq = 0;
  #phase: Phase = 'idle';
  #passStartSeq = 0;
  /** store id -> the memories a delete was sent for in this pass (a retried delete is one delete). */
  #deletesThisPass = new Map<string, Set<string>>();
  #atScan = new Map<StoreKey, ScanTime>();
  #lastSyncAt: number;

  constructor(
    private readonly view: OracleView,
    specs: StoreSpec[],
    private readonly settings: OracleSettings,
  ) {
    this.stores = specs.map((spec) => new StoreModel(spec));
    this.#lastSyncAt = view.now();
  }

  store(key: StoreKey): StoreModel {
    return this.stores.find((s) => s.spec.key === key)!;
  }

  violate(message: string): void {
    this.violations.push(message);
  }

  // --- Materialize -----------------------------------------------------------------------------

  afterMaterialize(trees: Map<StoreKey, Tree>): void {
    this.#lastSyncAt = this.view.now();
    for (const store of this.stores) {
      const files = memoryFiles(trees.get(store.spec.key)!);
      const remote = this.view.storeShas(store.spec.id);
      for (const [path, sha] of files) store.see(path, sha);
      store.syncedShas = new Map([...files].filter(([path, sha]) => remote.get(path) === sha));
      store.syncedAtLastPass = new Set(store.syncedShas.keys());
      store.remoteWroteSinceSync.clear();
      store.remoteRemovedSinceSync.clear();
    }
  }

  // --- The agent -------------------------------------------------------------------------------

  /**
   * Records what an agent action changed. `only` limits the diff to one path: an action taken
   * while a pass is running looks at its own path only, since the engine may be writing others.
   */
  noteAgentChange(key: StoreKey, before: Tree, after: Tree, only?: string): void {
    const store = this.store(key);
    const was = memoryFiles(before);
    const now = memoryFiles(after);
    const paths = only ? [only] : [...new Set([...was.keys(), ...now.keys()])];
    const seq = ++this.#seq;
    for (const path of paths) {
      const b = was.get(path);
      const a = now.get(path);
      if (a !== undefined && a !== b) {
        store.see(path, a);
        store.agentDeleted.delete(path);
        // Content put back exactly as it was in sync (a folder renamed away and back) is no new
        // write: the engine sees the file unchanged, and a remote delete or edit rightly wins.
        const restored = store.syncedShas.get(path) === a;
        if (restored) store.pending.delete(path);
        else if (store.spec.access === 'read_write') store.pending.set(path, { sha: a, seq });
      }
      if (b !== undefined && a === undefined) {
        store.pending.delete(path);
        store.agentDeleted.add(path);
        if (!store.missingSince.has(path)) store.missingSince.set(path, this.view.now());
      }
    }
    const marker = `/${MARKER_FILE}`;
    const markerBefore = before.get(marker);
    const markerAfter = after.get(marker);
    if (markerBefore?.sha !== markerAfter?.sha || markerBefore?.kind !== markerAfter?.kind) store.markerTouched = true;
  }

  // --- The other writer ------------------------------------------------------------------------

  /** Records what the other writer changed in a store (from snapshots around its action). */
  noteRemoteChange(key: StoreKey, before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): void {
    const store = this.store(key);
    // What the store held just before the other writer acted was in the store: a write of the
    // agent's among it reached the store, and the other writer then replacing it is the service's
    // last writer winning, not a loss of the engine's. Between steps `afterStep` settles this; an
    // act timed inside a step (a listing that skips an entry, a read the other writer races) may
    // come after a write of that same step landed, as the repeats of a final pass read after
    // their writes.
    this.settleSaved(store, before);
    for (const [path, sha] of after) {
      if (before.get(path) === sha) continue;
      addTo(store.remoteAuthored, path, sha);
      store.remoteWroteSinceSync.add(path);
    }
    for (const path of before.keys()) {
      if (after.has(path)) continue;
      store.remoteRemovedSinceSync.add(path);
      // A memory renamed away (and edited) is a change at its old path too: a push-only flush
      // names the conflict there.
      store.remoteWroteSinceSync.add(path);
    }
  }

  /** The store said the memory at `path` is gone (a spurious `not_found`): its word corroborates an absence. */
  /** A disk fault makes `path` of the store's folder unopenable (for some opens, or until drained). */
  /**
   * A trusted read-write folder finalize may keep (SPEC 6.6: never removed unread): its report
   * names, as unreadable, only paths a disk fault really made unopenable in this case.
   */
  private keptUnread(store: StoreModel, left: FinalizeReport['leftInPlace'][number], report: FinalizeReport): boolean {
    if (left.code !== 'unreadable_kept' || store.spec.access !== 'read_write') return false;
    const named = report.unpushed.filter((u) => u.memoryStoreId === store.spec.id && (u.code === 'unreadable' || u.code === 'folder_unreadable'));
    return named.length > 0 && named.every((u) => u.code === 'folder_unreadable' || store.madeUnreadable.has(u.path));
  }

  noteUnreadable(key: StoreKey, path: string): void {
    this.stores.find((s) => s.spec.key === key)!.madeUnreadable.add(path);
  }

  noteRemoteAbsence(key: StoreKey, path: string): void {
    this.store(key).remoteRemovedSinceSync.add(path);
  }

  // --- Requests, judged as they are sent ------------------------------------------------------

  checkRequest(request: OutgoingRequest): void {
    const store = this.stores.find((s) => s.spec.id === request.storeId);
    if (!store || request.op === 'list' || request.op === 'get' || request.op === 'listVersions') return;
    if (this.#phase === 'recover' && request.op === 'delete') this.violate(`R2: recover sent a delete of ${request.path ?? request.memoryId} to ${store.spec.id}`);
    if (store.spec.access === 'read_only') {
      this.violate(`I5: ${request.op} of ${request.path ?? request.memoryId} sent to the read-only store ${store.spec.id}`);
    }
    if (request.op === 'delete') this.checkDelete(store, request);
    else this.checkUpload(store, request);
  }

  private checkUpload(store: StoreModel, request: OutgoingRequest): void {
    const path = request.path ?? '(unknown memory)';
    const segments = path.split('/');
    if (path === `/${MARKER_FILE}` || isTempFileName(segments.at(-1) ?? '')) {
      this.violate(`I4: ${request.op} of ${path}: the marker or a temp file was uploaded`);
    }
    if (request.newPath !== undefined) this.checkRename(store, request, request.newPath);
    if (request.content === undefined) return;
    if (request.path !== undefined) addTo(store.enginePushed, request.path, sha256(request.content));
    if (request.content.includes(this.settings.canaryText)) this.violate(`I3: ${request.op} of ${path} carries the canary text`);
    // An update of a memory the store no longer has (deleted since the engine's view of it, which
    // a feed read that lags keeps a little longer): it fails not_found and uploads nothing.
    if (request.path === undefined) return;
    // By id, an update lands where the memory is now; the engine meant the path it last knew,
    // which the other writer may have renamed since (no API precondition pins the path).
    const sha = sha256(request.content);
    // The folder holding it there right now counts too: the engine itself may have moved the
    // file there during this pass (following a rename in the store) before pushing its edit.
    // So does a path the memory had before the store renamed it: a flush moves nothing on disk,
    // and sends the edit made at the old path to the memory where it now is.
    const heldAtFormerPath = (request.formerPaths ?? []).some((p) => store.seen.get(p)?.has(sha));
    for (const former of request.formerPaths ?? []) {
      if (former !== path && store.pending.get(former)?.sha === sha) store.sentToRenamed.set(former, path);
    }
    if (!store.seen.get(path)?.has(sha) && !heldAtFormerPath && !this.holdsNow(store, path, sha)) {
      this.violate(`I4: ${request.op} of ${path} uploads content the folder never held at that path`);
    }
  }

  /**
   * I9: a memory is renamed only to follow the agent's own rename: with a precondition, to a
   * path that is no marker or temp file, where the folder held exactly the content the memory
   * holds (so the memory keeps its content and only its path follows the file).
   */
  private checkRename(store: StoreModel, request: OutgoingRequest, to: string): void {
    const where = `I9: rename of ${request.path ?? request.memoryId} to ${to} in ${store.spec.id}`;
    if (to === `/${MARKER_FILE}` || isTempFileName(to.split('/').at(-1) ?? '')) this.violate(`${where}: the marker or a temp file's name`);
    if (request.content !== undefined) this.violate(`${where} carries content too`);
    if (request.expectedSha === undefined) return this.violate(`${where} without expected_content_sha256`);
    // SPEC 6.6: with deletions log_only or disabled a local move creates the memory at its new
    // path and leaves the old one; no path leaves the store because of the agent. (Not judged in
    // recover: it is not given the session's deletion mode.)
    if (this.settings.deletionMode !== 'enabled' && this.#phase !== 'recover') this.violate(`I11: ${where} with memory_sync_deletions=${this.settings.deletionMode}: the old path leaves the store`);
    if (!store.seen.get(to)?.has(request.expectedSha)) this.violate(`${where}: the folder never held the memory's content at the new path`);
  }

  /** The folder holds `sha` at `path` at this moment (read now, not through a link on the way). */
  private holdsNow(store: StoreModel, path: string, sha: string): boolean {
    const folders = path.split('/').slice(1, -1);
    const root = store.spec.root;
    if (folders.some((_, i) => this.view.kindOf(posix.join(root, ...folders.slice(0, i + 1))) !== 'directory')) return false;
    if (this.view.kindOf(posix.join(root, path)) !== 'file') return false;
    const bytes = this.view.readFile(posix.join(root, path));
    if (bytes === null || sha256(bytes) !== sha) return false;
    store.see(path, sha);
    return true;
  }

  private checkDelete(store: StoreModel, request: OutgoingRequest): void {
    const { spec } = store;
    const path = request.path;
    if (path === undefined) return; // an id the store no longer has: nothing can be deleted
    const where = `I1: delete of ${path} in ${spec.id}`;
    if (this.settings.deletionMode !== 'enabled') this.violate(`${where} with memory_sync_deletions=${this.settings.deletionMode}`);
    if (this.#phase === 'finalize_aborted') this.violate(`${where} during finalize('aborted') (push-only)`);
    if (request.expectedSha === undefined) this.violate(`${where} without expected_content_sha256`);
    let sent = this.#deletesThisPass.get(spec.id);
    if (!sent) this.#deletesThisPass.set(spec.id, (sent = new Set()));
    // A retry of a delete this pass already sent (its first attempt answered `unavailable`) is
    // the same send: the re-check that counts is the one before the first attempt, which may
    // have been applied already. The agent may act while it is in flight.
    const retry = sent.has(request.memoryId ?? path);
    const host = posix.join(spec.root, path);
    const there = this.view.kindOf(host);
    if (there !== null && !retry) this.violate(`${where} while a ${there} is at ${host}`);
    if (!retry && !markerIntact(this.view.readFile(posix.join(spec.root, MARKER_FILE)), spec.id)) this.violate(`${where} with the marker not intact`);
    const since = store.missingSince.get(path);
    const graceMs = this.#phase === 'finalize_completed' ? 0 : this.settings.graceMs;
    if (since === undefined && !retry) this.violate(`${where}: the file never went missing since the last scan that saw it`);
    else if (since !== undefined && this.view.now() - since < graceMs) {
      this.violate(`${where} after ${this.view.now() - since} ms missing; the grace period is ${graceMs} ms`);
    }
    sent.add(request.memoryId ?? path);
    const count = sent.size;
    const cap = deleteCapAtMost(store.seen.size);
    if (count > cap) this.violate(`${where}: delete number ${count} in one pass; the cap is at most ${cap}`);
    const applies = request.previousContent !== undefined && request.expectedSha === sha256(request.previousContent);
    // The content may have been held at a path the memory had before the store renamed it (the
    // engine then moved the file, and the agent may have edited it before deleting it).
    const heldBefore = (request.formerPaths ?? []).some((p) => store.seen.get(p)?.has(request.expectedSha!));
    if (applies && !store.seen.get(path)?.has(request.expectedSha!) && !heldBefore) {
      this.violate(`${where} removes content the folder never held at that path`);
    }
  }

  // --- Passes ----------------------------------------------------------------------------------

  /** Before reconcile or finalize: what the scan is about to see. */
  beginPass(kind: Exclude<Phase, 'idle'>, trees: Map<StoreKey, Tree>): void {
    this.#phase = kind;
    this.#passStartSeq = this.#seq;
    this.#deletesThisPass.clear();
    this.#atScan.clear();
    for (const store of this.stores) {
      const tree = trees.get(store.spec.key)!;
      const cleared = new Map<string, number>();
      // A file the scan sees leaves the candidate list (SPEC 4.3): its absence restarts later.
      for (const path of memoryFiles(tree).keys()) {
        const since = store.missingSince.get(path);
        if (since === undefined) continue;
        cleared.set(path, since);
        store.missingSince.delete(path);
      }
      this.#atScan.set(store.spec.key, {
        tree,
        rootKind: this.view.kindOf(store.spec.root),
        markerOk: markerIntact(this.view.readFile(posix.join(store.spec.root, MARKER_FILE)), store.spec.id),
        cleared,
      });
    }
  }

  endReconcile(report: SyncReport | null, forced: boolean, trees: Map<StoreKey, Tree>): void {
    const now = this.view.now();
    if (!forced) {
      const due = now - this.#lastSyncAt >= this.settings.syncIntervalMs;
      if (due !== (report !== null)) {
        this.violate(`I8: unforced reconcile ${report ? 'ran' : 'was skipped'} ${now - this.#lastSyncAt} ms after the last sync`);
      }
    }
    if (report) this.#lastSyncAt = Date.parse(report.startedAt);
    for (const store of this.stores) {
      const r = report?.stores.find((s) => s.memoryStoreId === store.spec.id);
      this.settlePass(store, r, trees.get(store.spec.key)!);
    }
    this.#phase = 'idle';
  }

  /**
   * After finalize. `warnings` are the fields of the "local changes not pushed" warnings it
   * logged: each must name every path `report.unpushed` names for its store.
   */
  endFinalize(report: FinalizeReport, trees: Map<StoreKey, Tree>, warnings: readonly Record<string, unknown>[] = []): void {
    for (const u of report.unpushed) {
      if (!u.reason) this.violate(`I2: finalize's unpushed entry for ${u.path} in ${u.memoryStoreId} gives no reason`);
    }
    for (const id of new Set(report.unpushed.map((u) => u.memoryStoreId))) {
      const warned = warnings.filter((w) => w.memory_store_id === id).flatMap((w) => (Array.isArray(w.paths) ? (w.paths as unknown[]) : []));
      for (const u of report.unpushed.filter((x) => x.memoryStoreId === id)) {
        if (!warned.includes(u.path)) this.violate(`I2: finalize's warning does not name ${u.path} of ${id}, which report.unpushed names`);
      }
    }
    for (const store of this.stores) {
      const { spec } = store;
      const sync = report.sync?.stores.find((s) => s.memoryStoreId === spec.id);
      const flush = report.flush.stores.find((s) => s.memoryStoreId === spec.id);
      const atScan = this.#atScan.get(spec.key)!;
      this.settlePass(store, sync ?? flush, trees.get(spec.key)!, { finalize: true });
      // The flush after a final sync: its conflicts must be real too.
      if (sync) for (const path of flush?.conflicts ?? []) if (!sync.conflicts.includes(path)) this.realConflict(store, path);
      const left = report.leftInPlace.find((l) => l.path === spec.root);
      if (this.view.kindOf(spec.root) !== null) {
        if (!left) this.violate(`finalize: ${spec.root} neither removed nor reported left in place`);
        else if (!store.distrusted && !store.markerTouched && !this.keptUnread(store, left, report)) {
          this.violate(`finalize: ${spec.root} left in place (${left.reason}) though trusted`);
        }
        continue;
      }
      // An empty folder is provably the one made here, whatever its marker says (issue 13 bug 6).
      if (store.distrusted && atScan.rootKind !== null && atScan.tree.size > 0) {
        this.violate(`I6: finalize removed ${spec.root}, a folder it did not trust, with entries in it`);
      }
      // The folder is gone: every agent write must be in the store or named by the report.
      this.settleSaved(store);
      // Named in `unpushed` (SPEC 6.2: every path, with its reason), or a conflict the store won.
      for (const [path] of store.pending) {
        const unpushed = report.unpushed.some((u) => u.memoryStoreId === spec.id && u.path === path);
        const conflict = [sync, flush].some((r) => r?.conflicts.includes(path)) && this.realConflict(store, path);
        if (!unpushed && !conflict) this.violate(`I2: finalize removed ${spec.root} with the agent's write to ${path} neither pushed nor in report.unpushed`);
      }
      store.pending.clear();
    }
    this.finalized = true;
    this.#phase = 'idle';
  }

  /** What one pass over one store tells the model; `r` is undefined when the pass was skipped. */
  private settlePass(store: StoreModel, r: StoreSyncReport | undefined, after: Tree, opts: { finalize?: boolean } = {}): void {
    const { spec } = store;
    const atScan = this.#atScan.get(spec.key)!;
    const scanRan = r !== undefined && (r.status === 'synced' || r.status === 'redownloaded' || r.status === 'failed');
    if (!scanRan) {
      for (const [path, since] of atScan.cleared) if (!store.missingSince.has(path)) store.missingSince.set(path, since);
    }
    if (!r) return;

    const notTrusted = r.status === 'skipped' && r.code === 'distrusted';
    if (notTrusted && !store.distrusted) {
      if (!store.markerTouched && atScan.rootKind === 'directory') this.violate(`I6: ${spec.id} distrusted though its marker was never touched (${r.reason})`);
      store.distrusted = true;
    }
    if (store.distrusted && !opts.finalize && !sameTree(atScan.tree, after)) {
      this.violate(`I6: the distrusted folder ${spec.root} was changed: ${describeTreeDiff(atScan.tree, after)}`);
    }
    if (store.distrusted && opts.finalize && this.view.kindOf(spec.root) !== null && !sameTree(atScan.tree, after)) {
      this.violate(`I6: finalize changed the distrusted folder ${spec.root}: ${describeTreeDiff(atScan.tree, after)}`);
    }

    if (r.status === 'redownloaded') {
      // Gone, emptied (no marker, no entries), or wiped: no file the baseline knows is left.
      // Files in sync after the last pass are in the baseline, so none of them may be present.
      const present = memoryFiles(atScan.tree);
      const legit =
        atScan.rootKind === null ||
        (!atScan.markerOk && !hasEntries(atScan.tree)) ||
        (atScan.markerOk && ![...store.syncedAtLastPass].some((path) => present.has(path)));
      if (!legit) this.violate(`I6: ${spec.id} re-downloaded though its folder held files (${r.reason})`);
      store.markerTouched = false;
    }
    const deletes = this.#deletesThisPass.get(spec.id)?.size ?? 0;
    if (memoryFiles(atScan.tree).size === 0 && store.syncedAtLastPass.size >= 2 && deletes > 0) {
      this.violate(`I1: ${deletes} remote deletes from a pass that found every memory file of ${spec.id} gone (a wipe, SPEC 4.4)`);
    }
    // The engine followed the store's rename on disk: a write not yet in the store moved with
    // its file, and is judged at its new path from now on.
    for (const { from, to, side } of r.renamed) {
      const write = store.pending.get(from);
      if (side !== 'local' || !write) continue;
      store.pending.delete(from);
      if (!store.pending.has(to)) store.pending.set(to, write);
      store.see(to, write.sha);
    }
    // Store wins: a conflict reported by a pass that began after the write accounts for it.
    // Every conflict must be real, whether or not the model knows of a write there.
    const copies = new Set(conflictCopies(after).values());
    for (const path of r.conflicts) {
      const real = this.realConflict(store, path);
      const write = store.pending.get(path);
      if (!write || write.seq > this.#passStartSeq || !real) continue;
      store.pending.delete(path);
      // With conflictCopies, a loser the pull replaced is beside the file (SPEC 6.6: a conflict
      // whose loser cannot be copied is not resolved that pass). A folder finalize removed takes
      // its copies with it; a push-only flush replaces nothing.
      const replaced = memoryFiles(after).get(path) !== write.sha && this.view.kindOf(spec.root) !== null;
      if (this.settings.conflictCopies && replaced && !copies.has(write.sha)) {
        this.violate(`I2: the conflict at ${path} in ${spec.id} replaced the agent's write, and no conflict copy holds it (conflictCopies is on)`);
      }
    }
    // I10: a local deletion only where the store's absence is corroborated (SPEC 6.6): the memory
    // really left that path (deleted, renamed away, or the store said not_found) since its last sync.
    for (const path of r.deletedLocal) {
      if (!store.remoteRemovedSinceSync.has(path)) {
        this.violate(`I10: ${path} in ${spec.id} was deleted locally, though its memory never left that path in the store (an absence not corroborated)`);
      }
    }
    if (r.status === 'synced' || r.status === 'redownloaded') {
      // In sync and so in the baseline, except a write whose outcome the engine does not know
      // yet (an error was reported for it): that one settles at the next listing.
      const remote = this.view.storeShas(spec.id);
      const unsure = new Set(r.errors.map((e) => e.path));
      store.syncedShas = new Map([...memoryFiles(after)].filter(([path, sha]) => remote.get(path) === sha && !unsure.has(path)));
      store.syncedAtLastPass = new Set(store.syncedShas.keys());
      for (const path of store.syncedShas.keys()) {
        store.remoteWroteSinceSync.delete(path);
        store.remoteRemovedSinceSync.delete(path);
      }
    }
  }

  // --- Crash recovery --------------------------------------------------------------------------

  beginRecover(trees: Map<StoreKey, Tree>): void {
    this.#phase = 'recover';
    this.#deletesThisPass.clear();
    this.#atRecover = new Map(trees);
  }

  endRecover(report: RecoveryReport, trees: Map<StoreKey, Tree>): void {
    for (const u of report.unvouched) this.violate(`R2: recover found ${u.path} (${u.type}) that no record vouches for`);
    for (const u of report.unreadableRecords) this.violate(`R2: recover could not read the state record ${u.file}: ${u.reason}`);
    for (const store of this.stores) {
      const { spec } = store;
      const before = this.#atRecover.get(spec.key)!;
      const entry = report.stores.find((s) => s.path === spec.root);
      const where = `R2: recover, ${spec.root}`;
      if (!entry) {
        if (this.view.kindOf(spec.root) !== null) this.violate(`${where}: not reported, though the folder is there`);
        continue;
      }
      if (entry.memoryStoreId !== spec.id) this.violate(`${where}: reported as store ${entry.memoryStoreId}`);
      this.settleSaved(store);
      for (const path of entry.conflicts) if (!store.pending.has(path)) this.realConflict(store, path);
      if (entry.outcome === 'left') {
        const code = entry.left?.code;
        const after = trees.get(spec.key)!;
        if (!sameTree(before, after)) this.violate(`${where}: left (${code}) but changed: ${describeTreeDiff(before, after)}`);
        const markerOk = markerIntact(this.view.readFile(posix.join(spec.root, MARKER_FILE)), spec.id);
        if (code === 'marker_mismatch' && markerOk) this.violate(`${where}: left for its marker, which is intact (${entry.left?.reason})`);
        if (code === 'unpushed' && entry.unpushed.length === 0 && !report.timedOut && entry.sync?.status !== 'failed') {
          this.violate(`${where}: left as unpushed, naming nothing (${entry.left?.reason})`);
        }
        if (code !== 'marker_mismatch' && code !== 'unpushed') this.violate(`${where}: left for an unexpected reason: ${code} ${entry.left?.reason}`);
        continue;
      }
      if (this.view.kindOf(spec.root) !== null) this.violate(`${where}: reported ${entry.outcome}, but the folder is still there`);
      if (entry.outcome === 'gone' && before.size > 0) this.violate(`${where}: reported gone, but it held ${before.size} entries`);
      // Recovered (or gone): every agent write from before the kill is in the store, or lost a
      // real conflict the report names.
      for (const [path] of store.pending) {
        const conflict = entry.conflicts.includes(path) && this.realConflict(store, path);
        const unpushed = entry.unpushed.some((u) => u.path === path);
        if (!conflict && !unpushed) this.violate(`${where}: removed with the agent's write to ${path} neither in the store nor named by the report`);
      }
      store.pending.clear();
    }
    this.#phase = 'idle';
  }

  /**
   * The operator removes a folder recover left, having read its entry: every agent write still
   * in it must be named there (unpushed, or a real conflict), unless recover could not vouch for
   * the folder at all (its marker damaged): then nothing in it was the engine's to name.
   */
  operatorRemoves(entry: RecoveredStoreReport, timedOut: boolean): void {
    const store = this.stores.find((s) => s.spec.root === entry.path);
    if (!store) return;
    this.settleSaved(store);
    // Left with the faults over: a refused restart, unless the bound was too short to finish.
    const where = `R2: recover left ${entry.path} once the faults were over`;
    // (B6 and B7 were this: content the store will never take, and a folder taken for wiped.)
    if (entry.left?.code === 'unpushed' && !timedOut) this.violate(`${where}: ${entry.left.reason} ${JSON.stringify(entry.unpushed)}`);
    if (entry.left?.code === 'marker_mismatch' && this.#atRecover.get(store.spec.key)?.size === 0) {
      this.violate(`${where}: an empty folder, left for its missing marker (B5)`);
    }
    if (entry.left?.code !== 'marker_mismatch') {
      for (const [path] of store.pending) {
        const named = entry.unpushed.some((u) => u.path === path) || (entry.conflicts.includes(path) && this.realConflict(store, path));
        if (!named) this.violate(`R2: recover left ${entry.path} (${entry.left?.code}) without naming the agent's write to ${path}`);
      }
    }
    store.pending.clear();
  }

  /**
   * The worker was killed during a pass, so the pass's report is lost with it. A pull it made
   * before the kill may have replaced an agent write as the store-wins side of a real conflict
   * (the report, or the warning logged right after the write, would have named it; a kill can
   * fall between the two). Such a write is settled when the file now holds exactly the store's
   * content at that path and that content came from the other writer. Anything else stays
   * pending, for afterStep and recover to account for.
   */
  crashedDuringPass(trees: Map<StoreKey, Tree>): number {
    let settled = 0;
    for (const store of this.stores) {
      const files = memoryFiles(trees.get(store.spec.key)!);
      const remote = this.view.storeShas(store.spec.id);
      // The cut pass followed a rename of the store's on disk (its report, which would say so,
      // never came): a write not yet in the store moved with its file. Every agent write is a
      // fresh token, so a file elsewhere holding exactly it is that write, judged there from now on.
      for (const [path, write] of [...store.pending]) {
        if (files.get(path) === write.sha) continue;
        const moved = [...files].find(([other, sha]) => other !== path && sha === write.sha && !store.pending.has(other));
        if (!moved) continue;
        store.pending.delete(path);
        store.pending.set(moved[0], write);
        store.see(moved[0], write.sha);
      }
      for (const [path, write] of store.pending) {
        const sha = files.get(path);
        if (write.seq > this.#passStartSeq || sha === undefined || sha === write.sha) continue;
        if (remote.get(path) === sha && store.remoteAuthored.get(path)?.has(sha) && store.remoteWroteSinceSync.has(path)) {
          store.pending.delete(path);
          settled++;
        }
      }
    }
    this.#phase = 'idle';
    return settled;
  }

  /** A new worker is about to materialize: the dead session's model state goes. */
  beforeRestart(): void {
    for (const store of this.stores) {
      store.pending.clear();
      store.missingSince.clear();
      store.agentDeleted.clear();
      store.markerTouched = false;
      store.distrusted = false;
    }
    this.crashed = false;
    this.#phase = 'idle';
  }

  // --- After every step ------------------------------------------------------------------------

  /** I2 after any step: each pending write is in the store (then settled) or still on disk. */
  afterStep(trees: Map<StoreKey, Tree>): void {
    for (const store of this.stores) {
      const tree = trees.get(store.spec.key)!;
      const files = memoryFiles(tree);
      for (const [path, sha] of files) store.see(path, sha);
      for (const path of files.keys()) store.agentDeleted.delete(path);
      this.settleSaved(store);
      for (const [path, write] of store.pending) {
        if (files.get(path) !== write.sha) {
          const now = files.has(path) ? 'other content' : tree.has(path) ? `a ${tree.get(path)!.kind}` : 'nothing';
          this.violate(`I2: the agent's write to ${path} in ${store.spec.id} is lost: not in the store, and the file holds ${now}`);
          store.pending.delete(path);
        }
      }
    }
  }

  /**
   * Whether a conflict reported at `path` may account for a pending agent write: the other
   * writer must have written that path since the engine's last sync of it, and the store's
   * version there must not be one only the engine itself ever sent (SPEC 4.2: store wins when
   * *both* changed). A false one is reported as I2.
   */
  private realConflict(store: StoreModel, path: string): boolean {
    if (!store.remoteWroteSinceSync.has(path)) {
      this.violate(`I2: a conflict at ${path} in ${store.spec.id}, where no other writer wrote since the engine's last sync of it (a false conflict)`);
      return false;
    }
    const remote = this.view.storeShas(store.spec.id).get(path);
    if (remote === undefined || !store.enginePushed.get(path)?.has(remote) || store.remoteAuthored.get(path)?.has(remote)) return true;
    this.violate(
      `I2: a conflict at ${path} in ${store.spec.id} overwrote the agent's write with content only the engine itself sent there (its own earlier push, taken for a remote edit)`,
    );
    return false;
  }

  /** A write the store now holds is safe: it leaves the pending list. */
  private settleSaved(store: StoreModel, remote: ReadonlyMap<string, string> = this.view.storeShas(store.spec.id)): void {
    // Or at another path: every agent write is a fresh token, so its sha anywhere in the store is
    // that write kept — there when the other writer renamed the memory it went to, or when the
    // engine sent it to the memory the store had renamed.
    const held = new Set(remote.values());
    for (const [path, write] of store.pending) {
      const renamedTo = store.sentToRenamed.get(path);
      if (remote.get(path) === write.sha || held.has(write.sha) || (renamedTo !== undefined && remote.get(renamedTo) === write.sha)) store.pending.delete(path);
    }
  }

  // --- Quiescence ------------------------------------------------------------------------------

  /** I7, after faults are off and two forced passes ran; `last` is the second pass. */
  checkConverged(last: SyncReport, trees: Map<StoreKey, Tree>): void {
    for (const store of this.stores) {
      if (store.distrusted) continue;
      const { spec } = store;
      const r = last.stores.find((s) => s.memoryStoreId === spec.id);
      if (!r || r.status !== 'synced') {
        this.violate(`I7: quiescent pass over ${spec.id} ended ${r?.status ?? 'unreported'} (${r?.reason ?? ''})`);
        continue;
      }
      const tree = trees.get(spec.key)!;
      const local = memoryFiles(tree);
      const remote = this.view.storeShas(spec.id);
      const blocked = blockedEntries(tree);
      const refused = new Set(r.refused.map((x) => x.path));
      const skipped = new Set(r.skippedPaths.map((x) => x.path));
      const heldConflicts = new Set(r.skippedPaths.filter((x) => x.code === 'conflict_loser_unread').map((x) => x.path));
      const pendingDeletion = new Set(r.pendingDeletions);
      for (const path of new Set([...local.keys(), ...remote.keys()])) {
        if (local.get(path) === remote.get(path)) continue;
        const block = blocked.find((b) => path === b || path.startsWith(`${b}/`));
        if (block) {
          if (!skipped.has(block)) this.violate(`I7: ${path} in ${spec.id} differs behind ${block}, which the report does not name as skipped`);
          continue;
        }
        if (local.has(path) && refused.has(path)) continue;
        // A conflict held open because its loser is a file never read (too large, hard-linked):
        // the file is kept and named, not pulled over (SPEC 6.6), so it never converges.
        if (local.has(path) && remote.has(path) && heldConflicts.has(path)) continue;
        if (spec.access === 'read_write' && !local.has(path) && pendingDeletion.has(path)) continue;
        if (!local.has(path) && skipped.has(path)) continue; // a remote path no mount may hold
        if (spec.access === 'read_only' && !local.has(path) && store.agentDeleted.has(path)) continue;
        const l = local.has(path) ? 'a file' : 'no file';
        const s = remote.has(path) ? 'a memory' : 'no memory';
        this.violate(`I7: not converged in ${spec.id}: ${path} has ${l} and ${s}${local.has(path) && remote.has(path) ? ' with other content' : ''}, unreported`);
      }
      for (const path of blocked) {
        if (!skipped.has(path)) this.violate(`I7: the ${tree.get(path)!.kind} at ${path} in ${spec.id} is not reported as skipped`);
      }
    }
  }
}

