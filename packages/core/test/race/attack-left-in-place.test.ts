import { spawn } from 'node:child_process';
import { once } from 'node:events';
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
  // An agent still writing while finalize runs can keep the folder from ever being empty, and
  // no removal can win against it; what must hold is that finalize still ends in its bound,
  // says which folder it left and why, and touches nothing outside. (The session is over at
  // finalize: a worker stops the agent's processes first. docs/security.md.) An agent that
  // deletes the marker and keeps a file gets its folder left as found, by SPEC 4.4.
  it('an agent writing during finalize: finalize ends in its bound and names the folder it could not remove', { timeout: 60_000 }, async () => {
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
    const started = Date.now();
    const report = await mounter.finalize();
    const took = Date.now() - started;
    writer.kill('SIGKILL');
    await once(writer, 'exit');
    const removed = report.removed.includes(arena.storeDir);
    const named = report.leftInPlace.some((l) => l.path === arena.storeDir && l.reason.length > 0);
    await arena.dispose();
    expect(removed || named).toBe(true);
    expect(took).toBeLessThan(30_000 + 2_000);
  });
});
