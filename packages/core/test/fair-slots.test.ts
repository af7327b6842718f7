import { describe, expect, it } from 'vitest';
import { FairSlots } from '../src/remote/fair-slots.js';

/** Work that holds its slot until released by hand. */
function held() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return { work: () => done, release };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('FairSlots: a store gets its share, and borrows what the others leave idle', () => {
  it('a store alone gets every slot', async () => {
    const slots = new FairSlots(4);
    const a = slots.lane('a');
    a.begin();
    const jobs = Array.from({ length: 6 }, () => held());
    const running = jobs.map((j) => a.runExclusive(j.work));
    await tick();
    expect(slots.held('a')).toBe(4);
    for (const j of jobs) j.release();
    await Promise.all(running);
    a.end();
    expect(slots.held('a')).toBe(0);
  });

  it('a store that started first and hangs keeps only its share once another store is in its pass', async () => {
    const slots = new FairSlots(8);
    const sick = slots.lane('sick');
    const healthy = slots.lane('healthy');
    sick.begin();
    // The healthy store is in its pass (scanning), with no transfer asked for yet.
    healthy.begin();
    const hanging = Array.from({ length: 20 }, () => held());
    const sickRuns = hanging.map((j) => sick.runExclusive(j.work));
    await tick();
    // Half of 8 for each store in a pass: the other half stays free for the healthy store.
    expect(slots.held('sick')).toBe(4);
    const done: number[] = [];
    const healthyRuns = Array.from({ length: 10 }, (_, i) => healthy.runExclusive(async () => void done.push(i)));
    await Promise.all(healthyRuns);
    expect(done).toHaveLength(10);
    expect(slots.held('sick')).toBe(4);
    // The healthy store's pass ends: its idle share may now be borrowed.
    healthy.end();
    await tick();
    expect(slots.held('sick')).toBe(8);
    for (const j of hanging) j.release();
    await Promise.all(sickRuns);
    sick.end();
  });

  it('a freed slot goes to the waiting store holding the fewest', async () => {
    const slots = new FairSlots(2);
    const a = slots.lane('a');
    const b = slots.lane('b');
    const order: string[] = [];
    const aJobs = Array.from({ length: 3 }, () => held());
    const aRuns = aJobs.map((j, i) => a.runExclusive(async () => (order.push(`a${i}`), j.work())));
    await tick();
    // a took both slots (b was not in a pass yet); b now waits for one.
    const bJob = held();
    const bRun = b.runExclusive(async () => (order.push('b0'), bJob.work()));
    await tick();
    aJobs[0]!.release();
    await tick();
    await tick();
    // a's third job was queued first, but b holds fewer: b gets the slot.
    expect(order).toEqual(['a0', 'a1', 'b0']);
    for (const j of [...aJobs, bJob]) j.release();
    await Promise.all([...aRuns, bRun]);
    expect(order).toEqual(['a0', 'a1', 'b0', 'a2']);
  });

  it('eight stores in their passes: four slots each of 32, whatever order they ask in', async () => {
    const slots = new FairSlots(32);
    const lanes = Array.from({ length: 8 }, (_, i) => slots.lane(`s${i}`));
    for (const lane of lanes) lane.begin();
    const jobs = lanes.map((lane) => Array.from({ length: 10 }, () => held()).map((j) => ({ j, run: lane.runExclusive(j.work) })));
    await tick();
    expect(lanes.map((_, i) => slots.held(`s${i}`))).toEqual([4, 4, 4, 4, 4, 4, 4, 4]);
    for (const store of jobs) for (const { j } of store) j.release();
    await Promise.all(jobs.flat().map(({ run }) => run));
  });

  it('a failing job releases its slot', async () => {
    const slots = new FairSlots(1);
    const a = slots.lane('a');
    await expect(a.runExclusive(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await a.runExclusive(async () => 'next')).toBe('next');
  });
});
