import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { DISKS, STORE, useHarness, type Harness } from './harness.js';

/**
 * A changed file is read once a pass: the scan's read (which hashed it for the plan) is the
 * content its push sends, not a second read of the file (issue 9).
 */

/** Opens for reading of each memory file (by wire path), from now on. */
function countReads(h: Harness): Map<string, number> {
  const reads = new Map<string, number>();
  const openFile = h.fs.openFile.bind(h.fs);
  h.fs.openFile = (path) => {
    // Pinned handles name a file as /proc/self/fd/<n>/<name>; memfs by its full path.
    const name = path.slice(path.lastIndexOf('/'));
    reads.set(name, (reads.get(name) ?? 0) + 1);
    return openFile(path);
  };
  return reads;
}

const SEED = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`/m${i}.md`, `memory ${i}`]));
const CHANGED = ['/m1.md', '/m4.md', '/m6.md'];

describe.each(DISKS)('reads of a changed file on %s', (disk) => {
  const h = useHarness(disk);

  it('a sync reads each changed file once, and pushes what it read', async () => {
    const m = await h.mountNotes({}, SEED);
    for (const path of CHANGED) await h.write(`${h.notesDir}${path}`, `edited ${path}`);
    const reads = countReads(h);
    const report = await m.reconcile({ force: true });
    expect([...report!.stores[0]!.pushed].sort()).toEqual(CHANGED);
    for (const path of CHANGED) expect(reads.get(path), path).toBe(1);
    for (const path of CHANGED) expect(h.client.snapshot(STORE)[path]).toBe(`edited ${path}`);
  });

  // The flush after the final sync reads again a file hashed within 100 ms of its last change
  // (the racy window; 2 s on a disk whose change times are whole seconds, as memfs's can be):
  // on the real disk the edits are aged past it, so the one read left is the final sync's.
  it.runIf(disk === 'node')('a finalize reads each changed file once', async () => {
    const m = await h.mountNotes({}, SEED);
    await m.reconcile({ force: true });
    for (const path of CHANGED) await h.write(`${h.notesDir}${path}`, `edited ${path}`);
    await sleep(150);
    const reads = countReads(h);
    const report = await m.finalize();
    expect(report.outcome).toBe('completed');
    expect([...report.sync!.stores[0]!.pushed].sort()).toEqual(CHANGED);
    for (const path of CHANGED) expect(reads.get(path), path).toBe(1);
    expect(report.unpushed).toEqual([]);
  });
});
