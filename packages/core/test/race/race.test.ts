import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Arena, describeViolations } from './arena.js';
import { deleteOutside, hardLinks, readOutside, watchRaces, writeOutside, type ClassResult } from './classes.js';
import { exhaustion } from './exhaustion.js';
import { nestedMount } from './nested-mount.js';
import { bundleChild } from '../reliability/child-bundle.js';
import { buildRacer, Racer, raceSkipReason } from './racer.js';

/**
 * Racing the engine (SPEC §6.1, issue 8 item 6). The agent owns the store folder and swaps
 * entries with renameat2(RENAME_EXCHANGE) while the engine works in it (racer.c). Each class
 * makes at least RACE_ATTEMPTS (default 200) raced engine operations within RACE_CLASS_MS
 * (default 15 s), collects every violation of the invariant — nothing outside a store folder
 * read and sent, created, modified or removed; memory bounded; nothing over 102,400 bytes
 * written — and asserts there were none. The checks look only at the disk and the store, never
 * at how the engine does its I/O, so they hold for any engine behind the public API.
 *
 *   pnpm exec vitest run --project core test/race
 */
const ATTEMPTS = Number(process.env.RACE_ATTEMPTS ?? 200);
// Generous: a class stops as soon as it has its attempts, so this only matters on a loaded machine.
const CLASS_MS = Number(process.env.RACE_CLASS_MS ?? 45_000);

const skip = raceSkipReason();
if (skip) console.warn(`race tests SKIPPED: ${skip}. They prove the confinement of SPEC §6.1 and need Linux and cc.`);

(skip ? describe.skip : describe)('racing the engine: a hostile agent swaps entries at any moment (SPEC §6.1)', () => {
  let work: string;
  let racer: string;
  let engineChild: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'mm-racer-'));
    racer = buildRacer(work);
    engineChild = join(work, 'engine-child.cjs');
    await bundleChild(fileURLToPath(new URL('./engine-child.ts', import.meta.url)), engineChild);
  }, 60_000);
  afterAll(async () => {
    await Racer.killAll();
    await Arena.disposeAll();
    rmSync(work, { recursive: true, force: true });
  });

  const classes: [string, (racer: string, attempts: number, ms: number) => Promise<ClassResult>][] = [
    ['write-outside', writeOutside],
    ['read-outside', readOutside],
    ['delete-outside', deleteOutside],
    ['exhaustion', (bin, attempts, ms) => exhaustion(bin, engineChild, attempts, ms)],
    ['hard-links', hardLinks],
    ['nested-mount-pass', nestedMount('pass')],
    ['nested-mount-finalize', nestedMount('finalize')],
    ['nested-mount-recover', nestedMount('recover')],
    ['watch', watchRaces],
  ];
  for (const [name, run] of classes) {
    it(`${name}: no violation in ${ATTEMPTS} raced attempts`, { timeout: CLASS_MS * 4 + 30_000 }, async () => {
      const started = Date.now();
      const result = await run(racer, ATTEMPTS, CLASS_MS);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(
        `class ${name}: ${result.attempts} attempts, ${result.violations.length} violations, ${result.swaps} swaps` +
          ` (${seconds} s; ${result.detail})`,
      );
      if (result.violations.length > 0) console.log(`class ${name} violations:\n${describeViolations(result.violations)}`);
      expect(result.violations.length, `violations:\n${describeViolations(result.violations)}`).toBe(0);
      expect(result.attempts, `only ${result.attempts} attempts within the time bound`).toBeGreaterThanOrEqual(ATTEMPTS);
    });
  }
});
