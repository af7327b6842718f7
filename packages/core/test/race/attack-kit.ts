import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { Arena } from './arena.js';
import { buildRacer, Racer, raceSkipReason } from './racer.js';

/**
 * Shared set-up of the attack-*.test.ts files (a hostile agent's attempts on the confinement of
 * SPEC §6.1 that the race classes do not make). Each file builds the racer once, and its afterAll
 * kills racers and removes arenas a failed test left behind.
 */
export const raceSkip = raceSkipReason();

export function useRacer(): { bin: () => string } {
  let work = '';
  let bin = '';
  beforeAll(() => {
    if (raceSkip) return;
    work = mkdtempSync(join(tmpdir(), 'mm-attack-'));
    bin = buildRacer(work);
  }, 60_000);
  afterAll(async () => {
    await Racer.killAll();
    await Arena.disposeAll();
    if (work) rmSync(work, { recursive: true, force: true });
  });
  return { bin: () => bin };
}
