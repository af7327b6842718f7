import { describe, expect, it } from 'vitest';
import { ContentBudget, FIRST_ESTIMATE, type ContentTicket } from '../src/remote/content-budget.js';

/** The session's bound on content listed and not yet written (content-budget.ts), row by row. */

/** Whether `promise` has settled once the microtasks queued so far have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('ContentBudget', () => {
  it('row 1: a store that holds no listing may always start one, whatever the others hold', async () => {
    const budget = new ContentBudget(100);
    const a = await budget.lane('a').admit();
    a.carried(1_000);
    // Ten times over the limit, and still the other store moves.
    expect(await settled(budget.lane('b').admit())).toBe(true);
  });

  it('row 2: a store that holds one starts another only while the session holds less than the limit', async () => {
    const budget = new ContentBudget(100);
    const lane = budget.lane('a');
    const first = await lane.admit();
    first.carried(60);
    const second = await lane.admit();
    second.carried(50);
    const third = lane.admit();
    expect(await settled(third)).toBe(false);
    // 110 held: the third waits until the first's files are written.
    first.release();
    expect(await settled(third)).toBe(true);
    expect(budget.held).toBeGreaterThanOrEqual(50);
  });

  it('holds an estimate from the start of a listing to its answer: the mean of the answers so far, FIRST_ESTIMATE before any', async () => {
    const budget = new ContentBudget(10 * FIRST_ESTIMATE);
    const lane = budget.lane('a');
    const first = await lane.admit();
    expect(budget.held).toBe(FIRST_ESTIMATE);
    first.carried(1_000);
    expect(budget.held).toBe(1_000);
    const second = await lane.admit();
    expect(budget.held).toBe(2_000);
    second.carried(3_000);
    const third = await lane.admit();
    // The mean of 1,000 and 3,000.
    expect(budget.held).toBe(1_000 + 3_000 + 2_000);
    for (const ticket of [first, second, third]) ticket.release();
    expect(budget.held).toBe(0);
  });

  it('many listings starting at once stop at the limit by their estimates, before any has answered', async () => {
    const budget = new ContentBudget(4 * FIRST_ESTIMATE);
    const lane = budget.lane('a');
    const admitted = Array.from({ length: 10 }, () => lane.admit());
    const started = await Promise.all(admitted.map(settled));
    expect(started.filter(Boolean)).toHaveLength(4);
  });

  it('a waiting listing starts in the store that holds fewest first', async () => {
    const budget = new ContentBudget(100);
    const a = budget.lane('a');
    const b = budget.lane('b');
    const held: ContentTicket[] = [];
    for (const lane of [a, a, a, b]) {
      const ticket = await lane.admit();
      ticket.carried(30);
      held.push(ticket);
    }
    const order: string[] = [];
    void a.admit().then(() => order.push('a'));
    void b.admit().then(() => order.push('b'));
    // 90 held once one of a's is written: room for one more, and b (one held) goes before a (two).
    held[0]!.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['b']);
  });

  it('release is given back once, however often called; a late answer after it changes nothing', async () => {
    const budget = new ContentBudget(100);
    const ticket = await budget.lane('a').admit();
    ticket.carried(40);
    ticket.release();
    ticket.release();
    ticket.carried(70);
    expect(budget.held).toBe(0);
  });

  it('a listing waiting when the download is stopped is refused with the stop reason, and takes nothing', async () => {
    const budget = new ContentBudget(100);
    const lane = budget.lane('a');
    (await lane.admit()).carried(200);
    const held = budget.held;
    const stop = new AbortController();
    const waiting = lane.admit(stop.signal);
    stop.abort(new Error('stopped'));
    await expect(waiting).rejects.toThrow('stopped');
    expect(budget.held).toBe(held);
    await expect(lane.admit(stop.signal)).rejects.toThrow('stopped');
  });
});
