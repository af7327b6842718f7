import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root, until, workFolder } from './bin-harness.js';

// The bin as a user gets it: the package's tarball installed with plain npm (offline: the
// tarball must need nothing else), or run through npx, or the repository's `cli` script; each
// from a folder outside the checkout.

let w: Awaited<ReturnType<typeof workFolder>>;
let tarball: string;

function sh(cmd: string, args: readonly string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? w.env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  w = await workFolder();
  const packed = await sh('npx', ['-y', 'pnpm@10.34.9', '--filter', '@memory-mounter/cli', 'pack', '--pack-destination', w.base], { cwd: root });
  expect(packed.code, packed.stderr).toBe(0);
  tarball = join(w.base, (await readdir(w.base)).find((n) => n.endsWith('.tgz'))!);
});
afterAll(async () => {
  await w.cleanup();
});

describe('the package bin, installed', () => {
  it('npm i -g of the tarball (offline: nothing else to fetch) gives a memory-mounter that works from any folder', async () => {
    const prefix = join(w.base, 'global');
    const install = await sh('npm', ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball], { cwd: w.base });
    expect(install.code, install.stderr).toBe(0);
    const elsewhere = join(w.base, 'elsewhere');
    await mkdir(elsewhere);
    const r = await sh(join(prefix, 'bin', 'memory-mounter'), ['pull', 'memstore_demo', './notes', '--emulator'], { cwd: elsewhere });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`pulled memstore_demo into ${join(elsewhere, 'notes')}`);
    expect(existsSync(join(elsewhere, 'notes', 'projects', 'todo.md'))).toBe(true);
  });

  it('npx of the tarball runs it', async () => {
    const r = await sh('npx', ['--yes', '--offline', '--package', tarball, 'memory-mounter', '--help'], { cwd: w.mounts });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^memory-mounter <command> \[options\]/);
  });
});

describe("the repository's cli script", () => {
  it('`pnpm -s cli … --json` has the CLI alone on stdout, and a relative folder lands in the folder pnpm was run from', async () => {
    const r = await sh('npx', ['-y', 'pnpm@10.34.9', '-s', '-C', root, 'cli', 'pull', 'memstore_demo', './via-script', '--emulator', '--json'], { cwd: w.mounts });
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { event: string }).event);
    // Every line is the CLI's JSON: the download, one `pulled` per memory written, the store's summary.
    expect(events[0]).toBe('downloading');
    expect(events.at(-1)).toBe('pulled_store');
    expect(new Set(events.slice(1, -1))).toEqual(new Set(['pulled']));
    expect(existsSync(join(w.mounts, 'via-script', 'README.md'))).toBe(true);
    expect(existsSync(join(root, 'via-script'))).toBe(false);
  });

  it("a terminal's Ctrl-C (SIGINT to the whole process group) reaches the bin once: a clean final sync, not one cut short", async () => {
    const child = spawn('npx', ['-y', 'pnpm@10.34.9', '-s', '-C', root, 'cli', 'mount', 'memstore_demo', './ctrl-c', '--emulator', '--json'], {
      cwd: w.mounts,
      env: w.env,
      detached: true, // its own process group, as a terminal's foreground job
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const code = new Promise<unknown>((resolve) => child.on('close', resolve));
    try {
      await until(() => stdout.includes('"event":"mounted"'), 'the mount', 20_000);
      process.kill(-child.pid!, 'SIGINT');
      // npx itself dies of the SIGINT (npm's way); the bin goes on to its end, holding the pipe.
      await code;
      const finalized = JSON.parse(stdout.split('\n').find((l) => l.includes('"event":"finalized"'))!) as { outcome: string; cutShort?: string };
      expect(finalized.outcome).toBe('completed');
      expect(finalized.cutShort).toBeUndefined();
      expect(existsSync(join(w.mounts, 'ctrl-c'))).toBe(false);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  });

  it('without -s, pnpm prints its banner on stdout: a line on stderr says how to leave stdout to the CLI', async () => {
    const r = await sh('npx', ['-y', 'pnpm@10.34.9', '-C', root, 'cli', '--', '--help'], { cwd: w.mounts });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('memory-mounter <command> [options]');
    expect(r.stderr).toMatch(/`pnpm -s cli` leaves stdout to the CLI alone/);
  });
});
