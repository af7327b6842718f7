import type { StoreErrorKind } from '@memory-mounter/core';
import type { InMemoryStoreClient, StoreOp, StoreWriteOp } from '@memory-mounter/testing';

/**
 * Faults queued on the fake store, and how many of them have gone off.
 *
 * The fake has no way to cancel a queued fault, and quiescence needs a store without faults. The
 * ledger counts each fault as it fires (the fake's messages say "injected ..."), and `drain`
 * spends the rest on a scratch store that the engine never mounts.
 *
 * Two kinds of fault live here rather than in the fake, because the fake honours its abort
 * signal and fails one op at a time: **stalls** (a call that never answers and ignores its
 * signal, as a stalled TCP connection does; optionally after the store applied the write, or
 * after the first memory of a listing) and **outages** (every call, of any op, answered
 * `unavailable`, for the next N calls or until the model clock reaches a time). The
 * ObservedStoreClient asks `intercept` before each request; `drain` cancels what is left.
 */
export const SCRATCH_STORE = 'memstore_scratch';

/**
 * Where a stalled call stops answering: `before` the store sees it, or `after` it applied a
 * write (the answer is lost) or sent the first memory of a listing.
 */
export type StallAt = 'before' | 'after';

/** A write whose answer a lost response takes: a guarded update, or a guarded delete (the ops the engine retries). */
export type RetriedWriteOp = 'update' | 'delete';

/**
 * What happens to one request instead of (or after) the fake answering it. `lose_answer`: the
 * store applies the write and the answer is lost (`unavailable`); the engine's retry of it then
 * meets a service that checks the precondition against what the memory holds now (see
 * ObservedStoreClient), as the real one does.
 */
export type Interception = { kind: 'stall'; at: StallAt } | { kind: 'outage' } | { kind: 'lose_answer' };

/** The message of a lost answer (the write applied): not the fake's "injected ..." form. */
export const LOST_ANSWER_MESSAGE = 'lost answer (test): the write was applied, its answer never came';
/** The message of a strict service refusing a retry whose precondition no longer holds. */
export const STRICT_RETRY_MESSAGE = 'strict service (test): the memory no longer holds expected_content_sha256';

/** The message of an outage's failures: not the fake's "injected ..." form, so not counted twice. */
export const OUTAGE_MESSAGE = 'outage (test): service unavailable';

const INJECTED_BEFORE = /^injected \w+ on (\w+)$/;
const INJECTED_AFTER = /^injected unavailable after (\w+) was applied$/;

export class FaultLedger {
  readonly #queuedBefore = new Map<StoreOp, number>();
  readonly #queuedAfter = new Map<StoreWriteOp, number>();
  readonly #stalls = new Map<StoreOp, StallAt[]>();
  readonly #lostAnswers = new Map<RetriedWriteOp, number>();
  #outage: { calls: number } | { untilMs: number } | null = null;
  #scratchCounter = 0;

  constructor(private readonly fake: InMemoryStoreClient) {}

  /** The next `times` requests of `op` fail with `kind` and change nothing. */
  failNext(op: StoreOp, kind: StoreErrorKind, times: number): void {
    this.fake.failNext(op, kind, times);
    bump(this.#queuedBefore, op, times);
  }

  /** The next write of `op` is applied, then answered `unavailable`. */
  failAfterApply(op: StoreWriteOp): void {
    this.fake.failAfterApply(op);
    bump(this.#queuedAfter, op, 1);
  }

  /** The next `times` requests of `op` never answer, whatever their signal says. */
  stallNext(op: StoreOp, times: number, at: StallAt): void {
    const queue = this.#stalls.get(op) ?? [];
    for (let i = 0; i < times; i++) queue.push(at);
    this.#stalls.set(op, queue);
  }

  /** The next `times` writes of `op` are applied and their answers lost; their retries meet a strict service. */
  loseAnswers(op: RetriedWriteOp, times: number): void {
    bump(this.#lostAnswers, op, times);
  }

  /** Every request fails `unavailable`: the next `calls` of them, or until the clock reads `untilMs`. */
  outage(spec: { calls: number } | { untilMs: number }): void {
    this.#outage = spec;
  }

  /**
   * Asked before each request the engine sends (after the oracle saw it): an outage fails it, a
   * queued stall for its op holds it forever. `now` is the model clock.
   */
  intercept(op: StoreOp, now: number): Interception | undefined {
    const outage = this.#outage;
    if (outage && 'calls' in outage) {
      if (outage.calls > 0) {
        outage.calls--;
        return { kind: 'outage' };
      }
      this.#outage = null;
    } else if (outage) {
      if (now < outage.untilMs) return { kind: 'outage' };
      this.#outage = null;
    }
    const at = this.#stalls.get(op)?.shift();
    if (at !== undefined) return { kind: 'stall', at };
    if ((op === 'update' || op === 'delete') && (this.#lostAnswers.get(op) ?? 0) > 0) {
      bump(this.#lostAnswers, op, -1);
      return { kind: 'lose_answer' };
    }
    return undefined;
  }

  /** Called with every error the fake raised: counts the injected ones. True for an injected one. */
  noteFailure(error: unknown): boolean {
    const message = error instanceof Error ? error.message : '';
    const before = INJECTED_BEFORE.exec(message);
    if (before) bump(this.#queuedBefore, before[1] as StoreOp, -1);
    const after = INJECTED_AFTER.exec(message);
    if (after) bump(this.#queuedAfter, after[1] as StoreWriteOp, -1);
    return before !== null || after !== null;
  }

  get pending(): number {
    let n = this.#outage ? 1 : 0;
    for (const queue of this.#stalls.values()) n += queue.length;
    for (const count of this.#lostAnswers.values()) n += count;
    for (const count of [...this.#queuedBefore.values(), ...this.#queuedAfter.values()]) n += count;
    return n;
  }

  /** Fires every fault still queued, on the scratch store; stalls and outages are called off. */
  async drain(): Promise<void> {
    this.#stalls.clear();
    this.#lostAnswers.clear();
    this.#outage = null;
    const scratch = this.fake;
    // Faults before apply first: while one is queued, a write would consume it instead of applying.
    for (const [op, count] of this.#queuedBefore) {
      for (let i = 0; i < count; i++) await ignoreFailure(() => this.requestOnScratch(op));
    }
    this.#queuedBefore.clear();
    for (const [op, count] of this.#queuedAfter) {
      for (let i = 0; i < count; i++) {
        const memory = scratch.writeMemory(SCRATCH_STORE, this.scratchPath(), 'a');
        if (op === 'create') await ignoreFailure(() => scratch.create(SCRATCH_STORE, { path: this.scratchPath(), content: 'b' }));
        if (op === 'update') await ignoreFailure(() => scratch.update(SCRATCH_STORE, memory.id, { content: 'b' }));
        if (op === 'delete') await ignoreFailure(() => scratch.delete(SCRATCH_STORE, memory.id));
      }
    }
    this.#queuedAfter.clear();
  }

  private async requestOnScratch(op: StoreOp): Promise<void> {
    const fake = this.fake;
    switch (op) {
      case 'list':
        for await (const _ of fake.list(SCRATCH_STORE)) void _;
        return;
      case 'get':
        await fake.get(SCRATCH_STORE, 'mem_none');
        return;
      case 'create':
        await fake.create(SCRATCH_STORE, { path: this.scratchPath(), content: 'x' });
        return;
      case 'update':
        await fake.update(SCRATCH_STORE, 'mem_none', { content: 'x' });
        return;
      case 'delete':
        await fake.delete(SCRATCH_STORE, 'mem_none');
        return;
    }
  }

  private scratchPath(): string {
    return `/drain-${this.#scratchCounter++}.md`;
  }
}

function bump<K>(map: Map<K, number>, key: K, by: number): void {
  map.set(key, Math.max(0, (map.get(key) ?? 0) + by));
}

async function ignoreFailure(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch {
    // The point of the call was the fault it consumed.
  }
}
