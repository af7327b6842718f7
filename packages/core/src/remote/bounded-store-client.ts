import { asStoreError, StoreError } from '../model/errors.js';
import { LIST_PAGE_SIZE, LIST_PAGE_SIZE_WITH_CONTENT } from '../model/limits.js';
import type { RequestCounter } from './request-count.js';
import type {
  StoreClient,
  StoreFolderEntry,
  StoreListFolderOptions,
  StoreListingOptions,
  StoreListVersionsOptions,
  StoreMemory,
  StoreMemoryVersion,
} from './store-client.js';
import type { Logger } from '../model/types.js';
import { CALL_BACKOFF_BASE_MS, CALL_BACKOFF_MAX_MS, callBackoffMs, repeatRule, type RepeatRule, type StoreOperation } from '../decide/retry-policy.js';

/**
 * The StoreClient the engine talks to: the host's client, with every call bounded and the safe
 * ones retried (SPEC 6.2).
 *
 * Bounded: each call races `requestTimeoutMs` and the caller's signal itself, rather than only
 * passing the signal on, because a host's client may ignore it (a stalled connection never
 * answers). When either fires, the signal given to the inner call is aborted, its promise is
 * abandoned (with a handler attached, so a late rejection is not an unhandled one) and the call
 * fails as `unavailable`. A listing is bounded page by page: it fails when no memory arrives
 * within `requestTimeoutMs`.
 *
 * Retried: an `unavailable` failure (a timeout included) is tried again, with exponential backoff
 * and full jitter, until the caller's signal aborts (the pass deadline), but only where a repeat
 * is safe: a listing (restarted from scratch; memories are yielded once the whole listing is in,
 * so none is seen twice; the same for `listVersions` and `listFolder`), `get`, and `update` and
 * `delete` guarded by `expected_content_sha256`.
 * `create` and an unguarded `update` are tried once: the engine settles a write of unknown
 * outcome itself, at the next listing. A call without a signal has no deadline and is tried once.
 * Only failures the client itself reports as `unavailable` are retried; anything else it throws
 * is still reported as `unavailable` (see `asStoreError`), but a broken client is not hammered.
 * A failure that carries the store's `retry-after` waits at least that long before the retry;
 * and no retry starts past `retryUntil` (an ordinary pass's small retry budget, SPEC 6.7), so
 * an outage ends the pass in seconds rather than at its deadline, with the failure (and its
 * `retry-after`) for the mounter's circuit breaker.
 *
 * Reported as it stands (SPEC 6.6): a repeat answers for the store as it is after every earlier
 * attempt, and an attempt that failed `unavailable` may have landed. So a repeated `update` that
 * meets `precondition_failed` or `path_conflict` may be meeting its own earlier attempt (the
 * store already holds the content or path sent): the write's outcome is still unknown, and it
 * fails as `unavailable` (the answer kept as `cause`), which the engine settles like any write
 * of unknown outcome, by what the next listing shows. A repeat that succeeds is a success
 * (however the service treats an update that changes nothing); a repeated guarded `delete` that
 * meets `not_found` is reported as such (the engine takes it as done), and one that meets
 * `precondition_failed` is an answer (our own delete would have left nothing to compare).
 *
 * Counted (`requests`): each attempt's requests, by store, as the attempt ends: a call made is
 * one, a listing one per page (see `collect`), and an attempt after the first counts as retries.
 * That is what each pass report's `requests` is made of.
 */
export interface BoundedStoreClientOptions {
  requestTimeoutMs: number;
  /** Retries are logged at debug level, timeouts at info. */
  logger?: Logger;
  /** First backoff ceiling; doubles with each retry. Default 100 ms. */
  baseDelayMs?: number;
  /** Largest backoff ceiling. Default 3,000 ms. */
  maxDelayMs?: number;
  /** Uniform in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Waits `ms`; should end early when `signal` aborts (it is raced against the signal anyway). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * The instant (on `monotonicMs`) after which no retry of a call to `storeId` may start: the
   * pass's retry budget (SPEC 6.7), `-Infinity` for a probe (no retry at all). Undefined: retries
   * go on until the caller's deadline (finalize, recover). Asked at each retry, so the owner
   * can move it from pass to pass.
   */
  retryUntil?: (storeId: string) => number | undefined;
  /** The clock `retryUntil` is on. Default `performance.now`. */
  monotonicMs?: () => number;
  /** Where each attempt's requests are counted, per store, as the attempt ends. */
  requests?: RequestCounter;
}

type Operation = StoreOperation;

export class BoundedStoreClient implements StoreClient {
  readonly #inner: StoreClient;
  readonly #timeoutMs: number;
  readonly #logger: Logger | undefined;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #random: () => number;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #retryUntil: (storeId: string) => number | undefined;
  readonly #monotonicMs: () => number;
  readonly #requests: RequestCounter | undefined;

  constructor(inner: StoreClient, options: BoundedStoreClientOptions) {
    this.#inner = inner;
    this.#timeoutMs = options.requestTimeoutMs;
    this.#logger = options.logger;
    this.#baseDelayMs = options.baseDelayMs ?? CALL_BACKOFF_BASE_MS;
    this.#maxDelayMs = options.maxDelayMs ?? CALL_BACKOFF_MAX_MS;
    this.#random = options.random ?? Math.random;
    this.#sleep = options.sleep ?? abortableSleep;
    this.#retryUntil = options.retryUntil ?? (() => undefined);
    this.#monotonicMs = options.monotonicMs ?? (() => performance.now());
    this.#requests = options.requests;
  }

  /**
   * Present exactly when the host's client has it (looked up at each use, like every method
   * here): its absence is what tells the engine to list in full.
   */
  get listVersions(): ((storeId: string, opts?: StoreListVersionsOptions) => AsyncIterable<StoreMemoryVersion>) | undefined {
    if (!this.#inner.listVersions) return undefined;
    return (storeId, opts = {}) =>
      this.#listing('listVersions', storeId, opts, (signal, onPage) => this.#inner.listVersions!(storeId, { ...opts, signal, onPage }));
  }

  /** Present exactly when the host's client has it; without it the engine downloads with one `list`. */
  get listFolder(): ((storeId: string, opts?: StoreListFolderOptions) => AsyncIterable<StoreFolderEntry>) | undefined {
    if (!this.#inner.listFolder) return undefined;
    return (storeId, opts = {}) =>
      this.#listing('listFolder', storeId, opts, (signal, onPage) => this.#inner.listFolder!(storeId, { ...opts, signal, onPage }));
  }

  async *list(
    storeId: string,
    opts: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } & StoreListingOptions = {},
  ): AsyncIterable<StoreMemory> {
    yield* this.#listing('list', storeId, opts, (signal, onPage) => this.#inner.list(storeId, { ...opts, signal, onPage }));
  }

  /**
   * A listing of any kind: each attempt walks every page afresh; the items are yielded once one
   * walk is whole. Each page the client says it requests (`onPage`) is a request of the attempt.
   */
  async *#listing<T>(
    operation: Operation,
    storeId: string,
    opts: { signal?: AbortSignal; withContent?: boolean } & StoreListingOptions,
    start: (signal: AbortSignal, onPage: () => void) => AsyncIterable<T>,
  ): AsyncIterable<T> {
    const pageSize = opts.withContent ? LIST_PAGE_SIZE_WITH_CONTENT : LIST_PAGE_SIZE;
    const items = await this.#retrying(operation, storeId, opts.signal, repeatRule(operation, false), (attempt) => {
      const onPage = () => {
        attempt.pages++;
        opts.onPage?.();
      };
      return collect(start(attempt.signal, onPage)[Symbol.asyncIterator](), attempt, pageSize);
    });
    yield* items;
  }

  get(storeId: string, memoryId: string, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    return this.#retrying('get', storeId, opts.signal, repeatRule('get', false), (attempt) =>
      attempt.send(() => this.#inner.get(storeId, memoryId, { signal: attempt.signal })),
    );
  }

  create(storeId: string, input: { path: string; content: string }, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    return this.#retrying('create', storeId, opts.signal, repeatRule('create', false), (attempt) =>
      attempt.send(() => this.#inner.create(storeId, input, { signal: attempt.signal })),
    );
  }

  update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    const guarded = input.expected_content_sha256 !== undefined;
    return this.#retrying('update', storeId, opts.signal, repeatRule('update', guarded), (attempt) =>
      attempt.send(() => this.#inner.update(storeId, memoryId, input, { signal: attempt.signal })),
    );
  }

  delete(storeId: string, memoryId: string, opts: { expected_content_sha256?: string; signal?: AbortSignal } = {}): Promise<void> {
    const { signal, ...rest } = opts;
    const guarded = rest.expected_content_sha256 !== undefined;
    return this.#retrying('delete', storeId, signal, repeatRule('delete', guarded), (attempt) =>
      attempt.send(() => this.#inner.delete(storeId, memoryId, { ...rest, signal: attempt.signal })),
    );
  }

  /**
   * Runs `work` in bounded attempts, repeating `unavailable` failures while `repeatable` and the
   * deadline allow. `repeatable` may name the answers that, on a repeat, can be the store showing
   * an earlier attempt's own write: those leave the outcome unknown (see the class comment).
   */
  async #retrying<T>(
    operation: Operation,
    storeId: string,
    deadline: AbortSignal | undefined,
    repeatable: RepeatRule,
    work: (attempt: Attempt) => Promise<T>,
  ): Promise<T> {
    let lastFailure: StoreError | undefined;
    for (let n = 1; ; n++) {
      const attempt = new Attempt(operation, this.#timeoutMs, deadline);
      let failure: unknown;
      try {
        return await work(attempt);
      } catch (err) {
        failure = err;
      } finally {
        attempt.end();
        this.#requests?.add(storeId, WRITES.has(operation) ? 'write' : 'read', attempt.requests, n > 1);
      }
      if (attempt.timedOut) {
        this.#logger?.info('store call timed out; abandoned', { memory_store_id: storeId, operation, attempt: n, timeout_ms: this.#timeoutMs });
      }
      const error = asStoreError(failure);
      // After an attempt that may have landed, an answer it could explain is no answer.
      if (lastFailure && typeof repeatable !== 'boolean' && repeatable.has(error.kind)) throw stillUnknown(operation, n, error);
      // An answer (or a client breaking the contract) is final; only `unavailable` may pass.
      if (!reportsUnavailable(failure)) throw error;
      if (deadline?.aborted) throw gaveUp(operation, n, lastFailure, error);
      if (repeatable === false || deadline === undefined) throw error;
      lastFailure = error;
      const delayMs = callBackoffMs(n, this.#random(), error.retryAfterMs, this.#baseDelayMs, this.#maxDelayMs);
      const until = this.#retryUntil(storeId);
      if (until !== undefined && this.#monotonicMs() + delayMs > until) {
        // The pass's retry budget is spent (or this is a probe): the failure is the pass's to
        // report, and the breaker's to space out, rather than the agent's to wait for.
        // A probe (no retry at all) reports the failure as it came.
        throw until === Number.NEGATIVE_INFINITY ? error : gaveUp(operation, n, lastFailure, error, 'the retry budget');
      }
      this.#logger?.debug('store call failed (unavailable); retrying', {
        memory_store_id: storeId,
        operation,
        attempt: n,
        delay_ms: delayMs,
        error: error.message,
      });
      await raceAbort(this.#sleep(delayMs, deadline), deadline).catch(() => undefined);
      if (deadline.aborted) throw gaveUp(operation, n, lastFailure, lastFailure);
    }
  }
}

/**
 * One try of one call: the signal its inner call gets, aborted when the call times out or the
 * caller's signal aborts, and a guard that fails at that moment whether or not the inner call
 * ever settles. Exported for its test.
 */
export class Attempt {
  readonly signal: AbortSignal;
  timedOut = false;
  /** Requests this attempt sent: a call made, or (for a listing) each page its client requested. */
  requests = 0;
  /** Pages a listing's client said it requested (`onPage`); see `collect`. */
  pages = 0;
  readonly #controller = new AbortController();
  /** Why the attempt stopped (its timeout or the deadline), once it has. */
  #stoppedWith: StoreError | null = null;
  /**
   * The guarded calls still waiting, each by its reject. A call leaves the set when it settles,
   * so a listing of 10,000 items, one guarded step each, holds one entry at a time: racing each
   * step against one long-lived promise instead left a reaction on it per step, every item's
   * answer reachable until the attempt ended.
   */
  readonly #waiting = new Set<(err: StoreError) => void>();
  readonly #timer: NodeJS.Timeout;
  readonly #deadline: AbortSignal | undefined;
  readonly #onDeadline: () => void;

  constructor(operation: Operation, timeoutMs: number, deadline: AbortSignal | undefined) {
    this.signal = this.#controller.signal;
    this.#deadline = deadline;
    // Nobody may be waiting at the moment it fires (between two pages, say): the next guard then fails at once.
    const stop = (err: StoreError): void => {
      if (this.#stoppedWith) return;
      this.#stoppedWith = err;
      for (const reject of this.#waiting) reject(err);
      this.#waiting.clear();
    };
    const seconds = timeoutMs / 1000;
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      const err = new StoreError('unavailable', `store ${operation} timed out after ${seconds}s`);
      // Settled first, so the guard reports the timeout, not the inner call's reaction to the abort.
      stop(err);
      this.#controller.abort(err);
    }, timeoutMs);
    this.#onDeadline = () => {
      const why = deadline?.reason instanceof Error ? deadline.reason.message : 'the time bound ran out';
      const err = new StoreError('unavailable', `store ${operation} aborted: ${why}`, { cause: deadline?.reason });
      stop(err);
      this.#controller.abort(err);
    };
    if (deadline?.aborted) this.#onDeadline();
    else deadline?.addEventListener('abort', this.#onDeadline, { once: true });
  }

  /** The inner call, or this attempt's timeout or abort, whichever comes first. */
  guard<T>(call: () => PromiseLike<T>): Promise<T> {
    if (this.#stoppedWith) return Promise.reject(this.#stoppedWith);
    return new Promise<T>((resolve, reject) => {
      this.#waiting.add(reject);
      const settled = () => this.#waiting.delete(reject);
      // A client may throw synchronously; that is a failed call like any other. Once the attempt
      // has stopped, the inner call's answer (or rejection) settles nothing and is dropped, handled.
      new Promise<T>((inner) => inner(call())).then(
        (value) => {
          settled();
          resolve(value);
        },
        (err: unknown) => {
          settled();
          reject(err);
        },
      );
    });
  }

  /** One request: the call, counted when it is made (an attempt stopped before it sends nothing). */
  send<T>(call: () => PromiseLike<T>): Promise<T> {
    return this.guard(() => {
      this.requests++;
      return call();
    });
  }

  /** Progress was made (a listing page arrived): the timeout starts again. */
  progress(): void {
    this.#timer.refresh();
  }

  end(): void {
    clearTimeout(this.#timer);
    this.#deadline?.removeEventListener('abort', this.#onDeadline);
  }
}

/**
 * Every memory of one listing attempt; each step must come within the attempt's timeout. Its
 * requests are the pages the client said it requested; a client that said none, once the walk
 * started, is taken to have read full pages of `pageSize`: as many as the items it yielded fill,
 * at least one, and one more for the page a walk that failed was waiting for.
 */
async function collect<T>(iterator: AsyncIterator<T>, attempt: Attempt, pageSize: number): Promise<T[]> {
  const out: T[] = [];
  let started = false;
  let whole = false;
  try {
    for (;;) {
      const step = await attempt.guard(() => {
        started = true;
        return iterator.next();
      });
      if (step.done) {
        whole = true;
        return out;
      }
      out.push(step.value);
      attempt.progress();
    }
  } catch (err) {
    // Ask the listing to stop, without waiting for it: a stalled one never would.
    void new Promise((resolve) => resolve(iterator.return?.())).then(undefined, () => undefined);
    throw err;
  } finally {
    if (attempt.pages > 0) attempt.requests = attempt.pages;
    else if (started) attempt.requests = whole ? Math.max(1, Math.ceil(out.length / pageSize)) : Math.floor(out.length / pageSize) + 1;
  }
}

const WRITES: ReadonlySet<Operation> = new Set<Operation>(['create', 'update', 'delete']);

/** A repeat's answer that an earlier attempt of unknown outcome may explain: the outcome stays unknown. */
function stillUnknown(operation: Operation, attempts: number, answer: StoreError): StoreError {
  return new StoreError(
    'unavailable',
    `store ${operation} outcome unknown: attempt ${attempts} met ${answer.kind} after an earlier attempt that may have landed`,
    { cause: answer },
  );
}

/** Whether the client itself reported the failure as `unavailable` (a timeout here counts). */
function reportsUnavailable(err: unknown): boolean {
  return (err as { kind?: unknown } | null)?.kind === 'unavailable';
}

/** The failure to report once the deadline stopped the retries: after several attempts, with the last real failure. */
function gaveUp(
  operation: Operation,
  attempts: number,
  lastFailure: StoreError | undefined,
  current: StoreError,
  limit = 'the time bound',
): StoreError {
  if (!lastFailure) return current;
  return new StoreError(
    'unavailable',
    `store ${operation} gave up at ${limit} after ${attempts} attempt${attempts === 1 ? '' : 's'}; last failure: ${lastFailure.message}`,
    { cause: lastFailure, ...(current.retryAfterMs !== undefined && { retryAfterMs: current.retryAfterMs }) },
  );
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
