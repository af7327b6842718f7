import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Arena, STORE } from './arena.js';
import { raceSkip, useRacer } from './attack-kit.js';
import { Racer } from './racer.js';

/**
 * Attack (or mere bad luck): the agent makes a file at the very place of a memory the store has
 * just created, while the engine pulls that memory. The engine checks that nothing is there,
 * writes its temp file, and then puts it in place; a file the agent puts there in between
 * (racer.c `put`, the instant the engine's temp file appears) must never be written over: the
 * agent's content stays on disk, and the next pass settles the two as a conflict, named in the
 * report and handed to `conflict` listeners. Written over, it would be gone without a word.
 *
 * Each attempt uses a folder of its own (`/s<i>/`, made at the download), so the racer watches
 * only that attempt's pull.
 */
// 100 by default (the race classes take 200): every attempt adds a folder each later pass scans.
const ATTEMPTS = Number(process.env.RACE_ATTEMPTS ?? 100);

describe.skipIf(raceSkip !== null)('attack: a file put at a new memory’s place while it is pulled', () => {
  const racer = useRacer();

  it(`is never written over (${ATTEMPTS} raced pulls)`, { timeout: 180_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    const staging = mkdtempSync(join(tmpdir(), 'mm-staging-'));
    try {
      arena.client.seed(STORE, Object.fromEntries(Array.from({ length: ATTEMPTS }, (_, i) => [`/s${i}/keep.md`, 'keep\n'])));
      const mounter = await arena.mount();
      const handedOver = new Set<string>();
      mounter.on('conflict', (e) => handedOver.add(new TextDecoder().decode(e.localContent)));
      const agentText = (i: number) => `the agent's ${i}\n`;
      const raced: number[] = [];
      let overwritten = 0;
      for (let i = 0; i < ATTEMPTS; i++) {
        const staged = join(staging, `n${i}.md`);
        writeFileSync(staged, agentText(i));
        arena.client.writeMemory(STORE, `/s${i}/n.md`, `the store's ${i}\n`);
        const put = await Racer.start(racer.bin(), ['put', join(arena.storeDir, `s${i}`), '.mm-tmp-*', staged, join(arena.storeDir, `s${i}`, 'n.md')]);
        await put.resume();
        await mounter.reconcile({ force: true });
        const { swaps } = await put.stop();
        if (swaps === 0) continue;
        raced.push(i);
        // The agent's file is in place, whenever its rename landed: before the engine's put
        // (refused, `taken`) or after it (the agent's own rename replaced the engine's file).
        if (readFileSync(join(arena.storeDir, `s${i}`, 'n.md'), 'utf8') !== agentText(i)) overwritten++;
      }
      // The next pass settles every clash as a conflict the store wins: named, never silent.
      await mounter.reconcile({ force: true });
      const store = arena.client.snapshot(STORE);
      const silentlyLost = raced.filter((i) => {
        const onDisk = readFileSync(join(arena.storeDir, `s${i}`, 'n.md'), 'utf8');
        return onDisk !== agentText(i) && store[`/s${i}/n.md`] !== agentText(i) && !handedOver.has(agentText(i));
      });
      await mounter.finalize();
      console.log(`new-file race: ${raced.length} of ${ATTEMPTS} pulls raced, ${overwritten} written over, ${handedOver.size} handed to conflict listeners`);
      // Most attempts must really race, or the test proves nothing.
      expect(raced.length).toBeGreaterThan(ATTEMPTS / 2);
      expect(overwritten).toBe(0);
      expect(silentlyLost).toEqual([]);
      expect(arena.check(), JSON.stringify(arena.violations)).toBe(false);
    } finally {
      rmSync(staging, { recursive: true, force: true });
      await arena.dispose();
    }
  });
});
