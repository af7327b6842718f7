import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Arena, STORE } from './arena.js';

/**
 * Attack: a folder chain far deeper than any memory path (SPEC 5: at most 20 segments), made
 * with relative mkdir/chdir as any shell can, with long names (255 bytes is NAME_MAX) and one
 * small file per level. No race, no link: only the agent's own folder.
 *
 * Pinned handles make depth free for the engine (`/proc/self/fd/<n>/<name>` never nears
 * PATH_MAX), and the walk has no depth limit: it descends the whole chain, holding one
 * descriptor per level, and builds each file's wire path (`/<250 bytes>/<250 bytes>/...`).
 * Those paths are kept (scan cache, snapshot, refusals, report), so memory grows with the SUM of
 * the path lengths: quadratic in the depth, for a linear number of folders on disk. At 1,600
 * levels of 250-byte names that is 1,600 files and ~320 MB of path strings; at 20,000 levels
 * the walk alone holds 20,000 descriptors (this host's hard limit) and every other open in the
 * worker fails with EMFILE meanwhile.
 */
const DEPTH = 1_600;
const NAME = 'd'.repeat(250);
/** What one pass may add to the heap (the exhaustion class allows 150 MB of RSS growth). */
const HEAP_BOUND = 150 * 1024 ** 2;

/** The agent's shell: mkdir + cd, DEPTH times, a file at each level. Paths stay relative. */
function buildChain(dir: string, depth: number, name: string, bottomLink?: string): void {
  const script = `
    const fs = require('node:fs');
    process.chdir(${JSON.stringify(dir)});
    for (let i = 0; i < ${depth}; i++) {
      fs.mkdirSync(${JSON.stringify(name)});
      process.chdir(${JSON.stringify(name)});
      fs.writeFileSync('f.md', 'x\\n');
    }
    ${bottomLink ? `fs.symlinkSync(${JSON.stringify(bottomLink)}, 'host-link'); fs.symlinkSync(${JSON.stringify(bottomLink)} + '/secret.txt', 'secret-link');` : ''}`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`building the chain failed: ${run.stderr}`);
}

describe('attack: a folder chain hundreds of levels deep with long names', () => {
  it('one pass over it keeps memory bounded', { timeout: 120_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    const mounter = await arena.mount();
    buildChain(arena.storeDir, DEPTH, NAME);
    const before = process.memoryUsage().heapUsed;
    const started = Date.now();
    const report = await mounter.reconcile({ force: true });
    const grew = process.memoryUsage().heapUsed - before;
    const seconds = (Date.now() - started) / 1000;
    const refused = report?.stores[0]?.refused.length ?? 0;
    // The engine removes the chain at finalize (Node's rmSync would fail past PATH_MAX).
    const final = await mounter.finalize();
    const left = readdirSync(arena.memoryRoot);
    await arena.dispose();
    console.log(`deep tree: ${DEPTH} levels, heap +${Math.round(grew / 1024 ** 2)} MB, ${seconds.toFixed(1)} s, ${refused} refused, removed ${final.removed.length}, left ${left}`);
    expect(grew, `heap grew by ${Math.round(grew / 1024 ** 2)} MB in one pass`).toBeLessThan(HEAP_BOUND);
  });

  // Defeated (coverage the suite lacked): removal past PATH_MAX, through handles, never through the links.
  it('a chain deeper than PATH_MAX with links to the host at its bottom: removed whole at finalize, the host untouched', { timeout: 60_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n', 'keep/a.md': 'host file\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    const mounter = await arena.mount();
    buildChain(arena.storeDir, 100, NAME, arena.host); // ~25 kB of path: six times PATH_MAX
    await mounter.reconcile({ force: true });
    const report = await mounter.finalize();
    arena.check([]);
    const found = [...arena.violations];
    const left = readdirSync(arena.memoryRoot);
    await arena.dispose();
    expect({ removed: report.removed, leftInPlace: report.leftInPlace, left, violations: found }).toEqual({
      removed: [arena.storeDir],
      leftInPlace: [],
      left: [],
      violations: [],
    });
  });
});
