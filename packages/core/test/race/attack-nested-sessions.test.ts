import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryMountError } from '@memory-mounter/core';
import { Arena, describeViolations, STORE } from './arena.js';
import { raceSkip, useRacer } from './attack-kit.js';
import { lstatOrNull, putBack, Racer } from './racer.js';

/**
 * Attack: two sessions on one worker share memoryRoot (SPEC 4.1: "two sessions racing for one
 * path"). Session 1's store is mounted at /mnt/memory/store, and its agent owns that folder.
 * Session 2 attaches another store (another user's, say) at a mount path below it:
 * /mnt/memory/store/notes. `resolveMounts` refuses nesting within one session only, and
 * `createStoreFolder` walks the in-between folders by path, accepting any existing folder, so
 * session 2's store folder is made inside session 1's store folder:
 *
 * - with no race at all, session 1's agent reads session 2's memories and session 1's engine
 *   uploads them into session 1's store (and its finalize deletes session 2's mount);
 * - racing, session 1's agent exchanges the in-between folder with a link to a host folder
 *   while session 2 materializes: the engine's `mkdir` of the store folder and its `openDir`
 *   (no-follow on the last component only) go through the link, and session 2's whole store
 *   is written into the host folder.
 *
 * What the agent needs: write access to its own store folder only. What the operator must have
 * done: let a second session's mount path nest below a first session's (mount paths come from
 * the session's resources).
 */
const VICTIM = 'memstore_victim';
const VICTIM_SECRET = 'victim-private-0c6f1b2e';

describe.skipIf(raceSkip)('attack: a second session mounted inside a first session\'s store folder', () => {
  const racer = useRacer();

  it('the second store is not mounted inside the first store folder', async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    arena.client.seed(VICTIM, { '/private.md': `${VICTIM_SECRET}\n` });
    const first = await arena.mount();
    const second = arena.mounter();
    const mounted = second.materialize([{ type: 'memory_store', memory_store_id: VICTIM, mount_path: '/mnt/memory/store/notes' }]);
    await expect(mounted).rejects.toBeInstanceOf(MemoryMountError);
    await second.finalize().catch(() => undefined);
    await first.finalize();
    await arena.dispose();
  });

  it("the second store's memories never reach the first store", async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    arena.client.seed(VICTIM, { '/private.md': `${VICTIM_SECRET}\n` });
    const first = await arena.mount();
    const second = arena.mounter();
    await second
      .materialize([{ type: 'memory_store', memory_store_id: VICTIM, mount_path: '/mnt/memory/store/notes' }])
      .catch(() => undefined);
    // The final sync takes every file as it is (no settle time): session 2's memories included.
    await first.finalize();
    const leaked = arena.client.memories(STORE).filter((m) => (m.content ?? '').includes(VICTIM_SECRET));
    await second.finalize().catch(() => undefined);
    await arena.dispose();
    expect(leaked.map((m) => m.path)).toEqual([]);
  });

  it('raced: nothing outside a store folder is created while the second session materializes', { timeout: 60_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    arena.client.seed(VICTIM, Object.fromEntries(Array.from({ length: 8 }, (_, k) => [`/m${k}.md`, `victim ${k}\n`])));
    const first = await arena.mount();
    // Session 1's agent: a folder of its own, and a link to the host beside it.
    const x = join(arena.storeDir, 'x');
    const link = join(arena.storeDir, 'x-link');
    mkdirSync(x);
    symlinkSync(arena.host, link);
    const loop = await Racer.start(racer.bin(), ['loop', x, link]);
    let attempts = 0;
    const deadline = Date.now() + 20_000;
    while (attempts < 60 && Date.now() < deadline) {
      attempts++;
      arena.attempt = attempts;
      const second = arena.mounter();
      await loop.resume();
      await second
        .materialize([{ type: 'memory_store', memory_store_id: VICTIM, mount_path: '/mnt/memory/store/x/notes' }])
        .catch(() => undefined);
      await loop.pause();
      putBack(racer.bin(), x, link, (s) => s.isSymbolicLink());
      arena.check();
      await second.finalize().catch(() => undefined);
      arena.check();
      if (!lstatOrNull(x)?.isDirectory()) mkdirSync(x, { recursive: true });
    }
    await loop.stop();
    await first.finalize().catch(() => undefined);
    const found = arena.violations;
    await arena.dispose();
    expect(found.length, `${attempts} attempts:\n${describeViolations(found)}`).toBe(0);
  });
});
