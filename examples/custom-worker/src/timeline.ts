/** Where the timeline goes: `process.stdout`, or a test's collector. */
export interface Output {
  write(text: string): unknown;
}

const ACTOR_WIDTH = 6;

/**
 * One aligned line per event, stamped with the seconds since the run began; every line is kept
 * too, for a test to read. Host paths under `memoryRoot` are shown as the agent sees them, under
 * `/mnt/memory`.
 */
export class Timeline {
  readonly lines: string[] = [];
  readonly #out: Output;
  readonly #started = Date.now();
  #memoryRoot: string | undefined;

  constructor(out: Output) {
    this.#out = out;
  }

  /** From now on, print `/mnt/memory` for `memoryRoot`. */
  showMemoryRootAs(memoryRoot: string): void {
    this.#memoryRoot = memoryRoot;
  }

  say(line = ''): void {
    const text = this.#memoryRoot ? line.replaceAll(this.#memoryRoot, '/mnt/memory') : line;
    this.lines.push(text);
    this.#out.write(`${text}\n`);
  }

  event(actor: string, text: string): void {
    const seconds = ((Date.now() - this.#started) / 1000).toFixed(2).padStart(6);
    this.say(`${seconds} s  ${actor.padEnd(ACTOR_WIDTH)}  ${text}`);
  }
}

/** A short, one-line rendering of a value for the timeline. */
export function brief(value: unknown, max = 60): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value ?? null);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
