import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { MountedStore, StoreSyncReport } from '@memory-mounter/core';
import { ABORT_SETTLE_MS, cutOffReport, finalPassOptions, passesWithin, timeBound } from '../src/session/deadline.js';
import { emptyReport } from '../src/pass/store-sync.js';

/**
 * Issue 21 item 3: the one deadline rule finalize's passes and recover's pass share (and every
 * reconcile pass): the bound's signal, what a final pass waives, the wind-down after the abort,
 * and the report that stands for a pass left running. Fake timers: time moves only when told.
 */

const mount = (name: string): MountedStore => ({
  memoryStoreId: `memstore_${name}`,
  name,
  path: `/mnt/memory/${name}`,
  mountPath: `/mnt/memory/${name}`,
  access: 'read_write',
});

/** A pass whose report comes when the test says. */
function pendingPass(name: string): { pass: Promise<StoreSyncReport>; end: () => void } {
  let end!: () => void;
  const pass = new Promise<StoreSyncReport>((resolve) => {
    end = () => resolve(emptyReport(mount(name)));
  });
  return { pass, end };
}

/** Lets the promise callbacks queued so far run, without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

describe('the deadline shared by finalize and recover', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('timeBound aborts its signal when the time is up, with a reason naming the option; clear stops it', async () => {
    const bound = timeBound('finalSyncTimeout', 30_000);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(bound.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(bound.signal.aborted).toBe(true);
    expect((bound.signal.reason as Error).message).toBe('finalSyncTimeout (30 s) ran out');
    const cleared = timeBound('syncTimeout', 1_000);
    cleared.clear();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(cleared.signal.aborted).toBe(false);
  });

  it('a final pass waives the grace and the settle, and reads again what it could not read', () => {
    const signal = new AbortController().signal;
    expect(finalPassOptions(7, signal, true)).toEqual({ now: 7, graceMs: 0, settleMs: 0, pushOnly: true, signal, rereadUnreadable: true });
    expect(finalPassOptions(7, signal, false, 'full')).toMatchObject({ pushOnly: false, remote: 'full', rereadUnreadable: true });
  });

  it('passes that end before the bound: their reports, not interrupted', async () => {
    const bound = timeBound('syncTimeout', 10_000);
    const a = pendingPass('a');
    const b = pendingPass('b');
    const within = passesWithin([a.pass, b.pass], bound.signal);
    a.end();
    b.end();
    const result = await within;
    expect(result.interrupted).toBe(false);
    expect(result.reports.map((r) => r?.name)).toEqual(['a', 'b']);
    bound.clear();
  });

  it('after the abort, a pass that ends within the wind-down gives its report; one still running then is left (null)', async () => {
    const bound = timeBound('finalSyncTimeout', 1_000);
    const quick = pendingPass('quick');
    const stuck = pendingPass('stuck');
    let result: Awaited<ReturnType<typeof passesWithin>> | undefined;
    void passesWithin([quick.pass, stuck.pass], bound.signal).then((r) => (result = r));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(bound.signal.aborted).toBe(true);
    quick.end();
    await vi.advanceTimersByTimeAsync(ABORT_SETTLE_MS - 1);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(result!.interrupted).toBe(true);
    expect(result!.reports.map((r) => r?.name ?? null)).toEqual(['quick', null]);
    stuck.end();
  });

  it('a bound that already fired: the passes get the wind-down and no more', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    const stuck = pendingPass('stuck');
    let result: Awaited<ReturnType<typeof passesWithin>> | undefined;
    void passesWithin([stuck.pass], controller.signal).then((r) => (result = r));
    await settle();
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(ABORT_SETTLE_MS);
    expect(result).toEqual({ reports: [null], interrupted: true });
  });

  it("a cut-off report is the store's, skipped with time_bound, and says why", () => {
    expect(cutOffReport(mount('a'))).toMatchObject({
      memoryStoreId: 'memstore_a',
      path: '/mnt/memory/a',
      status: 'skipped',
      code: 'time_bound',
      reason: 'cut off by the time bound; calls still in flight were abandoned',
      pushed: [],
    });
    expect(cutOffReport(mount('a'), 'cut off by the time bound while the pass before it was still winding down').reason).toMatch(/still winding down/);
  });
});
