import { existsSync } from 'node:fs';
import { appendFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemoryApiServer } from '@memory-mounter/testing';
import { emulator, exited, lines, run, start, stderrOf, until, workFolder } from './bin-harness.js';

// The built bin in a child process, from a folder outside the checkout, against a test-owned
// emulator (`--base-url`) the test can slow down: signals at each moment of a mount's life.

let w: Awaited<ReturnType<typeof workFolder>>;
let emu: Awaited<ReturnType<typeof emulator>>;
let server: MemoryApiServer;
let env: NodeJS.ProcessEnv;

const TWENTY = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`/notes/n${i}.md`, `note ${i}\n`]));

beforeEach(async () => {
  w = await workFolder();
  emu = await emulator(TWENTY);
  server = emu.server;
  env = emu.env(w.env);
});
afterEach(async () => {
  await server.close();
  await w.cleanup();
});

const records = async () => (await readdir(w.state).catch(() => [] as string[])).filter((n) => n.startsWith('mm-state-'));
const mountArgs = (extra: string[] = []) => ['mount', 'memstore_t', './t', ...emu.args, '--interval', '60', '--json', ...extra];

describe('memory-mounter mount: signals', () => {
  it('Ctrl-C during the download stops it and leaves neither the folder nor its record (exit 130)', async () => {
    server.latencyMs = 400; // each call: the download of 20 files takes a few of them
    const child = start(mountArgs(), { cwd: w.mounts, env });
    const out = lines(child);
    try {
      await out.waitFor(/"event":"downloading"/);
      await until(() => existsSync(join(w.mounts, 't')), 'the folder to be created');
      child.kill('SIGINT');
      const { code } = await exited(child);
      expect(code).toBe(130);
      expect(out.seen.some((l) => l.includes('"event":"interrupted"'))).toBe(true);
      expect(await readdir(w.mounts)).toEqual([]);
      expect(await records()).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a second Ctrl-C cuts the final sync short: the session ends aborted, the edit stays in the folder, and recover pushes it', async () => {
    const child = start(mountArgs(), { cwd: w.mounts, env });
    const out = lines(child);
    try {
      await out.waitFor(/"event":"mounted"/);
      await appendFile(join(w.mounts, 't', 'notes', 'n1.md'), 'edited\n');
      server.latencyMs = 3_000; // the final sync's listing hangs
      const before = server.requestCount();
      child.kill('SIGINT');
      await out.waitFor(/"event":"finalizing"/);
      // The final sync has scanned the folder and is waiting for the store: cut it short there.
      await until(() => server.requestCount() > before, "the final sync's listing");
      child.kill('SIGINT');
      const { code, signal } = await exited(child);
      expect(signal).toBeNull();
      expect(code).toBe(1);
      const finalized = JSON.parse(await out.waitFor(/"event":"finalized"/)) as { outcome: string; cutShort: string; unpushed: { path: string }[] };
      expect(finalized).toMatchObject({ outcome: 'aborted', cutShort: 'SIGINT' });
      expect(finalized.unpushed.map((u) => u.path)).toEqual(['/notes/n1.md']);
      expect(await readdir(w.mounts)).toEqual(['t']);
      expect(await records()).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
    }
    server.latencyMs = 0;
    const again = await run(mountArgs().filter((a) => a !== '--json'), { cwd: w.mounts, env });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/\.\/t already exists: a mount \(or pull\) of memstore_t left it.*memory-mounter recover/);
    expect(again.stderr).not.toMatch(/\/mnt\/memory|mount_path/);

    const recovered = await run(['recover', ...emu.args], { cwd: w.mounts, env });
    expect(recovered.stderr).toBe('');
    expect(recovered.code).toBe(0);
    expect(recovered.stdout).toMatch(/pushed 1 \(\/notes\/n1\.md\); removed/);
    expect(server.snapshot('memstore_t')['/notes/n1.md']).toBe('note 1\nedited\n');
    expect(await readdir(w.mounts)).toEqual([]);
    expect(await records()).toEqual([]);
  });

  it('a second Ctrl-C at once (the final sync may not have scanned yet): the folder is kept all the same, and recover pushes the edit', async () => {
    const child = start(mountArgs(), { cwd: w.mounts, env });
    const out = lines(child);
    try {
      await out.waitFor(/"event":"mounted"/);
      await appendFile(join(w.mounts, 't', 'notes', 'n5.md'), 'edited just before\n');
      server.latencyMs = 3_000;
      child.kill('SIGINT');
      // The second as soon as the first is handled (two sent together arrive as one): the final
      // sync's scan may or may not have ended, and the edit is kept either way.
      await out.waitFor(/"event":"finalizing"/);
      child.kill('SIGINT');
      expect((await exited(child)).code).toBe(1);
      expect(await readdir(w.mounts)).toEqual(['t']);
      expect(await records()).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
    }
    server.latencyMs = 0;
    expect((await run(['recover', ...emu.args], { cwd: w.mounts, env })).code).toBe(0);
    expect(server.snapshot('memstore_t')['/notes/n5.md']).toBe('note 5\nedited just before\n');
    expect(await readdir(w.mounts)).toEqual([]);
  });

  it('SIGHUP (a closed terminal) ends it like SIGTERM: final sync, folder removed, exit 0', async () => {
    const child = start(mountArgs(), { cwd: w.mounts, env });
    const out = lines(child);
    try {
      await out.waitFor(/"event":"mounted"/);
      await appendFile(join(w.mounts, 't', 'notes', 'n2.md'), 'before the hangup\n');
      child.kill('SIGHUP');
      const { code, signal } = await exited(child);
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(out.seen.some((l) => l.includes('"event":"finalized"') && l.includes('"outcome":"completed"'))).toBe(true);
      expect(server.snapshot('memstore_t')['/notes/n2.md']).toBe('note 2\nbefore the hangup\n');
      expect(await readdir(w.mounts)).toEqual([]);
      expect(await records()).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a killed mount (SIGKILL): the next mount there says to recover, and `recover ./t` pushes the edit and removes the folder', async () => {
    const child = start(mountArgs(), { cwd: w.mounts, env });
    const out = lines(child);
    await out.waitFor(/"event":"mounted"/);
    await appendFile(join(w.mounts, 't', 'notes', 'n3.md'), 'unsynced\n');
    child.kill('SIGKILL');
    await exited(child);

    const again = await run(['mount', 'memstore_t', './t', ...emu.args], { cwd: w.mounts, env });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/memory-mounter recover/);

    const recovered = await run(['recover', './t', ...emu.args, '--json'], { cwd: w.mounts, env });
    expect(recovered.code).toBe(0);
    const report = JSON.parse(recovered.stdout) as { stores: { outcome: string; path: string }[] };
    expect(report.stores).toMatchObject([{ outcome: 'recovered', path: join(w.mounts, 't') }]);
    expect(server.snapshot('memstore_t')['/notes/n3.md']).toBe('note 3\nunsynced\n');
    expect(await readdir(w.mounts)).toEqual([]);
    expect(await records()).toEqual([]);
    // Nothing left: recover says so, and needs no store for it.
    expect(await run(['recover'], { cwd: w.mounts, env: w.env })).toMatchObject({ code: 0, stdout: expect.stringMatching(/nothing to recover/) });
  });
});

describe('a closed stdout', () => {
  it('mount --json | head: the write that meets the closed pipe ends the mount quietly (final sync, folder removed, no EPIPE)', async () => {
    const child = start(mountArgs(), { cwd: w.mounts, env });
    const out = lines(child);
    const err = stderrOf(child);
    try {
      await out.waitFor(/"event":"mounted"/);
      child.stdout!.destroy(); // the reader goes away
      await appendFile(join(w.mounts, 't', 'notes', 'n4.md'), 'after the reader left\n'); // the pass's line meets the closed pipe
      const { code, signal } = await exited(child);
      expect(err.text()).toBe('');
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(server.snapshot('memstore_t')['/notes/n4.md']).toBe('note 4\nafter the reader left\n');
      expect(await readdir(w.mounts)).toEqual([]);
      expect(await records()).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('status | head -0: no EPIPE stack trace, exit 0', async () => {
    expect((await run(['pull', 'memstore_t', './p', ...emu.args], { cwd: w.mounts, env })).code).toBe(0);
    for (const args of [['status', './p', ...emu.args], ['status', './p', '--json', '--local'], ['push', './p', '--dry-run', '--local'], ['--help']]) {
      const child = start(args, { cwd: w.mounts, env });
      child.stdout!.destroy();
      const err = stderrOf(child);
      const { code } = await exited(child);
      expect(err.text(), args.join(' ')).toBe('');
      expect(code, args.join(' ')).toBe(0);
    }
  });
});
