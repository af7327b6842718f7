import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Arena, STORE } from './arena.js';

/**
 * Attack: make finalize leave the store folder, so that every later session that attaches the
 * store at the same mount path (the default one is derived from the store's name) fails
 * materialize with `mount_path_exists` until an operator removes the folder by hand.
 *
 * 1. Keep writing: a trusted folder (marker intact) whose agent creates entries while finalize
 *    runs. `removeAll` lists each folder once, empties what it listed, then rmdir's the store
 *    folder, which fails with ENOTEMPTY: the folder is reported left in place. (On a worker that
 *    is not root, `chmod 0500` on any subfolder does the same deterministically: its entries
 *    cannot be unlinked, EACCES.)
 * 2. Distrust: delete the marker and keep one file. SPEC 4.4/4.5 then leave the folder as found,
 *    by design; combined with SPEC 4.1 (anything at the mount path is `mount_path_exists`), any
 *    agent can deny its store's mount path to every future session with one `rm`.
 *
 * The agent needs nothing but its own folder.
 */
describe('attack: finalize leaves the folder, and the next session is refused', () => {
  it('an agent writing during finalize: the folder is removed, and the next session mounts', { timeout: 60_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    const mounter = await arena.mount();
    // The agent's shell: a file after a file, as fast as it can, until it is stopped.
    const writer = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('node:fs'); let i = 0;
         for (;;) { try { fs.writeFileSync(${JSON.stringify(arena.storeDir)} + '/w' + (i++ % 50) + '.md', 'w\\n'); } catch {} }`,
      ],
      { stdio: 'ignore' },
    );
    await new Promise((r) => setTimeout(r, 300));
    const report = await mounter.finalize();
    writer.kill('SIGKILL');
    await once(writer, 'exit');
    const next = arena.mounter();
    const outcome = await next.materialize([arena.resource()]).then(
      () => 'mounted',
      (err: Error) => `refused: ${err.message.slice(0, 160)}`,
    );
    await next.finalize().catch(() => undefined);
    await arena.dispose();
    expect({ leftInPlace: report.leftInPlace, next: outcome }).toEqual({ leftInPlace: [], next: 'mounted' });
  });

  it('an agent that deletes the marker and keeps a file: the next session still mounts', { timeout: 30_000 }, async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    const mounter = await arena.mount();
    unlinkSync(join(arena.storeDir, '.anthropic-memory-store'));
    writeFileSync(join(arena.storeDir, 'keep.md'), 'kept\n');
    await mounter.reconcile({ force: true });
    await mounter.finalize();
    const next = arena.mounter();
    const outcome = await next.materialize([arena.resource()]).then(
      () => 'mounted',
      (err: Error) => `refused: ${err.message.slice(0, 160)}`,
    );
    await next.finalize().catch(() => undefined);
    await arena.dispose();
    expect(outcome).toBe('mounted');
  });
});
