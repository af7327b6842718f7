import { afterEach, describe, expect, it, vi } from 'vitest';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { MemoryMounter, StoreError, type StoreClient } from '@memory-mounter/core';
import { RecordingLogger } from './harness.js';

/**
 * One failure stays local (SPEC 6.7): an unavailable store is backed off from and probed, its
 * `retry-after` honoured, a tool call held at most `syncWait`, and durations measured on a
 * monotonic clock so a wall clock set back or forward neither stops syncs nor skips a grace.
 */

const ROOT = '/host/mnt/memory';
const HEALTHY = 'memstore_healthy';
const SICK = 'memstore_sick';
const resources = [
  { type: 'memory_store', memory_store_id: HEALTHY, name: 'healthy' },
  { type: 'memory_store', memory_store_id: SICK, name: 'sick' },
];

interface Outage {
  /** Store ids that answer every request `unavailable` (with this retry-after, ms, if set). */
  down: Map<string, number | undefined>;
  /** Requests each store received. */
  requests: Map<string, number>;
}

/** `inner`, with the stores in `outage.down` failing every request as a 503 would (and counting them all). */
function withOutage(inner: InMemoryStoreClient, outage: Outage): StoreClient {
  const hit = (storeId: string) => {
    outage.requests.set(storeId, (outage.requests.get(storeId) ?? 0) + 1);
    if (!outage.down.has(storeId)) return;
    const retryAfterMs = outage.down.get(storeId);
    throw new StoreError('unavailable', 'injected 503', { status: 503, ...(retryAfterMs !== undefined && { retryAfterMs }) });
  };
  async function* listing<T>(storeId: string, inner: () => AsyncIterable<T>): AsyncIterable<T> {
    hit(storeId);
    yield* inner();
  }
  return {
    list: (id, o) => listing(id, () => inner.list(id, o)),
    listVersions: (id, o) => listing(id, () => inner.listVersions(id, o)),
    listFolder: (id, o) => listing(id, () => inner.listFolder(id, o)),
    get: async (id, m, o) => (hit(id), inner.get(id, m, o)),
    create: async (id, i, o) => (hit(id), inner.create(id, i, o)),
    update: async (id, m, i, o) => (hit(id), inner.update(id, m, i, o)),
    delete: async (id, m, o) => (hit(id), inner.delete(id, m, o)),
  };
}

function setup(options: Record<string, unknown> = {}) {
  const inner = new InMemoryStoreClient();
  inner.seed(HEALTHY, { '/h.md': 'healthy' });
  inner.seed(SICK, { '/s.md': 'sick' });
  const outage: Outage = { down: new Map(), requests: new Map() };
  const fs = new MemfsFileSystem({ [ROOT]: null });
  const logger = new RecordingLogger();
  const clock = { now: 1_000_000 };
  const mounter = new MemoryMounter({
    storeClient: withOutage(inner, outage),
    fileSystem: fs,
    memoryRoot: ROOT,
    logger,
    newFileSettle: 0,
    memory_sync_interval: 15,
    // Short, so a failing pass ends before syncWait and each call gets its report back.
    retryBudget: 0.2,
    now: () => clock.now,
    ...options,
  });
  const requestsTo = (id: string) => outage.requests.get(id) ?? 0;
  const write = (store: string, path: string, text: string) => fs.vol.writeFileSync(`${ROOT}/${store}${path}`, text);
  return { inner, outage, fs, logger, clock, mounter, requestsTo, write };
}

describe('the circuit breaker: an unavailable store is skipped, then probed with one request', () => {
  it('ten minutes of outage: skipped passes send nothing, each probe one request; the healthy store syncs every pass; the edit made meanwhile is pushed by the probe that finds the store back', async () => {
    const t = setup();
    await t.mounter.materialize(resources);
    t.outage.down.set(SICK, undefined);
    t.write('sick', '/during.md', 'written while the store was down');

    const probes: number[] = [];
    let skipped = 0;
    const healthyPushes: string[] = [];
    const started = t.clock.now;
    for (let pass = 0; t.clock.now - started < 600_000; pass++) {
      t.clock.now += 15_000;
      t.write('healthy', `/edit-${pass}.md`, `edit ${pass}`);
      const before = t.requestsTo(SICK);
      const report = await t.mounter.reconcile();
      expect(report).not.toBeNull();
      const sick = report!.stores.find((s) => s.memoryStoreId === SICK)!;
      const healthy = report!.stores.find((s) => s.memoryStoreId === HEALTHY)!;
      healthyPushes.push(...healthy.pushed);
      const sent = t.requestsTo(SICK) - before;
      if (pass === 0) {
        // The first failing pass retries within its budget (real time), then the store is
        // reported unavailable.
        expect(sick).toMatchObject({ status: 'failed', code: 'store_error' });
      } else if (sick.code === 'backing_off') {
        expect(sick.status).toBe('skipped');
        expect(sent).toBe(0);
        skipped++;
      } else {
        expect(sick).toMatchObject({ status: 'failed' });
        expect(sent).toBe(1);
        probes.push(pass);
      }
    }
    // Every healthy edit was pushed by the pass right after it.
    expect(healthyPushes).toHaveLength(Math.ceil(600_000 / 15_000));
    // Delays grow from one interval (jittered to half of it at least) to 5 minutes: 600 s of
    // outage holds at most 1 + 2 + 4 + 8 + 16 + 20 intervals' worth of steps.
    expect(probes.length).toBeGreaterThanOrEqual(3);
    expect(probes.length).toBeLessThanOrEqual(8);
    expect(skipped).toBeGreaterThan(probes.length);
    const gaps = probes.slice(1).map((p, i) => p - probes[i]!);
    expect(gaps.at(-1)).toBeGreaterThanOrEqual(gaps[0]!);
    // Logged once when it opened, not at every skipped pass.
    expect(t.logger.warnings().filter((l) => l.msg.startsWith('store unavailable'))).toHaveLength(1);
    const status = t.mounter.status().find((s) => s.memoryStoreId === SICK)!;
    expect(status.backoff).toMatchObject({ failures: probes.length + 1, probing: false });
    expect(Date.parse(status.backoff!.nextProbeAt)).toBeGreaterThan(t.clock.now);

    // The store comes back: the next probe syncs, and pushes what was written meanwhile.
    t.outage.down.delete(SICK);
    let report = null;
    for (let i = 0; i < 40; i++) {
      t.clock.now += 15_000;
      report = await t.mounter.reconcile();
      const sick = report!.stores.find((s) => s.memoryStoreId === SICK)!;
      if (sick.code !== 'backing_off') break;
    }
    const sick = report!.stores.find((s) => s.memoryStoreId === SICK)!;
    expect(sick.status).toBe('synced');
    expect(sick.pushed).toEqual(['/during.md']);
    expect(t.mounter.status().find((s) => s.memoryStoreId === SICK)!.backoff).toBeNull();
    expect(t.logger.lines.filter((l) => l.msg.startsWith('store reachable again'))).toHaveLength(1);
    await t.mounter.finalize();
  });

  it("retry-after: no request to the store sooner than it asked, even when the breaker's own delay is shorter", async () => {
    const t = setup();
    await t.mounter.materialize(resources);
    t.outage.down.set(SICK, 30_000);
    t.clock.now += 15_000;
    await t.mounter.reconcile();
    const afterFailure = t.requestsTo(SICK);
    const failedAt = t.clock.now;
    // The breaker's first delay is at most one interval (15 s); retry-after asks for 30 s.
    for (const step of [10_000, 5_000, 14_999]) {
      t.clock.now = failedAt + step;
      const report = await t.mounter.reconcile({ force: true });
      expect(report!.stores.find((s) => s.memoryStoreId === SICK)!.code).toBe('backing_off');
    }
    expect(t.requestsTo(SICK)).toBe(afterFailure);
    t.clock.now = failedAt + 29_999;
    await t.mounter.reconcile({ force: true });
    expect(t.requestsTo(SICK)).toBe(afterFailure);
    t.clock.now = failedAt + 30_000;
    t.outage.down.delete(SICK);
    const report = await t.mounter.reconcile({ force: true });
    expect(report!.stores.find((s) => s.memoryStoreId === SICK)!.status).toBe('synced');
    await t.mounter.finalize();
  });

  it('finalize ignores the breaker: it tries the backed-off store within its whole window', async () => {
    const t = setup({ finalSyncTimeout: 2 });
    await t.mounter.materialize(resources);
    t.outage.down.set(SICK, undefined);
    t.clock.now += 15_000;
    await t.mounter.reconcile();
    t.write('sick', '/late.md', 'late');
    const before = t.requestsTo(SICK);
    // Back before finalize, but while the breaker would still skip the store.
    t.outage.down.delete(SICK);
    const report = await t.mounter.finalize();
    expect(t.requestsTo(SICK)).toBeGreaterThan(before);
    expect(report.unpushed).toEqual([]);
    expect(t.inner.snapshot(SICK)['/late.md']).toBe('late');
  });

  it('a store that answers (403) closes the breaker: a refusal is no outage', async () => {
    const t = setup();
    await t.mounter.materialize(resources);
    t.outage.down.set(SICK, undefined);
    t.clock.now += 15_000;
    await t.mounter.reconcile();
    expect(t.mounter.status().find((s) => s.memoryStoreId === SICK)!.backoff).not.toBeNull();
    t.outage.down.delete(SICK);
    t.inner.failNext('list', 'unauthorized', 5);
    t.inner.failNext('listVersions', 'unauthorized', 5);
    for (let i = 0; i < 40 && t.mounter.status().find((s) => s.memoryStoreId === SICK)!.backoff; i++) {
      t.clock.now += 15_000;
      await t.mounter.reconcile();
    }
    expect(t.mounter.status().find((s) => s.memoryStoreId === SICK)!.backoff).toBeNull();
    await t.mounter.finalize({ outcome: 'aborted' });
  });
});

describe('an ordinary pass spends a small retry budget, not the whole pass deadline', () => {
  it('a store down for the whole pass: the pass ends at the budget, long before syncTimeout', async () => {
    // Real clocks: the budget is measured on the monotonic clock.
    const inner = new InMemoryStoreClient();
    inner.seed(SICK, { '/s.md': 'sick' });
    const outage: Outage = { down: new Map(), requests: new Map() };
    const mounter = new MemoryMounter({
      storeClient: withOutage(inner, outage),
      fileSystem: new MemfsFileSystem({ [ROOT]: null }),
      memoryRoot: ROOT,
      logger: new RecordingLogger(),
      retryBudget: 0.3,
      syncTimeout: 30,
    });
    await mounter.materialize([resources[1]!]);
    outage.down.set(SICK, undefined);
    const started = performance.now();
    const report = await mounter.reconcile({ force: true });
    const tookMs = performance.now() - started;
    expect(report!.stores[0]).toMatchObject({ status: 'failed', code: 'store_error' });
    expect(report!.stores[0]!.reason).toMatch(/retry budget/);
    // Bounded by the budget plus one backoff step (at most 3 s), not by the 30 s deadline.
    expect(tookMs).toBeLessThan(5_000);
    outage.down.delete(SICK);
    await mounter.finalize({ outcome: 'aborted' });
  });
});

describe('a tool call waits at most syncWait; the pass goes on and the next call joins it', () => {
  it('a hanging store: unforced reconcile resolves null within syncWait, and no second pass starts while the first runs', async () => {
    const inner = new InMemoryStoreClient();
    inner.seed(SICK, { '/s.md': 'sick' });
    const gate = { open: true, release: () => undefined as void };
    let listings = 0;
    const client: StoreClient = {
      ...inner,
      list: (id, o) => {
        listings++;
        return inner.list(id, o);
      },
      listVersions: (id, o) =>
        (async function* () {
          listings++;
          if (!gate.open) await new Promise<void>((resolve) => (gate.release = resolve));
          yield* inner.listVersions(id, o);
        })(),
      listFolder: (id, o) => inner.listFolder(id, o),
      get: (id, m, o) => inner.get(id, m, o),
      create: (id, i, o) => inner.create(id, i, o),
      update: (id, m, i, o) => inner.update(id, m, i, o),
      delete: (id, m, o) => inner.delete(id, m, o),
    };
    const logger = new RecordingLogger();
    const mounter = new MemoryMounter({
      storeClient: client,
      fileSystem: new MemfsFileSystem({ [ROOT]: null }),
      memoryRoot: ROOT,
      logger,
      memory_sync_interval: 0.05,
      syncWait: 0.1,
    });
    await mounter.materialize([resources[1]!]);
    await new Promise((r) => setTimeout(r, 60));
    gate.open = false;
    const before = listings;
    const started = performance.now();
    expect(await mounter.reconcile()).toBeNull();
    expect(performance.now() - started).toBeLessThan(1_000);
    // Another tool call later: it joins the pass still running instead of starting one.
    await new Promise((r) => setTimeout(r, 60));
    expect(await mounter.reconcile()).toBeNull();
    expect(listings - before).toBe(1);
    // The store answers: the background pass ends and its result is in status().
    gate.release();
    await vi.waitFor(() => expect(mounter.status()[0]!.lastOutcome).toBe('synced'));
    await mounter.finalize();
  });
});

describe('durations on a monotonic clock; the wall clock only dates things', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('the wall clock set back an hour: syncs continue on schedule, and the jump is logged once', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-12-01T12:00:00Z'), shouldAdvanceTime: true });
    const inner = new InMemoryStoreClient();
    inner.seed(SICK, { '/s.md': 'sick' });
    const fs = new MemfsFileSystem({ [ROOT]: null });
    const logger = new RecordingLogger();
    const mounter = new MemoryMounter({ storeClient: inner, fileSystem: fs, memoryRoot: ROOT, logger, memory_sync_interval: 0.05, newFileSettle: 0.01 });
    await mounter.materialize([resources[1]!]);
    await mounter.reconcile({ force: true });
    // A file written just before the jump is dated an hour ahead of the clock afterwards.
    fs.vol.writeFileSync(`${ROOT}/sick/before-jump.md`, 'written before the jump');
    vi.setSystemTime(new Date('2026-12-01T11:00:00Z'));
    const synced: string[] = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 70));
      fs.vol.writeFileSync(`${ROOT}/sick/after-${i}.md`, `after ${i}`);
      await new Promise((r) => setTimeout(r, 20));
      const report = await mounter.reconcile();
      expect(report).not.toBeNull();
      synced.push(...report!.stores[0]!.pushed);
    }
    expect(synced).toContain('/before-jump.md');
    expect(synced.filter((p) => p.startsWith('/after-'))).toHaveLength(5);
    expect(logger.warnings().filter((l) => l.msg.startsWith('the wall clock jumped'))).toHaveLength(1);
    await mounter.finalize();
  });

  it('the wall clock set forward an hour: the deletion grace still holds', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-12-01T12:00:00Z'), shouldAdvanceTime: true });
    const inner = new InMemoryStoreClient();
    inner.seed(SICK, { '/s.md': 'sick', '/keep.md': 'keep' });
    const fs = new MemfsFileSystem({ [ROOT]: null });
    const mounter = new MemoryMounter({
      storeClient: inner,
      fileSystem: fs,
      memoryRoot: ROOT,
      logger: new RecordingLogger(),
      memory_sync_interval: 0.05,
      deleteGracePeriod: 30,
    });
    await mounter.materialize([resources[1]!]);
    fs.vol.unlinkSync(`${ROOT}/sick/s.md`);
    const first = await mounter.reconcile({ force: true });
    expect(first!.stores[0]!.pendingDeletions).toEqual(['/s.md']);
    vi.setSystemTime(new Date('2026-12-01T13:00:00Z'));
    await new Promise((r) => setTimeout(r, 60));
    const second = await mounter.reconcile({ force: true });
    expect(second!.stores[0]!.deletedRemote).toEqual([]);
    expect(second!.stores[0]!.pendingDeletions).toEqual(['/s.md']);
    expect(inner.snapshot(SICK)['/s.md']).toBe('sick');
    await mounter.finalize({ outcome: 'aborted' });
  });
});

describe('passes never overlap: a cut-off pass stops scanning, and the next one waits for it', () => {
  it('a slow disk under a 0.3 s syncTimeout: the scan reads no more after the cut, and no second pass runs beside the first', async () => {
    const inner = new InMemoryStoreClient();
    const seed: Record<string, string> = {};
    for (let i = 0; i < 300; i++) seed[`/n${String(i).padStart(3, '0')}.md`] = `note ${i}`;
    inner.seed(SICK, seed);
    const memfs = new MemfsFileSystem({ [ROOT]: null });
    const slow = { on: false, opens: 0, inFlight: 0, most: 0 };
    // Every file open takes 50 ms while `slow.on`: a disk that is slow, not broken.
    const fs = new Proxy(memfs, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as unknown;
        if (key !== 'openFile' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return async (path: string) => {
          if (!slow.on) return target.openFile(path);
          slow.opens++;
          slow.most = Math.max(slow.most, ++slow.inFlight);
          try {
            await new Promise((r) => setTimeout(r, 50));
            return await target.openFile(path);
          } finally {
            slow.inFlight--;
          }
        };
      },
    });
    const mounter = new MemoryMounter({ storeClient: inner, fileSystem: fs, memoryRoot: ROOT, logger: new RecordingLogger(), syncTimeout: 0.3 });
    await mounter.materialize([resources[1]!]);
    // Every file changed: the scan must read each one again.
    for (const path of Object.keys(seed)) memfs.vol.writeFileSync(`${ROOT}/sick${path}`, `edited ${path}`);
    slow.on = true;
    const report = await mounter.reconcile({ force: true });
    expect(report!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound' });
    const opensAtCut = slow.opens;
    await new Promise((r) => setTimeout(r, 500));
    // At most the reads already in flight when the bound fired finish; none starts after it.
    expect(slow.opens).toBe(opensAtCut);
    expect(opensAtCut).toBeLessThan(300);
    slow.on = false;
    const next = await mounter.reconcile({ force: true });
    expect(next!.stores[0]!.status).not.toBe('failed');
    await mounter.finalize({ outcome: 'aborted' });
  });
});

describe('stores share the transfer slots fairly', () => {
  it("one store's writes hang at finalize: the healthy store's edits are all pushed, none named unpushed", async () => {
    const inner = new InMemoryStoreClient();
    inner.seed(HEALTHY, { '/h.md': 'healthy' });
    inner.seed(SICK, { '/s.md': 'sick' });
    const never = () => new Promise<never>(() => undefined);
    const late = <T>(work: () => AsyncIterable<T>) =>
      (async function* () {
        await new Promise((r) => setTimeout(r, 100));
        yield* work();
      })();
    const client: StoreClient = {
      // The healthy store reads the store later than the sick one: the sick store's pushes ask for slots first.
      list: (id, o) => (id === HEALTHY ? late(() => inner.list(id, o)) : inner.list(id, o)),
      listVersions: (id, o) => (id === HEALTHY ? late(() => inner.listVersions(id, o)) : inner.listVersions(id, o)),
      listFolder: (id, o) => inner.listFolder(id, o),
      get: (id, m, o) => inner.get(id, m, o),
      // The sick store's writes are accepted and never answered (nor do they heed their signal).
      create: (id, i, o) => (id === SICK ? never() : inner.create(id, i, o)),
      update: (id, m, i, o) => (id === SICK ? never() : inner.update(id, m, i, o)),
      delete: (id, m, o) => inner.delete(id, m, o),
    };
    const fs = new MemfsFileSystem({ [ROOT]: null });
    const mounter = new MemoryMounter({
      storeClient: client,
      fileSystem: fs,
      memoryRoot: ROOT,
      logger: new RecordingLogger(),
      transferConcurrency: 4,
      requestTimeout: 30,
      finalSyncTimeout: 1.5,
      newFileSettle: 0,
    });
    await mounter.materialize(resources);
    for (let i = 0; i < 12; i++) {
      fs.vol.writeFileSync(`${ROOT}/sick/s${i}.md`, `sick edit ${i}`);
      fs.vol.writeFileSync(`${ROOT}/healthy/h${i}.md`, `healthy edit ${i}`);
    }
    const report = await mounter.finalize({ outcome: 'aborted' });
    const unpushedHealthy = report.unpushed.filter((u) => u.memoryStoreId === HEALTHY).map((u) => u.path);
    expect(unpushedHealthy).toEqual([]);
    for (let i = 0; i < 12; i++) expect(inner.snapshot(HEALTHY)[`/h${i}.md`]).toBe(`healthy edit ${i}`);
    // The sick store's edits are named, every one.
    expect(report.unpushed.filter((u) => u.memoryStoreId === SICK)).toHaveLength(12);
  });
});

describe('a permanent failure at materialize stops the other downloads at once', () => {
  it('one store answering 403: materialize fails with that store, and the others send few requests more', async () => {
    const inner = new InMemoryStoreClient({ latencyMs: 10 });
    const big: Record<string, string> = {};
    for (let i = 0; i < 1_000; i++) big[`/n${String(i).padStart(4, '0')}.md`] = `note ${i}`;
    inner.seed(HEALTHY, big);
    inner.seed(SICK, { '/s.md': 'sick' });
    const refused = new StoreError('unauthorized', 'injected 403', { status: 403 });
    const client: StoreClient = {
      list: (id, o) => (id === SICK ? (async function* () { throw refused; })() : inner.list(id, o)),
      listVersions: (id, o) => inner.listVersions(id, o),
      listFolder: (id, o) => (id === SICK ? (async function* () { throw refused; })() : inner.listFolder(id, o)),
      get: (id, m, o) => inner.get(id, m, o),
      create: (id, i, o) => inner.create(id, i, o),
      update: (id, m, i, o) => inner.update(id, m, i, o),
      delete: (id, m, o) => inner.delete(id, m, o),
    };
    const fs = new MemfsFileSystem({ [ROOT]: null });
    const mounter = new MemoryMounter({ storeClient: client, fileSystem: fs, memoryRoot: ROOT, logger: new RecordingLogger() });
    const err = await mounter.materialize(resources).then(
      () => expect.fail('materialize should fail'),
      (e: unknown) => e as Error & { code?: string; memoryStoreId?: string },
    );
    expect(err).toMatchObject({ code: 'download_failed', memoryStoreId: SICK });
    // 1,000 memories with content are 50 pages: the healthy store stopped long before them.
    expect(inner.requests.filter((r) => r.storeId === HEALTHY).length).toBeLessThan(10);
    // All or nothing: neither folder is left.
    expect(fs.vol.readdirSync(ROOT)).toEqual([]);
  });
});
