import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Arena, STORE } from './arena.js';
import { raceSkip, useRacer } from './attack-kit.js';
import { Racer } from './racer.js';

/**
 * Attack: a device node in the store folder. `FileSystem.openFile` opens first and decides by
 * fstat after (O_RDONLY | O_NOFOLLOW | O_NONBLOCK), so whatever sits at the name when the engine
 * opens it is *opened*: for a character or block device that is the driver's open(), run with
 * the worker's credentials on the host's device (the node's own mode, set by the agent, is what
 * the kernel checks). Opening is not harmless for every driver: /dev/watchdog (10,130) arms
 * the watchdog and its close without the magic 'V' reboots the host; a tty becomes the
 * controlling terminal of a session leader (no O_NOCTTY); tape devices rewind. These tests use
 * /dev/null's numbers (1,3), and count the opens of the node's inode with inotify.
 *
 * What the agent needs beyond its folder: mknod(2) of a device (CAP_MKNOD in its namespace:
 * root in a container that is not a user namespace), on a filesystem not mounted `nodev`.
 * Positions: the marker (read by name before every pass, no race needed), and any memory the
 * scan lists as a file and then opens (swapped for the node in between).
 */
function mknodSkip(): string | null {
  if (raceSkip) return raceSkip;
  const dir = mkdtempSync(join(tmpdir(), 'mm-mknod-'));
  try {
    const run = spawnSync('mknod', [join(dir, 'probe'), 'c', '1', '3']);
    return run.status === 0 ? null : `mknod is not allowed here (${run.stderr?.toString().trim() || `exit ${run.status}`})`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const skip = mknodSkip();
if (skip) console.warn(`device-node attacks SKIPPED: ${skip}`);

function mknod(path: string): void {
  const run = spawnSync('mknod', [path, 'c', '1', '3'], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`mknod ${path}: ${run.stderr}`);
}

describe.skipIf(skip !== null)('attack: a device node where the engine opens a file', () => {
  const racer = useRacer();

  /** A racer that counts opens of the inode at `node` (an exchange of two scratch files each). */
  async function openCounter(node: string): Promise<{ racer: Racer; scratch: string }> {
    const scratch = mkdtempSync(join(tmpdir(), 'mm-opens-'));
    writeFileSync(join(scratch, 'p'), '');
    writeFileSync(join(scratch, 'q'), '');
    const counter = await Racer.start(racer.bin(), ['on', 'open', node, '.', join(scratch, 'p'), join(scratch, 'q')]);
    await counter.resume();
    return { racer: counter, scratch };
  }

  it('the marker replaced by a device node: never opened', { timeout: 30_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    const mounter = await arena.mount();
    const marker = join(arena.storeDir, '.anthropic-memory-store');
    unlinkSync(marker);
    mknod(marker);
    const { racer: counter, scratch } = await openCounter(marker);
    const report = await mounter.reconcile({ force: true });
    await new Promise((r) => setTimeout(r, 100)); // let the watch see the last events
    const { swaps: opens } = await counter.stop();
    rmSync(scratch, { recursive: true, force: true });
    await mounter.finalize().catch(() => undefined);
    await arena.dispose();
    expect(opens, `the device node was opened ${opens} time(s); pass status ${report?.stores[0]?.status}`).toBe(0);
  });

  it('a memory swapped with a device node while the scan runs: never opened', { timeout: 60_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n', '/n.md': 'n\n' });
    const mounter = await arena.mount();
    const node = join(arena.storeDir, 'dev');
    mknod(node);
    const { racer: counter, scratch } = await openCounter(node);
    const loop = await Racer.start(racer.bin(), ['loop', join(arena.storeDir, 'n.md'), node]);
    let attempts = 0;
    const deadline = Date.now() + 20_000;
    while (attempts < 100 && Date.now() < deadline) {
      attempts++;
      await loop.resume();
      await mounter.reconcile({ force: true }).catch(() => undefined);
      await loop.pause();
    }
    await new Promise((r) => setTimeout(r, 100));
    const { swaps: opens } = await counter.stop();
    await loop.stop();
    rmSync(scratch, { recursive: true, force: true });
    await mounter.finalize().catch(() => undefined);
    await arena.dispose();
    expect(opens, `the device node was opened ${opens} time(s) in ${attempts} passes`).toBe(0);
  });
});
