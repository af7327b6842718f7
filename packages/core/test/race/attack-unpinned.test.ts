import { symlinkSync } from 'node:fs';
import { constants as fsConstants } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '@memory-mounter/core';
import { Arena, describeViolations, STORE, walk } from './arena.js';
import { raceSkip, useRacer } from './attack-kit.js';
import { agentRemove } from './attempts.js';
import { putBack, Racer } from './racer.js';

/**
 * Attack: unpinned folder handles — what NodeFileSystem gives where /proc/self/fd cannot name a
 * folder (macOS, a Linux without /proc, `pinDirectories: false`), and what any FileSystem built
 * on `unpinnedDirHandle` gives. StoreFolder then acts on `${folder's host path}/${name}` and
 * checks the folder's (dev, ino) by path before and after. Both checks see the real folder when
 * the agent swaps it for a link to the host *between* them and back: the kernel resolves the
 * folder's name (a non-final component, so O_NOFOLLOW does not apply) through the link for the
 * act itself. The agent needs only its store folder; the loop below is the whole attack.
 *
 * - read: /a/n<k>.md are memories; host/n<k>.md hold canary secrets. The scan and the push's
 *   re-read open `/store/a/n<k>.md` while `a` is the link, and the canary is uploaded.
 * - write: memories changed in the store are pulled into /a; the temp file and the rename go
 *   through the link into the host folder.
 */
const FILES = 12;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const unpinned = () => new NodeFileSystem(fsConstants, { pinDirectories: false });

describe.skipIf(raceSkip)('attack: unpinned handles (the non-Linux fallback) with a folder swapped and swapped back', () => {
  const racer = useRacer();

  it('read: no host byte is uploaded', { timeout: 90_000 }, async () => {
    const arena = await Arena.create(Object.fromEntries(range(FILES).map((k) => [`n${k}.md`, 'host file named like a memory\n'])));
    const seeded = Object.fromEntries(range(FILES).map((k) => [`/a/n${k}.md`, `n${k}\n`]));
    arena.client.seed(STORE, { '/top.md': 'top\n', ...seeded });
    const mounter = await arena.mount({ fileSystem: unpinned() });
    const a = join(arena.storeDir, 'a');
    const link = join(arena.storeDir, 'a-link');
    symlinkSync(arena.host, link);
    const loop = await Racer.start(racer.bin(), ['loop', a, link]);
    let attempts = 0;
    const deadline = Date.now() + 30_000;
    while (attempts < 300 && Date.now() < deadline && arena.violations.length === 0) {
      arena.attempt = ++attempts;
      await loop.resume();
      await mounter.reconcile({ force: true }).catch(() => undefined);
      await loop.pause();
      putBack(racer.bin(), a, link, (s) => s.isSymbolicLink());
      arena.check(); // notes uploads of canary content; the store is put back by another writer
    }
    await loop.stop();
    await mounter.finalize().catch(() => undefined);
    const found = [...arena.violations];
    await arena.dispose();
    expect(found.length, `${attempts} attempts:\n${describeViolations(found)}`).toBe(0);
  });

  it('write: nothing outside the store folder is created or modified', { timeout: 90_000 }, async () => {
    const arena = await Arena.create(Object.fromEntries(range(FILES).map((k) => [`n${k}.md`, 'host file named like a memory\n'])));
    const seeded = Object.fromEntries(range(FILES).map((k) => [`/a/n${k}.md`, `n${k}\n`]));
    arena.client.seed(STORE, { '/top.md': 'top\n', ...seeded });
    const mounter = await arena.mount({ fileSystem: unpinned() });
    const a = join(arena.storeDir, 'a');
    const link = join(arena.storeDir, 'a-link');
    symlinkSync(arena.host, link);
    const loop = await Racer.start(racer.bin(), ['loop', a, link]);
    let attempts = 0;
    const deadline = Date.now() + 30_000;
    const hostTouched = () => arena.violations.filter((v) => v.what.startsWith('host'));
    while (attempts < 100 && Date.now() < deadline && hostTouched().length === 0) {
      arena.attempt = ++attempts;
      for (const k of range(FILES)) arena.client.putAs(STORE, `/a/n${k}.md`, `n${k} v${attempts}\n`);
      await loop.resume();
      await mounter.reconcile({ force: true }).catch(() => undefined);
      await loop.pause();
      putBack(racer.bin(), a, link, (s) => s.isSymbolicLink());
      arena.check();
      // The agent tidies its folder: anything but /a's memories, the link and the marker goes.
      for (const full of walk(arena.storeDir)) {
        const rel = full.slice(arena.storeDir.length);
        if (!(rel in seeded) && rel !== '/a' && rel !== '/a-link' && rel !== '/top.md' && rel !== '/.anthropic-memory-store') agentRemove(arena.storeDir, full);
      }
    }
    await loop.stop();
    await mounter.finalize().catch(() => undefined);
    const found = hostTouched();
    await arena.dispose();
    expect(found.length, `${attempts} attempts:\n${describeViolations(found)}`).toBe(0);
  });
});
