import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryApiServer } from '@memory-mounter/testing';

/** Helpers for tests that run the built `memory-mounter` bin in a child process. */

export const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
export const bin = join(root, 'packages/cli/dist/cli.js');
/** The credential the test's own emulator takes. */
export const KEY = 'test-key';

/**
 * A folder outside the checkout (under the OS temp dir) to run the bin in: `mounts` is the
 * child's current folder, `state` its state dir (outside `mounts`, as the library requires).
 */
export async function workFolder(): Promise<{ base: string; mounts: string; state: string; env: NodeJS.ProcessEnv; cleanup: () => Promise<void> }> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-cli-')));
  const mounts = join(base, 'mounts');
  const state = join(base, 'state');
  await mkdir(mounts);
  const env: NodeJS.ProcessEnv = { ...process.env, MEMORY_MOUNTER_STATE_DIR: state, ANTHROPIC_API_KEY: '' };
  return { base, mounts, state, env, cleanup: () => rm(base, { recursive: true, force: true }) };
}

/**
 * Runs the bin to its end. Asynchronous on purpose: a test-owned emulator answers from this
 * very process, which a spawnSync would block.
 */
export async function run(args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { cwd: opts.cwd, env: opts.env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { code, stdout, stderr };
}

export function start(args: readonly string[], opts: SpawnOptions & { cwd: string; env: NodeJS.ProcessEnv }): ChildProcess {
  return spawn(process.execPath, [bin, ...args], opts);
}

/** A test-owned emulator the bin reaches with `--base-url` (so the test can slow it down, seed it, read it). */
export async function emulator(files: Record<string, string> = { '/a.md': 'a\n' }, storeId = 'memstore_t'): Promise<{ server: MemoryApiServer; args: string[]; env: (e: NodeJS.ProcessEnv) => NodeJS.ProcessEnv }> {
  const server = new MemoryApiServer({ apiKey: KEY });
  await server.start();
  server.seed(storeId, files);
  return { server, args: ['--base-url', server.baseURL], env: (e) => ({ ...e, ANTHROPIC_API_KEY: KEY }) };
}

/** Lines of a running child's stdout, and a wait for one that matches. */
export function lines(child: ChildProcess) {
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
  const waitFor = (re: RegExp, ms = 10_000) =>
    new Promise<string>((resolve, reject) => {
      const hit = seen.find((l) => re.test(l));
      if (hit) return resolve(hit);
      const timer = setTimeout(() => reject(new Error(`no line like ${re} within ${ms} ms; got:\n${seen.join('\n')}`)), ms);
      waiters.push({ re, resolve: (l) => (clearTimeout(timer), resolve(l)) });
    });
  return { seen, waitFor };
}

/** The child's stderr, collected. */
export function stderrOf(child: ChildProcess): { text: () => string } {
  let text = '';
  child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { text: () => text };
}

export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Polls `check` every 20 ms until it holds (or throws after `ms`). */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A character a terminal acts on, or that hides or reorders text: none may reach a human line from a name. */
export const TERMINAL_HAZARD = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
/** The same, minus the LF that ends each line the CLI writes. */
export function hazardsIn(text: string): string[] {
  return [...text.replace(/\n/g, '')].filter((c) => TERMINAL_HAZARD.test(c));
}
