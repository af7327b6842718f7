import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Arena, STORE } from './arena.js';
import { raceSkip, useRacer } from './attack-kit.js';
import { Racer } from './racer.js';

/**
 * Attack (or mere bad luck): the store renames a memory, and while the engine follows the rename
 * on disk the agent saves a note of its own at the memory's new place. The engine checks that
 * nothing is at the target and then moves the file there; a note the agent puts there in between
 * (racer.c `putlate open`: a chosen number of microseconds after the engine opens the target's
 * new folder, after which it checks the source, checks the target and moves) must never be
 * replaced: it stays on disk, and the next pass settles the clash as a conflict, named in the
 * report and handed to `conflict` listeners. Replaced by a rename(2), it would be gone without a
 * word (f154ecc: 4 of 200 replaced, 3 of them with no copy anywhere).
 *
 * Each attempt uses a folder of its own (`/s<i>/`, made at the download), so the racer watches
 * only that attempt's move.
 */
// 200 by default: every attempt adds a folder each later pass scans.
const ATTEMPTS = Number(process.env.RACE_ATTEMPTS ?? 200);
/**
 * How late after the engine opens the target's folder the agent's rename lands, by attempt: 0 to
 * 297 µs in 3 µs steps, twice over (racer.c `putlate`). The engine's steps after that open (an
 * fstat, a check of the source, a check of the target, the move) fall in that range; a put on
 * the folder's creation lands before the check and proves nothing (0 of 120 on f154ecc).
 */
const STEP_US = Number(process.env.RACE_STEP_US ?? 3);
const delayUs = (i: number) => (i % 100) * STEP_US;

/** The file's text, or null when nothing is there (f154ecc's put-back of a move takes the name away). */
const textAt = (path: string): string | null => (existsSync(path) ? readFileSync(path, 'utf8') : null);

describe.skipIf(raceSkip !== null)('attack: a note saved at a renamed memory’s new place while the file is moved', () => {
  const racer = useRacer();

  it(`is never replaced (${ATTEMPTS} raced moves)`, { timeout: 240_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    const staging = mkdtempSync(join(tmpdir(), 'mm-staging-'));
    try {
      arena.client.seed(STORE, Object.fromEntries(Array.from({ length: ATTEMPTS }, (_, i) => [`/s${i}/a.md`, `the memory ${i}\n`])));
      const mounter = await arena.mount();
      const handedOver = new Set<string>();
      mounter.on('conflict', (e) => handedOver.add(new TextDecoder().decode(e.localContent)));
      const agentText = (i: number) => `the agent's note ${i}\n`;
      const raced: number[] = [];
      const replaced: number[] = [];
      for (let i = 0; i < ATTEMPTS; i++) {
        const staged = join(staging, `n${i}.md`);
        writeFileSync(staged, agentText(i));
        arena.client.renameMemory(STORE, `/s${i}/a.md`, `/s${i}/t/b.md`);
        const dir = join(arena.storeDir, `s${i}`);
        const put = await Racer.start(racer.bin(), [
          'putlate', 'open', dir, 't', staged, join(dir, 't', 'b.md'), String(delayUs(i))]);
        await put.resume();
        await mounter.reconcile({ force: true });
        const { swaps } = await put.stop();
        if (swaps === 0) continue;
        raced.push(i);
        // The agent's note is in place, whenever its rename landed: before the engine's move
        // (refused, `taken`) or after it (the agent's own rename replaced the moved file).
        if (textAt(join(dir, 't', 'b.md')) !== agentText(i)) replaced.push(i);
      }
      // The next pass settles every clash: the note pushed, or a conflict the store wins, named.
      await mounter.reconcile({ force: true });
      const store = arena.client.snapshot(STORE);
      const silentlyLost = raced.filter((i) => {
        const onDisk = [join(arena.storeDir, `s${i}`, 't', 'b.md'), join(arena.storeDir, `s${i}`, 'a.md')].map(textAt);
        return !onDisk.includes(agentText(i)) && store[`/s${i}/t/b.md`] !== agentText(i) && !handedOver.has(agentText(i));
      });
      await mounter.finalize();
      console.log(`move race: ${raced.length} of ${ATTEMPTS} moves raced, ${replaced.length} agent notes replaced (at ${replaced.map((i) => `${delayUs(i)}µs`).join(', ') || '-'}), ${silentlyLost.length} silently lost`);
      // Most attempts must really race, or the test proves nothing.
      expect(raced.length).toBeGreaterThan(ATTEMPTS / 2);
      expect(replaced).toEqual([]);
      expect(silentlyLost).toEqual([]);
      expect(arena.check(), JSON.stringify(arena.violations)).toBe(false);
    } finally {
      rmSync(staging, { recursive: true, force: true });
      await arena.dispose();
    }
  });
});
