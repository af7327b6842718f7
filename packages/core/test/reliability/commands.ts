import fc from 'fast-check';
import type { StoreErrorKind } from '@memory-mounter/core';
import type { StoreOp, StoreWriteOp } from '@memory-mounter/testing';
import type { MarkerDamage, WipeKind, WriteKind } from './agent.js';
import type { RetriedWriteOp, StallAt } from './fault-ledger.js';
import type { UnreadableCode } from './disk-faults.js';
import type { FeedFailure, FeedFault, FeedShape, FolderFault, ServerClockMode } from './feed-faults.js';
import type { Oracle, StoreKey } from './oracle.js';
import { coverage } from './coverage.js';
import { DIR_PATHS, FILE_PATHS, HOSTILE_REMOTE_PATHS, type Case, type CrashPoint, type FeedScenario, type Interleaving, type Scenario } from './world.js';

/**
 * The steps of a case, as fast-check commands, and the arbitraries that generate them. Each
 * command is small and prints as the call it makes, so a shrunk counterexample reads as a
 * script; regression tests build the same commands by hand.
 */
export type Step = fc.AsyncCommand<Oracle, Case>;

abstract class CaseStep implements Step {
  /** Nothing runs after finalize; while the worker is dead, neither it nor its agent acts. */
  check(model: Readonly<Oracle>): boolean {
    return !model.finalized && !model.crashed;
  }
  abstract run(model: Oracle, c: Case): Promise<void>;
  abstract toString(): string;
}

/** A step of the world outside the worker (the other writer, the network, the clock): it goes on while the worker is dead. */
abstract class WorldStep extends CaseStep {
  override check(model: Readonly<Oracle>): boolean {
    return !model.finalized;
  }
}

// --- The agent -------------------------------------------------------------------------------

export class AgentWrite extends CaseStep {
  constructor(readonly store: StoreKey, readonly path: string, readonly kind: WriteKind = 'text') {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.write(root, this.path, this.kind, c.token('agent')));
  }
  toString() {
    return `agent.write(${this.store}, ${this.path}${this.kind === 'text' ? '' : `, ${this.kind}`})`;
  }
}

export class AgentEdit extends CaseStep {
  constructor(readonly store: StoreKey, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.edit(root, this.path, c.token('agent')));
  }
  toString() {
    return `agent.edit(${this.store}, ${this.path})`;
  }
}

export class AgentDelete extends CaseStep {
  constructor(readonly store: StoreKey, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.delete(root, this.path));
  }
  toString() {
    return `agent.delete(${this.store}, ${this.path})`;
  }
}

export class AgentRenameFile extends CaseStep {
  constructor(readonly store: StoreKey, readonly from: string, readonly to: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.renameFile(root, this.from, this.to));
  }
  toString() {
    return `agent.renameFile(${this.store}, ${this.from}, ${this.to})`;
  }
}

export class AgentMkdir extends CaseStep {
  constructor(readonly store: StoreKey, readonly dir: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.mkdir(root, this.dir));
  }
  toString() {
    return `agent.mkdir(${this.store}, ${this.dir})`;
  }
}

export class AgentRemoveDir extends CaseStep {
  constructor(readonly store: StoreKey, readonly dir: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.removeDir(root, this.dir));
  }
  toString() {
    return `agent.removeDir(${this.store}, ${this.dir})`;
  }
}

export class AgentRenameDir extends CaseStep {
  constructor(readonly store: StoreKey, readonly from: string, readonly to: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.renameDir(root, this.from, this.to));
  }
  toString() {
    return `agent.renameDir(${this.store}, ${this.from}, ${this.to})`;
  }
}

/** A link to the canary file (at a file path) or the canary folder (at a folder path). */
export class AgentLinkOutside extends CaseStep {
  constructor(readonly store: StoreKey, readonly path: string, readonly to: 'file' | 'dir') {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.linkOutside(root, this.path, this.to));
  }
  toString() {
    return `agent.linkOutside(${this.store}, ${this.path} -> canary ${this.to})`;
  }
}

export class WipeFolder extends CaseStep {
  constructor(readonly store: StoreKey, readonly how: WipeKind) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.wipe(root, this.how));
  }
  toString() {
    return `wipe(${this.store}, ${this.how})`;
  }
}

export class DamageMarker extends CaseStep {
  constructor(readonly store: StoreKey, readonly how: MarkerDamage) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.agentStep(this.toString(), this.store, (root, agent) => agent.damageMarker(root, this.how));
  }
  toString() {
    return `damageMarker(${this.store}, ${this.how})`;
  }
}

// --- The other writer ------------------------------------------------------------------------

export class RemoteWrite extends WorldStep {
  constructor(readonly store: StoreKey, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.remoteStep(this.toString(), this.store, (id) => void c.fake.writeMemory(id, this.path, `${c.token('remote')}\n`));
  }
  toString() {
    return `remote.write(${this.store}, ${this.path})`;
  }
}

/**
 * The other writer (or a buggy service) puts a memory at a path no mount may hold: the marker,
 * a temp-file name, a backslash, a `..` segment. The engine must skip it, never write or delete.
 */
export class RemoteWriteHostile extends WorldStep {
  constructor(readonly store: StoreKey, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.remoteStep(this.toString(), this.store, (id) => void c.fake.plantMemory(id, this.path, `${c.token('remote')} hostile\n`));
  }
  toString() {
    return `remote.writeHostile(${this.store}, ${JSON.stringify(this.path)})`;
  }
}

/** The other writer happens to write exactly what the local file holds (both changed alike). */
export class RemoteCopyLocal extends WorldStep {
  constructor(readonly store: StoreKey, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.remoteStep(this.toString(), this.store, (id) => {
      // What the folder holds at that path, not what a symlinked folder on the way leads to.
      const root = c.spec(this.store).root;
      const folders = this.path.split('/').slice(1, -1);
      if (folders.some((_, i) => c.disk.kindOf(`${root}/${folders.slice(0, i + 1).join('/')}`) !== 'directory')) return;
      const bytes = c.disk.readFile(`${root}${this.path}`);
      const text = bytes && new TextDecoder('utf-8', { fatal: false }).decode(bytes);
      if (text && bytes.length < 100_000 && !text.includes('\uFFFD')) c.fake.writeMemory(id, this.path, text);
    });
  }
  toString() {
    return `remote.copyLocal(${this.store}, ${this.path})`;
  }
}

export class RemoteRename extends WorldStep {
  constructor(readonly store: StoreKey, readonly from: string, readonly to: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.remoteStep(this.toString(), this.store, (id) => {
      const paths = c.fake.snapshot(id);
      if (paths[this.from] !== undefined && paths[this.to] === undefined) c.fake.renameMemory(id, this.from, this.to);
    });
  }
  toString() {
    return `remote.rename(${this.store}, ${this.from}, ${this.to})`;
  }
}

/** Another writer renames a folder: every memory under `from` moves under `to`, keeping its id. */
export class RemoteRenameDir extends WorldStep {
  constructor(readonly store: StoreKey, readonly from: string, readonly to: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.remoteStep(this.toString(), this.store, (id) => {
      if (this.from === this.to || this.to.startsWith(`${this.from}/`)) return;
      const taken = c.fake.snapshot(id);
      for (const path of Object.keys(taken)) {
        if (!path.startsWith(`${this.from}/`)) continue;
        const target = `${this.to}${path.slice(this.from.length)}`;
        if (taken[target] === undefined) c.fake.renameMemory(id, path, target);
      }
    });
  }
  toString() {
    return `remote.renameDir(${this.store}, ${this.from}, ${this.to})`;
  }
}

export class RemoteDelete extends WorldStep {
  constructor(readonly store: StoreKey, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.remoteStep(this.toString(), this.store, (id) => {
      if (c.fake.snapshot(id)[this.path] !== undefined) c.fake.deleteMemory(id, this.path);
    });
  }
  toString() {
    return `remote.delete(${this.store}, ${this.path})`;
  }
}

// --- Faults and the clock --------------------------------------------------------------------

/** The next `times` requests of `op` fail with `kind` before the store applies anything. */
export class FailNext extends WorldStep {
  constructor(readonly op: StoreOp, readonly kind: StoreErrorKind, readonly times = 1) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.faults.failNext(this.op, this.kind, this.times));
  }
  toString() {
    return `failNext(${this.op}, ${this.kind}${this.times > 1 ? `, ${this.times}` : ''})`;
  }
}

/** The next write of `op` is applied, then answered `unavailable`. */
export class FailAfterApply extends WorldStep {
  constructor(readonly op: StoreWriteOp) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.faults.failAfterApply(this.op));
  }
  toString() {
    return `failAfterApply(${this.op})`;
  }
}

/**
 * The next `times` requests of `op` never answer and ignore their abort signal (a stalled
 * connection): `before` the store sees them, or `after` it applied the write (or, for a listing,
 * after the first memory). The engine must give up on each at `requestTimeout` and its passes
 * must still end within their bounds.
 */
export class StallNext extends WorldStep {
  constructor(readonly op: StoreOp, readonly times: number, readonly at: StallAt) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.faults.stallNext(this.op, this.times, this.at));
  }
  toString() {
    return `stall(${this.op}${this.times > 1 ? ` x${this.times}` : ''}${this.at === 'after' ? ', after apply' : ''})`;
  }
}

/**
 * The next `times` guarded writes of `op` are applied and their answers lost (`unavailable`): the
 * engine's bounded client retries them inside the pass, and the retry meets a service that
 * checks the precondition against what the memory holds now (an update: `precondition_failed`,
 * since it holds our own write; a delete: `not_found`).
 */
export class LoseAnswer extends WorldStep {
  constructor(readonly op: RetriedWriteOp, readonly times = 1) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.faults.loseAnswers(this.op, this.times));
  }
  toString() {
    return `loseAnswer(${this.op}${this.times > 1 ? ` x${this.times}` : ''}; applied, then retried)`;
  }
}

/**
 * The next full listing of `store` skips one of its entries (`index`, modulo their number), as a
 * paged walk does when an insertion shifts its cursor, while the other writer writes `path`.
 */
export class SkipInListing extends WorldStep {
  constructor(readonly store: StoreKey, readonly index: number, readonly path: string) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.skipInNextListing(this.store, this.index, this.path));
  }
  toString() {
    return `listing.next(${this.store}: skips entry #${this.index} while remote.write(${this.path}))`;
  }
}

/** The engine's next `times` opens of one file fail with `code` (Infinity: until the faults are drained). */
export class Unreadable extends WorldStep {
  constructor(readonly store: StoreKey, readonly path: string, readonly code: UnreadableCode, readonly times: number) {
    super();
  }
  run(m: Oracle, c: Case) {
    m.noteUnreadable(this.store, this.path);
    return c.step(this.toString(), () => c.diskFaults.unreadable(`${c.spec(this.store).root}${this.path}`, this.code, this.times));
  }
  toString() {
    return `unreadable(${this.store}, ${this.path}, ${this.code}, ${Number.isFinite(this.times) ? `next ${this.times} opens` : 'until drained'})`;
  }
}

/** The next `times` conflict copies the engine writes fail with ENOSPC (no-op without `conflictCopies`). */
export class ConflictCopyFails extends WorldStep {
  constructor(readonly times = 1) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.diskFaults.failConflictCopies(this.times));
  }
  toString() {
    return `conflictCopy.fails(ENOSPC${!Number.isFinite(this.times) ? ', until drained' : this.times > 1 ? ` x${this.times}` : ''})`;
  }
}

/** An outage: the next `calls` requests, whatever their op, fail `unavailable` before the store sees them. */
export class OutageCalls extends WorldStep {
  constructor(readonly calls: number) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.faults.outage({ calls: this.calls }));
  }
  toString() {
    return `outage(next ${this.calls} calls)`;
  }
}

/**
 * An outage for a span of model time: every request fails `unavailable` until the model clock
 * has moved `seconds` on (only `clock +=` steps move it; a pass in between fails throughout,
 * retrying until its deadline).
 */
export class OutageFor extends WorldStep {
  constructor(readonly seconds: number) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.faults.outage({ untilMs: c.clock.now + this.seconds * 1000 }));
  }
  toString() {
    return `outage(for ${this.seconds} s of model time)`;
  }
}

/** The next read of the change feed (either store) is reshaped or fails (feed-faults.ts). No-op in a case without the feed. */
export class FeedFaultStep extends WorldStep {
  constructor(readonly fault: FeedFault) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.feedFaults.pushFeed(this.fault));
  }
  toString() {
    return this.fault.kind === 'shape' ? `feed.next(${this.fault.shape}, seed ${this.fault.seed})` : `feed.next(fails ${this.fault.failure})`;
  }
}

/** The next folder listing walk (a fanned-out download) is reshaped or fails. No-op without `listFolder`. */
export class FolderFaultStep extends WorldStep {
  constructor(readonly fault: FolderFault) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => c.feedFaults.pushFolder(this.fault));
  }
  toString() {
    return `listFolder.next(${this.fault})`;
  }
}

/**
 * A user redacts one of the store's memory versions (`which`: its index, newest first, modulo
 * the number retained): path and sha gone for good, `redacted_at` set. Every later feed read
 * that covers it meets it.
 */
export class RedactVersion extends WorldStep {
  constructor(readonly store: StoreKey, readonly which: number) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => {
      const id = c.spec(this.store).id;
      const versions = c.fake.versions(id).filter((v) => v.redacted_at === null);
      if (versions.length === 0) return;
      c.redactVersion(id, versions[this.which % versions.length]!);
      coverage.versionsRedacted++;
    });
  }
  toString() {
    return `redactVersion(${this.store}, #${this.which} newest first)`;
  }
}

export class SetLatency extends WorldStep {
  constructor(readonly ms: number) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => {
      c.fake.latencyMs = this.ms;
    });
  }
  toString() {
    return `latency(${this.ms} ms)`;
  }
}

export class AdvanceClock extends WorldStep {
  constructor(readonly seconds: number) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.step(this.toString(), () => {
      c.clock.now += this.seconds * 1000;
    });
  }
  toString() {
    return `clock += ${this.seconds} s`;
  }
}

// --- The engine ------------------------------------------------------------------------------

export class Reconcile extends CaseStep {
  constructor(readonly force: boolean, readonly interleaving?: Interleaving) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.reconcile(this.force, this.interleaving);
  }
  toString() {
    const i = this.interleaving;
    if (i?.who === 'remote') return `reconcile(force) + remote.write(${i.store}, ${i.listPath}) during ${i.op} #${i.nth}`;
    return `reconcile(${this.force ? 'force' : ''})${i ? ` + agent.${i.act}(${i.store}, ${i.op === 'list' || i.op === 'listVersions' ? i.listPath : `<path of ${i.op}>`}) during ${i.op} #${i.nth}` : ''}`;
  }
}

export class Finalize extends CaseStep {
  constructor(readonly outcome: 'completed' | 'aborted') {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.finalize(this.outcome);
  }
  toString() {
    return `finalize(${this.outcome})`;
  }
}

// --- Crash and recovery ------------------------------------------------------------------------

/** SIGKILL of the worker between two steps: no finalize; its folders stay as they are. */
export class Crash extends CaseStep {
  run(_m: Oracle, c: Case) {
    return c.crash(this.toString());
  }
  toString() {
    return 'crash';
  }
}

/** SIGKILL during a forced pass, at the `nth` request of `op` (sent to the store, or not). */
export class CrashDuringPass extends CaseStep {
  constructor(readonly at: CrashPoint) {
    super();
  }
  run(_m: Oracle, c: Case) {
    return c.crashDuringPass(this.toString(), this.at);
  }
  toString() {
    const { op, nth, applied } = this.at;
    return `reconcile(force) + crash at ${op} #${nth}${op === 'list' || op === 'get' || op === 'listVersions' ? '' : applied ? ' (applied)' : ' (not sent)'}`;
  }
}

/** The next worker: `MemoryMounter.recover` with the same stateDir, then a fresh mounter at the same paths. */
export class Recover extends CaseStep {
  override check(model: Readonly<Oracle>): boolean {
    return !model.finalized && model.crashed;
  }
  run(_m: Oracle, c: Case) {
    return c.recover();
  }
  toString() {
    return 'recover + restart';
  }
}

// --- Arbitraries -----------------------------------------------------------------------------

const storeKey = fc.constantFrom<StoreKey>('rw', 'rw', 'rw', 'ro');
const file = fc.constantFrom(...FILE_PATHS);
const dir = fc.constantFrom(...DIR_PATHS);
const anyPath = fc.oneof(file, dir);
const writeKind = fc.oneof(
  { arbitrary: fc.constant<WriteKind>('text'), weight: 18 },
  { arbitrary: fc.constant<WriteKind>('binary'), weight: 1 },
  { arbitrary: fc.constant<WriteKind>('oversize'), weight: 1 },
);
const storeOp = fc.constantFrom<StoreOp>('list', 'get', 'create', 'update', 'delete');
const writeOp = fc.constantFrom<StoreWriteOp>('create', 'update', 'delete');
/** A stall after apply means something only for writes, and for a listing (after its first memory). */
const stall: fc.Arbitrary<Step> = fc
  .tuple(storeOp, fc.constantFrom(1, 1, 1, 2, 3), fc.constantFrom<StallAt>('before', 'after'))
  .map(([op, times, at]) => new StallNext(op, times, op === 'get' ? 'before' : at));
const faultKind = fc.constantFrom<StoreErrorKind>(
  'unavailable',
  'unavailable',
  'rejected',
  'precondition_failed',
  'not_found',
  'path_conflict',
  'unauthorized',
);
const interleaving: fc.Arbitrary<Interleaving> = fc.record({
  store: storeKey,
  // Every pass lists or reads the feed; the other requests happen only when there is something to transfer.
  op: fc.constantFrom<StoreOp>('list', 'list', 'listVersions', 'listVersions', 'get', 'get', 'update', 'update', 'create', 'create', 'delete'),
  nth: fc.constantFrom(1, 1, 2),
  act: fc.constantFrom<'write' | 'delete'>('write', 'write', 'delete'),
  listPath: file,
  who: fc.constantFrom<'agent' | 'remote'>('agent', 'agent', 'remote'),
});

const feedShape = fc.constantFrom<FeedShape>('reorder', 'duplicate', 'overlap', 'conflicting_duplicate', 'pathless', 'gap', 'lag', 'lag');
const feedFailure = fc.constantFrom<FeedFailure>(
  'unavailable',
  'unavailable_midway',
  'stall',
  'rejected_400',
  'unauthorized_401',
  'forbidden_403',
  'not_found_404',
);
const feedFault: fc.Arbitrary<FeedFault> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('shape' as const), shape: feedShape, seed: fc.nat(1_000_000) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fail' as const), failure: feedFailure }) },
);
const folderFault = fc.constantFrom<FolderFault>('reorder', 'bad_rollup', 'duplicate_rollup', 'unavailable_midway');

const weighted = (weight: number, arbitrary: fc.Arbitrary<Step>): fc.WeightedArbitrary<Step> => ({ weight, arbitrary });

/**
 * One step of a case, weighted towards edits on both sides, faults and syncs. Marker damage and
 * wipes are rare: a damaged marker ends all syncing of that store for the rest of the case.
 */
export const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  weighted(16, fc.tuple(storeKey, file, writeKind).map(([s, p, k]) => new AgentWrite(s, p, k))),
  weighted(6, fc.tuple(storeKey, file).map(([s, p]) => new AgentEdit(s, p))),
  weighted(6, fc.tuple(storeKey, file).map(([s, p]) => new AgentDelete(s, p))),
  weighted(3, fc.tuple(storeKey, file, file).map(([s, a, b]) => new AgentRenameFile(s, a, b))),
  weighted(2, fc.tuple(storeKey, dir).map(([s, d]) => new AgentMkdir(s, d))),
  weighted(2, fc.tuple(storeKey, dir).map(([s, d]) => new AgentRemoveDir(s, d))),
  weighted(2, fc.tuple(storeKey, dir, dir).map(([s, a, b]) => new AgentRenameDir(s, a, b))),
  weighted(2, fc.tuple(storeKey, anyPath).map(([s, p]) => new AgentLinkOutside(s, p, (DIR_PATHS as readonly string[]).includes(p) ? 'dir' : 'file'))),
  weighted(10, fc.tuple(storeKey, file).map(([s, p]) => new RemoteWrite(s, p))),
  weighted(2, fc.tuple(storeKey, file).map(([s, p]) => new RemoteCopyLocal(s, p))),
  weighted(1, fc.tuple(storeKey, fc.constantFrom(...HOSTILE_REMOTE_PATHS)).map(([s, p]) => new RemoteWriteHostile(s, p))),
  weighted(2, fc.tuple(storeKey, file, file).map(([s, a, b]) => new RemoteRename(s, a, b))),
  weighted(2, fc.tuple(storeKey, dir, dir).map(([s, a, b]) => new RemoteRenameDir(s, a, b))),
  weighted(4, fc.tuple(storeKey, file).map(([s, p]) => new RemoteDelete(s, p))),
  weighted(6, fc.tuple(storeOp, faultKind, fc.integer({ min: 1, max: 2 })).map(([op, k, n]) => new FailNext(op, k, n))),
  weighted(3, writeOp.map((op) => new FailAfterApply(op))),
  // Issue 18: a lost answer then retried; a listing that skips an entry; files that cannot be opened; copies that fail.
  weighted(4, fc.tuple(fc.constantFrom<RetriedWriteOp>('update', 'update', 'delete'), fc.constantFrom(1, 2, 3)).map(([op, n]) => new LoseAnswer(op, n))),
  weighted(2, fc.tuple(storeKey, fc.nat(20), file).map(([s, i, p]) => new SkipInListing(s, i, p))),
  weighted(
    2,
    fc
      .tuple(storeKey, file, fc.constantFrom<UnreadableCode>('EACCES', 'EIO', 'EMFILE'), fc.constantFrom(1, 2, Number.POSITIVE_INFINITY))
      .map(([s, p, code, n]) => new Unreadable(s, p, code, n)),
  ),
  weighted(2, fc.constantFrom(1, 3, Number.POSITIVE_INFINITY).map((n) => new ConflictCopyFails(n))),
  // An outage costs real time (each pass in it runs to its deadline): rare, so the CI slice stays short.
  weighted(2, stall),
  weighted(
    1,
    fc.oneof(fc.constantFrom(1, 2, 3, 5, 8).map((n): Step => new OutageCalls(n)), fc.constantFrom(1, 4, 16).map((s): Step => new OutageFor(s))),
  ),
  weighted(2, fc.constantFrom(0, 0, 1, 3).map((ms) => new SetLatency(ms))),
  weighted(10, feedFault.map((f) => new FeedFaultStep(f))),
  weighted(2, folderFault.map((f) => new FolderFaultStep(f))),
  weighted(2, fc.tuple(storeKey, fc.nat(20)).map(([s, i]) => new RedactVersion(s, i))),
  weighted(1, fc.tuple(storeKey, fc.constantFrom<WipeKind>('remove_folder', 'files_only', 'everything')).map(([s, h]) => new WipeFolder(s, h))),
  weighted(1, fc.tuple(storeKey, fc.constantFrom<MarkerDamage>('delete', 'foreign', 'garbage')).map(([s, h]) => new DamageMarker(s, h))),
  weighted(6, fc.constantFrom(1, 4, 16, 31, 120).map((s) => new AdvanceClock(s))),
  weighted(10, fc.boolean().map((force) => new Reconcile(force))),
  weighted(6, interleaving.map((i) => new Reconcile(true, i))),
  weighted(1, fc.constantFrom<'completed' | 'aborted'>('completed', 'aborted').map((o) => new Finalize(o))),
  weighted(1, fc.constant(new Crash())),
  weighted(
    1,
    fc
      .record({ op: fc.constantFrom<StoreOp>('list', 'list', 'listVersions', 'get', 'create', 'update', 'update'), nth: fc.constantFrom(1, 1, 2), applied: fc.boolean() })
      .map((at) => new CrashDuringPass(at)),
  ),
  weighted(4, fc.constant(new Recover())),
);

export function scenarioArbitrary(disk: fc.Arbitrary<Scenario['disk']>): fc.Arbitrary<Scenario> {
  return fc.record({
    disk,
    deletionMode: fc.constantFrom<Scenario['deletionMode']>('enabled', 'enabled', 'enabled', 'log_only', 'disabled'),
    graceSeconds: fc.constantFrom(0, 5, 30),
    syncIntervalSeconds: fc.constantFrom(5, 15),
    // Small bounds, so a stall or an outage costs a fraction of a second of real time (T1 is
    // checked on the wall clock); 0.02 s exercises finalize cut off before it starts anything.
    finalSyncTimeoutSeconds: fc.constantFrom(1, 1, 2, 0.02),
    requestTimeoutSeconds: fc.constantFrom(0.05, 0.1, 0.2),
    syncTimeoutSeconds: fc.constantFrom(0.5, 0.5, 0.5, 1),
    seedRw: fc.subarray([...FILE_PATHS]),
    seedRo: fc.subarray([...FILE_PATHS]),
    bulk: fc.boolean(),
    // One case in four writes the losers of conflicts beside the file (issue 18: copies that fail).
    conflictCopies: fc.constantFrom(false, false, false, true),
    // One case in four without the feed (full listings, as before issue 9).
    feed: fc.option(feedScenario, { freq: 4, nil: undefined }),
  });
}

const feedScenario: fc.Arbitrary<FeedScenario> = fc.record({
  versions: fc.constantFrom(true, true, true, false),
  folders: fc.boolean(),
  clock: fc.constantFrom<ServerClockMode>('exact', 'coarse'),
  // 1: a full listing every pass (the feed never read); 100 (the default): the feed nearly always.
  fullListingEvery: fc.constantFrom(1, 2, 3, 100, 100),
  fullListingInterval: fc.constantFrom(30, 600),
});
