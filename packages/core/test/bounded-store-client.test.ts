import { describe, expect, it } from 'vitest';
import { StoreError, type StoreClient, type StoreMemory, type StoreMemoryVersion } from '@memory-mounter/core';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Attempt, BoundedStoreClient, type BoundedStoreClientOptions } from '../src/remote/bounded-store-client.js';
import { RequestCounter } from '../src/remote/request-count.js';

/** The StoreClient decorator alone: each call bounded, the safe ones retried (SPEC 6.2). */

const memory = (id: string): StoreMemory => ({ id, path: `/${id}.md`, content_sha256: 'sha' });
const unavailable = () => new StoreError('unavailable', 'injected 503', { status: 503 });
const never = <T>() => new Promise<T>(() => undefined);

/** An inner client whose every method is scripted per test; unscripted ones throw. */
function scripted(over: Partial<StoreClient>): StoreClient {
  const missing = () => {
    throw new Error('not scripted');
  };
  return { list: missing, get: missing, create: missing, update: missing, delete: missing, ...over } as StoreClient;
}

/** Any StoreClient method, for scripting. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ScriptedCall = (...args: any[]) => Promise<any>;

/** Answers each call with the next outcome of `outcomes` (an Error is thrown), recording its arguments. */
function sequence(outcomes: unknown[], calls: unknown[][]): ScriptedCall {
  return (...args: unknown[]) => {
    calls.push(args);
    const next = outcomes.shift();
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  };
}

/** Sleeps recorded, and resolved at once. */
function instantSleep(delays: number[]): BoundedStoreClientOptions['sleep'] {
  return async (ms) => {
    delays.push(ms);
  };
}

function bounded(inner: StoreClient, over: Partial<BoundedStoreClientOptions> = {}): BoundedStoreClient {
  return new BoundedStoreClient(inner, { requestTimeoutMs: 100, random: () => 0.5, sleep: instantSleep([]), ...over });
}

async function failure(promise: Promise<unknown>): Promise<StoreError> {
  const err = await promise.then(
    () => expect.fail('expected a failure'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  return err as StoreError;
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

const live = () => new AbortController().signal;

describe('every call is bounded by requestTimeout, whatever the inner client does with its signal', () => {
  it('a call that never answers and ignores its signal fails as unavailable, "timed out after N s", and its signal is aborted', async () => {
    let seen: AbortSignal | undefined;
    const client = bounded(
      scripted({
        get: (_s, _m, opts) => {
          seen = opts?.signal;
          return never();
        },
      }),
      { requestTimeoutMs: 50 },
    );
    const started = Date.now();
    const err = await failure(client.get('store', 'mem_1'));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(err.kind).toBe('unavailable');
    expect(err.message).toMatch(/timed out after 0\.05s/);
    expect(seen?.aborted).toBe(true);
  });

  it('the caller aborting fails the call at once, though the inner call ignores it', async () => {
    const controller = new AbortController();
    const client = bounded(scripted({ create: () => never() }), { requestTimeoutMs: 60_000 });
    const pending = client.create('store', { path: '/a.md', content: 'a' }, { signal: controller.signal });
    controller.abort(new Error('syncTimeout (1 s) ran out'));
    const err = await failure(pending);
    expect(err.kind).toBe('unavailable');
    expect(err.message).toMatch(/aborted: syncTimeout \(1 s\) ran out/);
  });

  it('an abandoned call that rejects later is not an unhandled rejection', async () => {
    const client = bounded(
      scripted({ get: () => new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 80)) }),
      { requestTimeoutMs: 20 },
    );
    await failure(client.get('store', 'mem_1'));
    // vitest fails the run on an unhandled rejection; give the late one time to land.
    await new Promise((resolve) => setTimeout(resolve, 120));
  });

  it('a listing is bounded page by page: one stalled page fails it, however long the listing is', async () => {
    async function* slowButSteady(): AsyncGenerator<StoreMemory> {
      for (let i = 0; i < 6; i++) {
        await new Promise((resolve) => setTimeout(resolve, 30));
        yield memory(`m${i}`);
      }
    }
    const steady = bounded(scripted({ list: () => slowButSteady() }), { requestTimeoutMs: 80 });
    // 6 x 30 ms is longer than the timeout, but no single step is.
    expect(await collect(steady.list('store'))).toHaveLength(6);

    async function* stalls(): AsyncGenerator<StoreMemory> {
      yield memory('m0');
      await never();
    }
    const stalled = bounded(scripted({ list: () => stalls() }), { requestTimeoutMs: 50 });
    const err = await failure(collect(stalled.list('store')));
    expect(err.message).toMatch(/timed out after 0\.05s/);
  });
});

describe('unavailable is retried until the deadline, where a repeat is safe', () => {
  it('get: retried with exponential backoff and full jitter, then succeeds', async () => {
    const calls: unknown[][] = [];
    const delays: number[] = [];
    const client = bounded(scripted({ get: sequence([unavailable(), unavailable(), unavailable(), memory('m')], calls) }), {
      sleep: instantSleep(delays),
      random: () => 0.5,
      baseDelayMs: 100,
      maxDelayMs: 300,
    });
    expect(await client.get('store', 'm', { signal: live() })).toEqual(memory('m'));
    expect(calls).toHaveLength(4);
    // random x min(max, base x 2^(n-1)): 0.5 x 100, 0.5 x 200, 0.5 x 300 (capped)
    expect(delays).toEqual([50, 100, 150]);
  });

  it('a jitter draw of 0 retries at once; the draw scales the whole ceiling', async () => {
    const delays: number[] = [];
    const draws = [0, 0.999];
    const client = bounded(scripted({ get: sequence([unavailable(), unavailable(), memory('m')], []) }), {
      sleep: instantSleep(delays),
      random: () => draws.shift()!,
      baseDelayMs: 1_000,
    });
    await client.get('store', 'm', { signal: live() });
    expect(delays).toEqual([0, 1_998]);
  });

  it('update with expected_content_sha256: retried, each attempt carrying the precondition', async () => {
    const calls: unknown[][] = [];
    const client = bounded(scripted({ update: sequence([unavailable(), unavailable(), memory('m')], calls) }));
    await client.update('store', 'm', { content: 'new', expected_content_sha256: 'abc' }, { signal: live() });
    expect(calls).toHaveLength(3);
    for (const [, , input] of calls) expect(input).toEqual({ content: 'new', expected_content_sha256: 'abc' });
  });

  it('delete with expected_content_sha256: retried, each attempt carrying the precondition', async () => {
    const calls: unknown[][] = [];
    const client = bounded(scripted({ delete: sequence([unavailable(), undefined], calls) }));
    await client.delete('store', 'm', { expected_content_sha256: 'abc', signal: live() });
    expect(calls).toHaveLength(2);
    for (const [, , opts] of calls) expect(opts).toMatchObject({ expected_content_sha256: 'abc' });
  });

  it.each([
    ['create', (c: StoreClient, signal: AbortSignal) => c.create('store', { path: '/a.md', content: 'a' }, { signal })],
    ['an update without a precondition', (c: StoreClient, signal: AbortSignal) => c.update('store', 'm', { content: 'a' }, { signal })],
    ['a delete without a precondition', (c: StoreClient, signal: AbortSignal) => c.delete('store', 'm', { signal })],
  ])('%s is never retried', async (_label, call) => {
    const calls: unknown[][] = [];
    const outcome = sequence([unavailable(), memory('m')], calls);
    const client = bounded(scripted({ create: outcome, update: outcome, delete: outcome }));
    const err = await failure(call(client, live()));
    expect(err.kind).toBe('unavailable');
    expect(calls).toHaveLength(1);
  });

  it('a timeout is retried like any unavailable failure', async () => {
    const calls: unknown[][] = [];
    let n = 0;
    const client = bounded(
      scripted({
        get: (...args) => {
          calls.push(args);
          return ++n === 1 ? never() : Promise.resolve(memory('m'));
        },
      }),
      { requestTimeoutMs: 30 },
    );
    expect(await client.get('store', 'm', { signal: live() })).toEqual(memory('m'));
    expect(calls).toHaveLength(2);
  });

  it('a listing that fails part-way is restarted from scratch, and no memory is yielded twice', async () => {
    let attempt = 0;
    async function* flaky(): AsyncGenerator<StoreMemory> {
      attempt++;
      yield memory('m0');
      yield memory('m1');
      if (attempt === 1) throw unavailable();
      yield memory('m2');
    }
    const client = bounded(scripted({ list: () => flaky() }));
    const listed = await collect(client.list('store', { signal: live() }));
    expect(listed.map((m) => m.id)).toEqual(['m0', 'm1', 'm2']);
    expect(attempt).toBe(2);
  });

  it('an answer is final: precondition_failed, not_found and the rest are not retried', async () => {
    for (const kind of ['precondition_failed', 'not_found', 'rejected', 'unauthorized', 'path_conflict'] as const) {
      const calls: unknown[][] = [];
      const client = bounded(scripted({ update: sequence([new StoreError(kind, kind), memory('m')], calls) }));
      const err = await failure(client.update('store', 'm', { content: 'x', expected_content_sha256: 'abc' }, { signal: live() }));
      expect(err.kind).toBe(kind);
      expect(calls).toHaveLength(1);
    }
  });

  it('a client breaking the contract (a plain Error) is reported as unavailable but not retried', async () => {
    const calls: unknown[][] = [];
    const client = bounded(scripted({ get: sequence([new TypeError('client bug'), memory('m')], calls) }));
    const err = await failure(client.get('store', 'm', { signal: live() }));
    expect(err.kind).toBe('unavailable');
    expect(err.message).toMatch(/client bug/);
    expect(calls).toHaveLength(1);
  });

  it('without a signal there is no deadline to stop retries, so the call is tried once', async () => {
    const calls: unknown[][] = [];
    const client = bounded(scripted({ get: sequence([unavailable(), memory('m')], calls) }));
    await failure(client.get('store', 'm'));
    expect(calls).toHaveLength(1);
  });

  it('retries stop at the deadline, never sleeping past it, and report the last real failure', async () => {
    const controller = new AbortController();
    const calls: unknown[][] = [];
    const client = bounded(
      scripted({
        get: (...args) => {
          calls.push(args);
          return Promise.reject(unavailable());
        },
      }),
      // A sleep that would never end on its own: the deadline must cut it.
      { sleep: () => never(), random: () => 1 },
    );
    const pending = client.get('store', 'm', { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const aborted = Date.now();
    controller.abort(new Error('syncTimeout (0.5 s) ran out'));
    const err = await failure(pending);
    expect(Date.now() - aborted).toBeLessThan(100);
    expect(err.kind).toBe('unavailable');
    expect(err.message).toMatch(/gave up at the time bound after 1 attempt; last failure: injected 503/);
    expect(calls).toHaveLength(1);
  });

  it('with the real sleep, a long backoff ends when the deadline does', async () => {
    const controller = new AbortController();
    const client = new BoundedStoreClient(scripted({ get: () => Promise.reject(unavailable()) }), {
      requestTimeoutMs: 1_000,
      baseDelayMs: 60_000,
      maxDelayMs: 60_000,
      random: () => 0.99,
    });
    setTimeout(() => controller.abort(new Error('deadline')), 50);
    const started = Date.now();
    await failure(client.get('store', 'm', { signal: controller.signal }));
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('a signal already aborted: no call is made', async () => {
    const calls: unknown[][] = [];
    const controller = new AbortController();
    controller.abort(new Error('finalSyncTimeout (30 s) ran out'));
    const client = bounded(scripted({ get: sequence([memory('m')], calls) }));
    const err = await failure(client.get('store', 'm', { signal: controller.signal }));
    expect(err.message).toMatch(/aborted: finalSyncTimeout/);
    expect(calls).toHaveLength(0);
  });
});

describe('a repeat that may meet its own earlier attempt leaves the outcome unknown (SPEC 6.6)', () => {
  const answer = (kind: 'precondition_failed' | 'path_conflict' | 'not_found') => new StoreError(kind, `injected ${kind}`, { status: 409 });

  it.each(['precondition_failed', 'path_conflict'] as const)(
    'an update repeated after unavailable that meets %s fails unavailable, outcome unknown, the answer its cause; no further attempt',
    async (kind) => {
      const calls: unknown[][] = [];
      const met = answer(kind);
      const client = bounded(scripted({ update: sequence([unavailable(), met, memory('m')], calls) }));
      const err = await failure(client.update('store', 'm', { content: 'x', expected_content_sha256: 'abc' }, { signal: live() }));
      expect(err.kind).toBe('unavailable');
      expect(err.cause).toBe(met);
      expect(err.message).toMatch(new RegExp(`outcome unknown: attempt 2 met ${kind}`));
      expect(calls).toHaveLength(2);
    },
  );

  it('a path-only update (a rename) repeated after unavailable that meets path_conflict: unknown too', async () => {
    const client = bounded(scripted({ update: sequence([unavailable(), unavailable(), answer('path_conflict')], []) }));
    const err = await failure(client.update('store', 'm', { path: '/b.md', expected_content_sha256: 'abc' }, { signal: live() }));
    expect(err.kind).toBe('unavailable');
    expect((err.cause as StoreError).kind).toBe('path_conflict');
  });

  it('an update repeated after unavailable that meets not_found is that answer: the memory is gone whatever the first try did', async () => {
    const client = bounded(scripted({ update: sequence([unavailable(), answer('not_found')], []) }));
    const err = await failure(client.update('store', 'm', { content: 'x', expected_content_sha256: 'abc' }, { signal: live() }));
    expect(err.kind).toBe('not_found');
  });

  it('on the first attempt the same answers are answers: nothing was sent before', async () => {
    for (const kind of ['precondition_failed', 'path_conflict'] as const) {
      const client = bounded(scripted({ update: sequence([answer(kind)], []) }));
      const err = await failure(client.update('store', 'm', { content: 'x', expected_content_sha256: 'abc' }, { signal: live() }));
      expect(err.kind).toBe(kind);
    }
  });

  it('a repeat that succeeds is a success, whatever the first try did', async () => {
    const client = bounded(scripted({ update: sequence([unavailable(), memory('m')], []) }));
    expect(await client.update('store', 'm', { content: 'x', expected_content_sha256: 'abc' }, { signal: live() })).toEqual(memory('m'));
  });

  it('a guarded delete repeated after unavailable: not_found and precondition_failed stay answers (our own delete leaves nothing to compare)', async () => {
    for (const kind of ['not_found', 'precondition_failed'] as const) {
      const client = bounded(scripted({ delete: sequence([unavailable(), answer(kind)], []) }));
      const err = await failure(client.delete('store', 'm', { expected_content_sha256: 'abc', signal: live() }));
      expect(err.kind).toBe(kind);
    }
  });
});

describe('the optional listings (change feed, one folder) are passed through, bounded and retried alike', () => {
  const version = (id: string): StoreMemoryVersion => ({
    id,
    memory_id: 'mem_1',
    operation: 'modified',
    path: '/a.md',
    content_sha256: 'sha',
    created_at: '2026-01-01T00:00:00.000Z',
    redacted_at: null,
  });

  it('absent from the inner client, absent here: the engine then lists in full', () => {
    const client = bounded(scripted({}));
    expect(client.listVersions).toBeUndefined();
    expect(client.listFolder).toBeUndefined();
  });

  it('looked up on the inner client at each use, like every other method', async () => {
    const inner = scripted({});
    const client = bounded(inner);
    inner.listVersions = async function* () {
      yield version('v1');
    };
    expect((await collect(client.listVersions!('store', { signal: live() }))).map((v) => v.id)).toEqual(['v1']);
  });

  it('listVersions: filters passed on, a failure part-way restarts the walk, nothing is yielded twice', async () => {
    let attempt = 0;
    const seen: unknown[] = [];
    const client = bounded(
      scripted({
        listVersions: async function* (_store, opts) {
          attempt++;
          seen.push(opts?.createdAtGte);
          yield version('v1');
          if (attempt === 1) throw unavailable();
          yield version('v2');
        },
      }),
    );
    const listed = await collect(client.listVersions!('store', { createdAtGte: '2026-01-01T00:00:00.000Z', signal: live() }));
    expect(listed.map((v) => v.id)).toEqual(['v1', 'v2']);
    expect(attempt).toBe(2);
    expect(seen).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z']);
  });

  it('listVersions: a refusal is final (the engine stops asking); a stalled page times out', async () => {
    const refused = bounded(
      scripted({
        listVersions: () => {
          throw new StoreError('not_found', 'no such endpoint', { status: 404 });
        },
      }),
    );
    expect((await failure(collect(refused.listVersions!('store', { signal: live() })))).kind).toBe('not_found');
    const stalled = bounded(
      scripted({ listVersions: () => ({ [Symbol.asyncIterator]: () => ({ next: () => never<IteratorResult<StoreMemoryVersion>>() }) }) }),
      { requestTimeoutMs: 50 },
    );
    const err = await failure(collect(stalled.listVersions!('store')));
    expect(err.message).toMatch(/listVersions timed out/);
  });

  it('listFolder: passed on with its folder, retried from scratch', async () => {
    let attempt = 0;
    const client = bounded(
      scripted({
        listFolder: async function* (_store, opts) {
          attempt++;
          if (attempt === 1) throw unavailable();
          yield { type: 'prefix', path: `${opts?.pathPrefix}x/` };
          yield { type: 'memory', memory: memory('m') };
        },
      }),
    );
    const entries = await collect(client.listFolder!('store', { pathPrefix: '/a/', signal: live() }));
    expect(entries).toEqual([{ type: 'prefix', path: '/a/x/' }, { type: 'memory', memory: memory('m') }]);
    expect(attempt).toBe(2);
  });
});

describe('retry-after and the retry budget (SPEC 6.7)', () => {
  const throttled = (ms: number) => new StoreError('unavailable', 'injected 429', { status: 429, retryAfterMs: ms });

  it("a retry waits at least the store's retry-after, even when the backoff draw is shorter", async () => {
    const delays: number[] = [];
    const calls: unknown[][] = [];
    const client = bounded(scripted({ get: sequence([throttled(2_000), memory('m')], calls) }), { sleep: instantSleep(delays), random: () => 0.5 });
    expect(await client.get('store', 'm', { signal: live() })).toEqual(memory('m'));
    expect(delays).toEqual([2_000]);
    expect(calls).toHaveLength(2);
  });

  it('no retry starts past retryUntil: the failure is returned at once, with its retry-after', async () => {
    const calls: unknown[][] = [];
    const delays: number[] = [];
    const clock = 1_000;
    const client = bounded(scripted({ get: sequence([throttled(30_000), memory('m')], calls) }), {
      sleep: instantSleep(delays),
      monotonicMs: () => clock,
      // A 5 s budget from now: a 30 s retry-after cannot be waited out within it.
      retryUntil: () => clock + 5_000,
    });
    const err = await failure(client.get('store', 'm', { signal: live() }));
    expect(err.kind).toBe('unavailable');
    expect(err.retryAfterMs).toBe(30_000);
    expect(calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('retries go on while the budget allows, then stop: attempts bounded by the budget, not the deadline', async () => {
    let clock = 0;
    const calls: unknown[][] = [];
    const client = bounded(scripted({ list: (...args: unknown[]) => { calls.push(args); return failingListing(); } }), {
      // Each sleep moves the clock by what it slept: backoff 100, 200, 400, ... (random 0.999).
      sleep: async (ms) => {
        clock += ms;
      },
      random: () => 0.999,
      monotonicMs: () => clock,
      retryUntil: () => 1_000,
    });
    const err = await failure(collect(client.list('store', { signal: live() })));
    expect(err.message).toMatch(/gave up at the retry budget after \d+ attempts/);
    // 99 + 199 + 399 = 697 ms of sleeps fit; the next (799) would end past 1,000.
    expect(calls).toHaveLength(4);
  });

  it('retryUntil -Infinity (a probe): one request, no retry', async () => {
    const calls: unknown[][] = [];
    const client = bounded(scripted({ get: sequence([unavailable(), memory('m')], calls) }), { retryUntil: () => -Infinity });
    await failure(client.get('store', 'm', { signal: live() }));
    expect(calls).toHaveLength(1);
  });

  it('retryUntil is asked per store: another store keeps its retries', async () => {
    const calls: unknown[][] = [];
    const client = bounded(scripted({ get: sequence([unavailable(), memory('m')], calls) }), {
      retryUntil: (storeId) => (storeId === 'probed' ? -Infinity : undefined),
    });
    expect(await client.get('healthy', 'm', { signal: live() })).toEqual(memory('m'));
    expect(calls).toHaveLength(2);
  });
});

async function* failingListing(): AsyncIterable<StoreMemory> {
  throw unavailable();
}

describe('requests are counted per store as each attempt ends: calls made, and the pages of listings', () => {
  /** A listing of `n` memories in pages of `size`, telling `onPage` of each page when `tell`; `failAfter` pages, then unavailable. */
  function paged(n: number, size: number, opts: { tell: boolean; failAfter?: number }): StoreClient['list'] {
    return async function* (_storeId, listOpts) {
      for (let page = 0; page * size < Math.max(n, 1); page++) {
        if (opts.tell) listOpts?.onPage?.();
        if (opts.failAfter !== undefined && page >= opts.failAfter) throw unavailable();
        for (let i = page * size; i < Math.min(n, (page + 1) * size); i++) yield memory(`m${i}`);
      }
    };
  }

  it('each attempt of a call is one request, a repeat a retry, and a store is counted apart from another', async () => {
    const requests = new RequestCounter();
    const client = bounded(
      scripted({ get: sequence([unavailable(), unavailable(), memory('m')], []), create: sequence([unavailable()], []), update: sequence([memory('m')], []) }),
      { requests },
    );
    await client.get('s1', 'm', { signal: live() });
    await failure(client.create('s1', { path: '/m.md', content: 'x' }, { signal: live() }));
    await client.update('s2', 'm', { content: 'y', expected_content_sha256: 'sha' }, { signal: live() });
    expect(requests.of('s1')).toEqual({ total: 4, reads: 3, writes: 1, retries: 2 });
    expect(requests.of('s2')).toEqual({ total: 1, reads: 0, writes: 1, retries: 0 });
  });

  it('a call the deadline stopped before it was made sends nothing', async () => {
    const requests = new RequestCounter();
    const stop = new AbortController();
    stop.abort();
    await failure(bounded(scripted({ get: sequence([memory('m')], []) }), { requests }).get('s', 'm', { signal: stop.signal }));
    expect(requests.of('s').total).toBe(0);
  });

  it('a listing whose client tells each page: its pages, those of a walk that failed included', async () => {
    const requests = new RequestCounter();
    let calls = 0;
    const list: StoreClient['list'] = (id, opts) => (calls++ === 0 ? paged(250, 100, { tell: true, failAfter: 2 }) : paged(250, 100, { tell: true }))(id, opts);
    expect(await collect(bounded(scripted({ list }), { requests }).list('s', { signal: live() }))).toHaveLength(250);
    // Three pages asked for by the failed walk (the third failed), three by the whole one.
    expect(requests.of('s')).toEqual({ total: 6, reads: 6, writes: 0, retries: 3 });
  });

  it('a listing whose client tells nothing: full pages of its kind, and the page a failed walk was waiting for', async () => {
    const requests = new RequestCounter();
    await collect(bounded(scripted({ list: paged(250, 100, { tell: false }) }), { requests }).list('s', { signal: live() }));
    expect(requests.of('s').total).toBe(3);
    await collect(bounded(scripted({ list: paged(0, 100, { tell: false }) }), { requests }).list('empty', { signal: live() }));
    expect(requests.of('empty').total).toBe(1);
    await collect(bounded(scripted({ list: paged(45, 20, { tell: false }) }), { requests }).list('content', { withContent: true, signal: live() }));
    expect(requests.of('content').total).toBe(3);
    await failure(collect(bounded(scripted({ list: paged(250, 100, { tell: false, failAfter: 1 }) }), { requests }).list('failed')));
    expect(requests.of('failed').total).toBe(2);
  });
});

describe('an attempt holds no answer it has handed over', () => {
  // A listing is one attempt of thousands of guarded steps. Each step raced against one
  // long-lived promise left a reaction on it that kept the step's answer reachable until the
  // attempt ended: every page's items twice over, promoted by the scavenger, for nothing.
  it('a guarded answer the caller dropped is collectable while the attempt lives on', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const attempt = new Attempt('list', 60_000, undefined);
    let answer: { items: number[] } | null = { items: Array.from({ length: 1000 }, (_, i) => i) };
    const weak = new WeakRef(answer);
    expect((await attempt.guard(() => Promise.resolve(answer!))).items).toHaveLength(1000);
    answer = null;
    // Let the guard's own settling run, then collect.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(weak.deref()).toBeUndefined();
    // The attempt is still alive here, and still guards.
    await expect(attempt.guard(() => Promise.resolve(1))).resolves.toBe(1);
    attempt.end();
  });

  it('a step guarded after the attempt stopped fails at once with why it stopped', async () => {
    const deadline = new AbortController();
    const attempt = new Attempt('list', 60_000, deadline.signal);
    const pending = attempt.guard(never);
    deadline.abort(new Error('pass deadline'));
    await expect(pending).rejects.toThrow(/store list aborted: pass deadline/);
    let called = false;
    await expect(attempt.guard(() => ((called = true), Promise.resolve(1)))).rejects.toThrow(/store list aborted: pass deadline/);
    expect(called).toBe(false);
    attempt.end();
  });
});
