import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { lstatSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Arena, MAX_MEMORY_BYTES, MOUNT_PATH, STORE, walk } from './arena.js';
import { Budget } from './attempts.js';
import { hit, type ClassResult } from './classes.js';
import type { EngineChildArgs, EngineOp } from './engine-child.js';
import { lstatOrNull, Racer } from './racer.js';

const GIB = 1024 ** 3;
const SPARSE_FILES = 3;
/** Peak RSS growth allowed during one engine operation. */
const RSS_BOUND = 150 * 1024 ** 2;
/** What the hostile store sends for one memory: 200 times the limit. */
const HUGE_BYTES = 20 * 1024 ** 2;
/** An operation still running after this is killed and counted: the agent has stalled the engine. */
const OP_BOUND_MS = 3_000;
const SAMPLE_MS = 5;

/**
 * exhaustion. Memory stays bounded and nothing over 102,400 bytes is written, whatever the agent
 * plants and the store sends.
 *
 * The engine runs in a child process (engine-child.ts) so that its memory is measured alone and a
 * vulnerable engine, stuck reading gigabytes, can be killed at the time bound instead of holding
 * the whole suite. Each cycle: the child materializes a fresh mounter from a store that answers
 * one memory with 20 MB (HugeMemoryClient); the agent plants three sparse 1 GiB files and a small
 * file, which a loop exchanges with the first sparse file (so a size check made before the open
 * is raced); three forced reconciles; finalize. Around each of these attempts the child's RSS is
 * sampled every 5 ms and its peak read from the kernel (VmHWM, reset before each attempt
 * through /proc/<pid>/clear_refs). Violations: growth over 150 MB; any file over 102,400 bytes
 * other than the agent's, looked for during and after each attempt; an attempt still running
 * after 3 s (killed, and the cycle starts again with a fresh child).
 */
export async function exhaustion(racerBin: string, childBundle: string, attempts: number, ms: number): Promise<ClassResult> {
  // No attempt starts later than one bound before the end: the class ends within `ms`.
  const budget = new Budget(attempts, Date.now() + ms - OP_BOUND_MS);
  const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
  const small = join(arena.storeDir, 'small.md');
  const sparse = Array.from({ length: SPARSE_FILES }, (_, k) => join(arena.storeDir, `huge-${k}.bin`));
  const racer = await Racer.start(racerBin, ['loop', small, sparse[0]!]);
  const agentInodes = new Set<number>();
  const seenLarge = new Set<string>();
  let killed = 0;
  let peakSeen = 0;
  const args: EngineChildArgs = {
    memoryRoot: arena.memoryRoot,
    storeId: STORE,
    mountPath: MOUNT_PATH,
    seed: { '/top.md': 'top\n', '/huge.md': 'small in the store\n', '/notes/a.md': 'a\n' },
    hugePath: '/huge.md',
    hugeBytes: HUGE_BYTES,
  };

  const lookForLargeFiles = () => {
    for (const full of [...walk(arena.memoryRoot), ...walk(arena.host)]) {
      const s = lstatOrNull(full);
      if (!s?.isFile() || s.size <= MAX_MEMORY_BYTES || agentInodes.has(s.ino)) continue;
      const where = full.slice(arena.base.length + 1);
      if (seenLarge.has(`${arena.attempt}:${where}`)) continue;
      seenLarge.add(`${arena.attempt}:${where}`);
      arena.note(`file over ${MAX_MEMORY_BYTES} bytes written`, `${where} (${s.size} bytes)`);
    }
  };

  /** One attempt in `child`; false when it ran past the bound and the child was killed. */
  const attempt = async (child: EngineChild, op: EngineOp): Promise<boolean> => {
    budget.attempts++;
    arena.attempt++;
    const canReset = child.resetPeak();
    const before = child.rss();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, child.rss());
      lookForLargeFiles();
    }, SAMPLE_MS);
    await racer.resume();
    const outcome = await child.run(op, OP_BOUND_MS);
    if (canReset) peak = Math.max(peak, child.hwm());
    clearInterval(sampler);
    if (outcome === 'timeout') await child.kill();
    await racer.pause();
    if (outcome === 'threw') budget.threw++;
    lookForLargeFiles();
    const grew = peak - before;
    peakSeen = Math.max(peakSeen, grew);
    if (grew > RSS_BOUND) arena.note(`memory grew over ${RSS_BOUND / 1024 ** 2} MB`, `${op} (+${Math.round(grew / 1024 ** 2)} MB)`);
    if (outcome === 'timeout') {
      killed++;
      arena.note(`${op} still running after ${OP_BOUND_MS / 1000} s (engine stalled; killed)`, op);
      return false;
    }
    return true;
  };

  try {
    let child: EngineChild | undefined;
    while (budget.more()) {
      child ??= await EngineChild.start(childBundle, args);
      try {
        let alive = await attempt(child, 'materialize');
        if (alive && lstatOrNull(arena.storeDir)?.isDirectory()) {
          for (const path of sparse) {
            writeFileSync(path, '');
            truncateSync(path, GIB);
            agentInodes.add(lstatSync(path).ino);
          }
          writeFileSync(small, 'a small file of the agent\n');
          for (let j = 0; j < 3 && alive && budget.more(); j++) alive = await attempt(child, 'reconcile');
        }
        if (alive) alive = await attempt(child, 'finalize');
        // A killed child is replaced; its store, seeded anew, is the same.
        if (!alive) child = undefined;
      } catch (err) {
        await child?.kill();
        throw err;
      }
      arena.check();
      arena.removeStoreDir();
    }
    await child?.kill();
    const counts = await racer.stop();
    return {
      attempts: budget.attempts,
      violations: arena.violations,
      swaps: counts.swaps,
      detail:
        `violations in ${hit(arena.violations)} attempts; ${counts.failures} exchanges refused, ${budget.threw} engine calls threw, ${killed} killed past ${OP_BOUND_MS / 1000} s, ` +
        `largest RSS growth ${Math.round(peakSeen / 1024 ** 2)} MB`,
    };
  } finally {
    await racer.stop().catch(() => undefined);
    await arena.dispose();
  }
}

/** The engine child: one MemoryMounter at a time, driven over IPC. */
class EngineChild {
  readonly #exited: Promise<unknown>;

  private constructor(private readonly child: ChildProcess) {
    this.#exited = once(child, 'exit');
  }

  static async start(bundle: string, args: EngineChildArgs): Promise<EngineChild> {
    const child = spawn(process.execPath, [bundle, JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const [msg] = (await Promise.race([once(child, 'message'), once(child, 'exit').then(() => [null])])) as [unknown];
    if (!msg) throw new Error('engine child exited before it was ready');
    return new EngineChild(child);
  }

  /** Runs `op`; 'timeout' when it has not answered within `boundMs`. */
  async run(op: EngineOp, boundMs: number): Promise<'done' | 'threw' | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const answer = new Promise<'done' | 'threw'>((resolve) => {
      this.child.once('message', (msg: { threw?: string }) => resolve(msg.threw === undefined ? 'done' : 'threw'));
    });
    const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), boundMs)));
    this.child.send({ op });
    try {
      return await Promise.race([answer, late, this.#exited.then(() => 'timeout' as const)]);
    } finally {
      clearTimeout(timer);
    }
  }

  rss(): number {
    return this.status('VmRSS');
  }

  hwm(): number {
    return this.status('VmHWM');
  }

  /** Resets the kernel's peak-RSS mark of the child to its current RSS; false where not allowed. */
  resetPeak(): boolean {
    try {
      writeFileSync(`/proc/${this.child.pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.#exited;
  }

  private status(field: 'VmRSS' | 'VmHWM'): number {
    try {
      const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : 0;
    } catch {
      return 0;
    }
  }
}
