import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { lstatSync, readFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/**
 * The TypeScript side of racer.c: finding a C compiler, building the racer, and driving racer
 * processes (start, pause between engine operations, resume, stop).
 */

const SOURCE = fileURLToPath(new URL('./racer.c', import.meta.url));

/** Why the race tests cannot run here, or null when they can. Synchronous: describe() needs it. */
export function raceSkipReason(): string | null {
  if (process.platform !== 'linux') return `renameat2(RENAME_EXCHANGE) and inotify are Linux-only (platform ${process.platform})`;
  const probe = spawnSync('cc', ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) return `no C compiler: \`cc --version\` failed (${probe.error?.message ?? `exit ${probe.status}`})`;
  return null;
}

/** Compiles racer.c into `dir`; returns the binary's path. */
export function buildRacer(dir: string): string {
  const bin = join(dir, 'racer');
  const cc = spawnSync('cc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', bin, SOURCE], { encoding: 'utf8' });
  if (cc.error || cc.status !== 0) throw new Error(`cc racer.c failed: ${cc.error?.message ?? cc.stderr}`);
  return bin;
}

export interface RacerCounts {
  swaps: number;
  failures: number;
  events: number;
}

/**
 * One racer process. It starts paused: the caller resumes it for exactly the engine operation
 * under attack and pauses it again before looking at the disk, so the test's own setup and
 * checks never race with it.
 */
export class Racer {
  /** Every racer not yet stopped: a test that throws halfway must not leave them (stopped) behind. */
  static readonly #live = new Set<Racer>();
  #stdout = '';
  readonly #exited: Promise<unknown>;

  private constructor(private readonly child: ChildProcessByStdio<null, Readable, Readable>) {
    child.stdout.setEncoding('utf8').on('data', (d: string) => (this.#stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (this.#stdout += d));
    // 'close', not 'exit': the report line may still be in the pipe when the process exits.
    this.#exited = once(child, 'close');
    Racer.#live.add(this);
    void this.#exited.then(() => Racer.#live.delete(this));
  }

  /** Kills every racer still running (afterAll). */
  static async killAll(): Promise<void> {
    await Promise.all(
      [...Racer.#live].map(async (r) => {
        r.child.kill('SIGKILL');
        await r.#exited;
      }),
    );
  }

  /**
   * `args` as in racer.c's usage, without the milliseconds: `maxMs` is only a backstop, the test
   * stops the racer itself. Returns once the racer is ready (its watch set, if it has one), paused.
   */
  static async start(bin: string, args: string[], maxMs = 120_000): Promise<Racer> {
    const child = spawn(bin, [...args, String(maxMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const racer = new Racer(child);
    while (!racer.#stdout.includes('ready')) {
      if (child.exitCode !== null) throw new Error(`racer ${args.join(' ')} exited: ${racer.#stdout}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    await racer.pause();
    return racer;
  }

  /**
   * Lets the racer go, and returns once it says so (`go`: a watching racer has dropped the
   * events the test's own checks queued). RACE_DRY=1 holds every racer paused instead: a check
   * that the harness alone finds nothing.
   */
  async resume(): Promise<void> {
    if (this.child.exitCode !== null || process.env.RACE_DRY) return;
    const goes = this.#goes();
    this.child.kill('SIGCONT');
    const deadline = Date.now() + 5_000;
    while (this.#goes() === goes) {
      if (this.child.exitCode !== null) return;
      if (Date.now() > deadline) throw new Error(`racer did not resume: ${this.#stdout}`);
      await new Promise((r) => setTimeout(r, 0));
    }
  }

  #goes(): number {
    return this.#stdout.split('\n').filter((line) => line === 'go').length;
  }

  /** Stops the racer and waits until the kernel says it is stopped: no exchange after this. */
  async pause(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.kill('SIGSTOP');
    for (;;) {
      const state = processState(this.child.pid!);
      if (state === 'T' || state === 't' || state === null || this.child.exitCode !== null) return;
      await nextTurn();
    }
  }

  async stop(): Promise<RacerCounts> {
    if (this.child.exitCode === null) {
      this.child.kill('SIGTERM');
      this.child.kill('SIGCONT');
    }
    await this.#exited;
    const m = /swaps=(\d+) failures=(\d+) events=(\d+)/.exec(this.#stdout);
    if (!m) throw new Error(`racer printed no counts: ${this.#stdout}`);
    return { swaps: Number(m[1]), failures: Number(m[2]), events: Number(m[3]) };
  }
}

/** The one-letter state in /proc/<pid>/stat, or null when the process is gone. */
function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

/** One atomic exchange, done by the racer binary (Node has no renameat2). */
export function exchangeOnce(bin: string, a: string, b: string): void {
  const run = spawnSync(bin, ['swap', a, b], { encoding: 'utf8' });
  if (run.error || run.status !== 0) throw new Error(`racer swap ${a} ${b} failed: ${run.error?.message ?? run.stderr}`);
}

/**
 * Puts a swapped pair back while its racer is paused: if `a` holds the hostile object (the
 * symlink, the hard link, the sparse file) and `b` does not, exchange them. Either may be absent
 * (the engine removed it); then nothing is done.
 */
export function putBack(bin: string, a: string, b: string, hostile: (s: Stats) => boolean): void {
  const sa = lstatOrNull(a);
  const sb = lstatOrNull(b);
  if (sa && sb && hostile(sa) && !hostile(sb)) exchangeOnce(bin, a, b);
}

export function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
