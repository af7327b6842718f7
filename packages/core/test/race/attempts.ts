import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { Arena } from './arena.js';
import type { Racer, RacerCounts } from './racer.js';

/**
 * How a class spends its attempts: at most `target`, and none started after `deadline`. An
 * attempt is one engine operation run while the racers run, and only then: they are paused for
 * the test's own setup and checks.
 */
export class Budget {
  attempts = 0;
  /** Engine operations that threw (a materialize refused under attack, say): not violations. */
  threw = 0;

  constructor(
    readonly target: number,
    readonly deadline: number,
  ) {}

  more(): boolean {
    return this.attempts < this.target && Date.now() < this.deadline;
  }

  /**
   * The budget of variant `index` of `parts` in a class that started at `start` and has done
   * `done` attempts so far: what is left of the target, shared among the variants still to run,
   * and a deadline at its share of the class's time. A slow variant leaves attempts to the
   * faster ones after it; none can take the time of those after it.
   */
  static share(target: number, start: number, ms: number, done: number, index: number, parts: number): Budget {
    return new Budget(Math.ceil((target - done) / (parts - index)), start + Math.round((ms * (index + 1)) / parts));
  }
}

/** Runs one attempt: the racers run exactly while `op` does. */
export async function raced<T>(arena: Arena, budget: Budget, racers: readonly Racer[], op: () => Promise<T>): Promise<T | undefined> {
  budget.attempts++;
  arena.attempt++;
  for (const r of racers) await r.resume();
  try {
    return await op();
  } catch {
    budget.threw++;
    return undefined;
  } finally {
    for (const r of racers) await r.pause();
  }
}

export async function stopAll(racers: readonly Racer[]): Promise<RacerCounts> {
  const total: RacerCounts = { swaps: 0, failures: 0, events: 0 };
  for (const r of racers) {
    const c = await r.stop();
    total.swaps += c.swaps;
    total.failures += c.failures;
    total.events += c.events;
  }
  return total;
}

/**
 * The agent removes `path` inside the store folder (rm -rf, links removed, never followed), but
 * only if every folder from the store folder down to it is a real folder: a swapped-in link on
 * the way would make the test itself reach outside. Racers must be paused.
 */
export function agentRemove(storeDir: string, path: string): void {
  const parts = relative(storeDir, path).split(sep);
  let dir = storeDir;
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    try {
      if (!lstatSync(dir).isDirectory()) return;
    } catch {
      return;
    }
  }
  try {
    if (!lstatSync(storeDir).isDirectory()) return;
  } catch {
    return;
  }
  rmSync(path, { recursive: true, force: true });
}

/** Names in a folder, or none when it is not a real folder. */
export function namesIn(dir: string): string[] {
  try {
    return lstatSync(dir).isDirectory() ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}
