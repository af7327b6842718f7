import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleChild } from './reliability/child-bundle.js';

/**
 * Issue 20 item 2: one `chmod 0` or `chmod 0500` (or `chmod -R a-w`) by the agent on a folder of
 * its store must not strand the mount path. Finalize gives itself back owner access through its
 * handles, reads what is locked, pushes it and removes the folder; a session that dies is
 * finished by recover the same way; either way the next session at that mount path starts.
 *
 * Permission bits do not stop root, so the engine runs in a child process as an unprivileged
 * user (`nobody` when the tests run as root, the current user otherwise): see locked-child.ts.
 * The real disk only: memfs keeps no permission bits that stop anyone.
 */
const asRoot = process.getuid?.() === 0;
const nobody = asRoot ? uidOf('nobody') : null;
const linux = process.platform === 'linux';

describe.skipIf(!linux || (asRoot && nobody === null))('a folder the agent locked (child process, unprivileged)', () => {
  let work: string;
  let bundle: string;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'mm-locked-'));
    chmodSync(work, 0o755);
    bundle = join(work, 'locked-child.cjs');
    await bundleChild(fileURLToPath(new URL('./reliability/locked-child.ts', import.meta.url)), bundle);
    chmodSync(bundle, 0o644);
  }, 60_000);
  afterAll(() => {
    // The child's folders may be locked still: root removes them whatever their bits; as
    // another user, give them back first.
    if (!asRoot) spawnSync('chmod', ['-R', 'u+rwx', work]);
    rmSync(work, { recursive: true, force: true });
  });

  const run = (lock: string, end: 'finalize' | 'crash') => {
    const base = mkdtempSync(join(work, `${lock}-${end}-`));
    const memoryRoot = join(base, 'mnt-memory');
    const stateDir = join(base, 'state');
    mkdirSync(memoryRoot);
    mkdirSync(stateDir);
    if (nobody !== null) for (const dir of [base, memoryRoot, stateDir]) chownSync(dir, nobody, nobody);
    chmodSync(base, 0o755);
    const result = spawnSync(process.execPath, [bundle, JSON.stringify({ memoryRoot, stateDir, lock, end })], {
      encoding: 'utf8',
      timeout: 60_000,
      ...(nobody !== null ? { uid: nobody, gid: nobody } : {}),
    });
    return JSON.parse(result.stdout || JSON.stringify({ crashed: result.stderr })) as Record<string, unknown>;
  };

  for (const lock of ['sub0', 'deep0', 'root0', 'sub500', 'a-w']) {
    for (const end of ['finalize', 'crash'] as const) {
      it(`${lock}, then ${end === 'finalize' ? 'finalize' : 'a crash and recover'}: the locked note is pushed, the folder goes, the next session starts`, () => {
        const out = run(lock, end);
        expect(out.crashed).toBeUndefined();
        expect(out).toMatchObject({ left: false, next: 'mounted', pushed: "the agent's new note\n" });
      });
    }
  }
});

function uidOf(user: string): number | null {
  try {
    return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
  } catch {
    return null;
  }
}
