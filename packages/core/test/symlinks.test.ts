import { execFileSync } from 'node:child_process';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { notesResource, STORE, useHarness } from './harness.js';

const FILES = { '/a.md': 'a', '/b.md': 'b' };

// Links, special files and modes, on the real disk: what memfs cannot show.
describe('symlinks, special files and modes on a real disk', () => {
  const h = useHarness('node');
  let dir: string;
  let outside: string;
  beforeEach(async () => {
    dir = h.notesDir;
    outside = `${dirname(h.memoryRoot)}/host-secrets`;
    await mkdir(outside);
    await writeFile(`${outside}/secret.txt`, 'TOP SECRET');
  });
  const uploaded = () => Object.values(h.client.snapshot(STORE)).join('\n');

  it('a symlink to a host file is never read nor uploaded; it is reported and warned once', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, FILES);
    await symlink(`${outside}/secret.txt`, `${dir}/leak.md`);
    const report = await m.reconcile({ force: true });
    await m.reconcile({ force: true });
    expect(uploaded()).not.toContain('TOP SECRET');
    expect(report!.stores[0]!.skippedPaths).toContainEqual({ path: '/leak.md', code: 'is_symlink', reason: 'is a symlink' });
    expect(h.logger.warnings().filter((w) => w.fields.path === '/leak.md')).toHaveLength(1);
  });

  it('a symlinked folder is never descended into, and a remote memory under it is never written through it', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, FILES);
    await symlink(outside, `${dir}/linked`);
    h.client.writeMemory(STORE, '/linked/secret.txt', 'overwritten through the link');
    h.client.writeMemory(STORE, '/linked/new.md', 'planted through the link');
    await m.reconcile({ force: true });
    expect(await readFile(`${outside}/secret.txt`, 'utf8')).toBe('TOP SECRET');
    await expect(stat(`${outside}/new.md`)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(uploaded()).not.toContain('TOP SECRET');
  });

  it('a memory file replaced by a symlink is neither deleted remotely nor written through', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, FILES);
    await h.remove(`${dir}/a.md`);
    await symlink(`${outside}/secret.txt`, `${dir}/a.md`);
    h.clock.advance(3600);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    h.client.writeMemory(STORE, '/a.md', 'remote change');
    await m.reconcile({ force: true });
    expect(await readFile(`${outside}/secret.txt`, 'utf8')).toBe('TOP SECRET');
    expect(uploaded()).not.toContain('TOP SECRET');
  });

  it('a FIFO in a mount is skipped without blocking the sync', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 }, FILES);
    execFileSync('mkfifo', [`${dir}/pipe`]);
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.skippedPaths).toContainEqual({ path: '/pipe', code: 'not_regular', reason: 'is not a regular file' });
  });

  it('a mount path that is a symlink is mount_path_exists; its target is untouched', async () => {
    await symlink(outside, `${h.memoryRoot}/notes`);
    h.client.seed(STORE, { '/secret.txt': 'overwrite?' });
    await expect(h.mounter().materialize([notesResource()])).rejects.toMatchObject({ code: 'mount_path_exists' });
    expect(await readFile(`${outside}/secret.txt`, 'utf8')).toBe('TOP SECRET');
  });

  it('store folders are 0700 and memory files 0600', async () => {
    await h.mountNotes({ deleteGracePeriod: 0 }, { '/sub/a.md': 'a' });
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(`${dir}/sub`)).mode & 0o777).toBe(0o700);
    expect((await stat(`${dir}/sub/a.md`)).mode & 0o777).toBe(0o600);
  });
});
