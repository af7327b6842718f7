import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The built `memory-mounter` bin, run as a child process against its bundled emulator. */

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const bin = join(root, 'packages/cli/dist/cli.js');
let work: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  // The bin is built by the project's global setup (test/build-bin.ts).
  work = await mkdtemp(join(tmpdir(), 'mm-cli-'));
  env = { ...process.env, MEMORY_MOUNTER_STATE_DIR: join(work, 'state'), ANTHROPIC_API_KEY: '' };
  await mkdir(join(work, 'mounts'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

function run(args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: join(work, 'mounts'), env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Lines of a running child's stdout, and a wait for one that matches. */
function lines(child: ChildProcess) {
  const seen: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  let buf = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      seen.push(line);
      for (const w of [...waiters]) if (w.re.test(line)) (waiters.splice(waiters.indexOf(w), 1), w.resolve(line));
    }
  });
  const waitFor = (re: RegExp, ms: number) =>
    new Promise<string>((resolve, reject) => {
      const hit = seen.find((l) => re.test(l));
      if (hit) return resolve(hit);
      const timer = setTimeout(() => reject(new Error(`no line like ${re} within ${ms} ms; got:\n${seen.join('\n')}`)), ms);
      waiters.push({ re, resolve: (l) => (clearTimeout(timer), resolve(l)) });
    });
  return { seen, waitFor };
}

describe('memory-mounter (the built bin)', () => {
  it('--help for each command; usage errors exit 2', () => {
    for (const command of ['mount', 'pull', 'status', 'push', 'recover']) {
      const r = run([command, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`memory-mounter ${command}`);
    }
    expect(run(['bogus']).code).toBe(2);
    // Names every object has are no commands either.
    for (const command of ['constructor', 'toString', '__proto__']) expect(run([command]).stderr).toMatch(/unknown command/);
    expect(run(['mount', 'memstore_demo', '--interval', 'soon', '--emulator']).code).toBe(2);
    expect(run(['mount', 'memstore_demo', '--no-such-flag']).code).toBe(2);
    expect(run(['pull', 'memstore_demo', 'x']).stderr).toMatch(/ANTHROPIC_API_KEY/);
  });

  it('mount: an `echo >>` edit reaches the store within one interval; status before and after; Ctrl-C leaves nothing behind', async () => {
    const dir = join(work, 'mounts', 'demo');
    const child = spawn(process.execPath, [bin, 'mount', 'memstore_demo', './demo', '--emulator', '--interval', '2', '--json'], {
      cwd: join(work, 'mounts'),
      env,
    });
    const out = lines(child);
    try {
      const emulator = JSON.parse(await out.waitFor(/"event":"emulator"/, 10_000)) as { baseURL: string };
      await out.waitFor(/"event":"mounted"/, 10_000);
      const statusArgs = ['status', './demo', '--base-url', emulator.baseURL, '--json'];
      const statusEnv = { ...env, ANTHROPIC_API_KEY: 'emulator-key' };
      const status = (args: string[]) => {
        const r = spawnSync(process.execPath, [bin, ...args], { cwd: join(work, 'mounts'), env: statusEnv, encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as { new: string[]; modified: string[]; deleted: string[]; remoteChanged: string[]; conflicts: string[] };
      };
      expect(status(statusArgs)).toMatchObject({ new: [], modified: [], deleted: [], remoteChanged: [], conflicts: [] });

      await appendFile(join(dir, 'projects/todo.md'), 'x\n'); // echo x >> ./demo/projects/todo.md
      const started = Date.now();
      const pass = JSON.parse(await out.waitFor(/"event":"pass"/, 2_000 + 1_500)) as {
        pushed: string[];
        read: { kind: string } | null;
        requests: { total: number; reads: number; writes: number; retries: number };
      };
      expect(pass.pushed).toEqual(['/projects/todo.md']);
      // How the store was read, and what the pass cost: its read of the store, and the one update.
      expect(pass.read?.kind).toMatch(/^(feed|listing)$/);
      expect(pass.requests).toMatchObject({ writes: 1, retries: 0 });
      expect(pass.requests.reads).toBeGreaterThanOrEqual(1);
      expect(pass.requests.total).toBe(pass.requests.reads + pass.requests.writes);
      expect(Date.now() - started).toBeLessThan(2_000 + 1_500);
      // The store has it: the baseline moved, and the store agrees with the folder.
      expect(status(statusArgs)).toMatchObject({ new: [], modified: [], deleted: [], remoteChanged: [], conflicts: [] });

      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(out.seen.some((l) => l.includes('"event":"finalized"') && l.includes('"outcome":"completed"'))).toBe(true);
      expect(code).toBe(0);
      expect(existsSync(dir)).toBe(false);
      expect(await readdir(join(work, 'mounts'))).toEqual([]);
      expect(await readdir(join(work, 'state'))).toEqual([]);
      // After: nothing is mounted there any more.
      expect(run(['status', './demo']).code).toBe(2);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('pull, then status and push --dry-run see a local edit (no writes)', async () => {
    expect(run(['pull', 'memstore_demo', './pulled', '--emulator']).code).toBe(0);
    expect(run(['status', './pulled']).stdout).toContain('in sync with its baseline');
    await appendFile(join(work, 'mounts', 'pulled', 'README.md'), 'local\n');
    await appendFile(join(work, 'mounts', 'pulled', 'new.md'), 'new\n');
    const status = JSON.parse(run(['status', './pulled', '--json']).stdout) as { new: string[]; modified: string[] };
    expect(status).toMatchObject({ new: ['/new.md'], modified: ['/README.md'] });
    const dry = run(['push', './pulled', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/create\s+\/new\.md/);
    expect(dry.stdout).toMatch(/update\s+\/README\.md/);
    expect(run(['push', './pulled']).code).toBe(2);
  });
});
