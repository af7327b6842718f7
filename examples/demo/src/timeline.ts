import { debugLogger, type Logger } from '@memory-mounter/core';
import type { ManualClock } from './clock.js';

/** Where the timeline goes: `process.stdout`, or a test's collector. */
export interface Output {
  write(text: string): unknown;
}

/** Who did what: the columns a reader scans down. */
export type Actor = 'setup' | 'worker' | 'mounter' | 'agent' | 'other' | 'clock' | 'warn' | 'error' | 'guard' | 'check';

const TIME_WIDTH = 5;
const ACTOR_WIDTH = 7;
const DETAIL_INDENT = ' '.repeat(TIME_WIDTH + 2 + ACTOR_WIDTH + 2);

/**
 * The demo's output: one aligned line per event, stamped with the session clock. Every line is
 * also kept, so a caller running the demo in-process can assert on what was shown.
 */
export class Timeline {
  readonly lines: string[] = [];
  #abbreviation: { long: string; short: string } | undefined;

  constructor(
    private readonly out: Output,
    private readonly clock: ManualClock,
  ) {}

  /** From now on, print `short` for every occurrence of `long` (a real run's long prefix folder). */
  abbreviate(long: string, short: string): void {
    this.#abbreviation = { long, short };
  }

  /** A line outside the columns: headings and the verdict. */
  say(line = ''): void {
    const text = this.#abbreviation ? line.replaceAll(this.#abbreviation.long, this.#abbreviation.short) : line;
    this.lines.push(text);
    this.out.write(`${text}\n`);
  }

  event(actor: Actor, text: string): void {
    const time = `${this.clock.seconds} s`.padStart(TIME_WIDTH);
    this.say(`${time}  ${actor.padEnd(ACTOR_WIDTH)}  ${text}`);
  }

  /** Continuation lines under the last event (a tree, a list), in its text column. */
  detail(text: string): void {
    this.say(`${DETAIL_INDENT}${text}`);
  }
}

/**
 * The mounter's logger for the demo. Warnings and errors are events worth a line of their own
 * (a conflict the store won, say), named by store and path; everything, at every level, still
 * goes to the `debug` logger, so `DEBUG=memory-mounter:*` shows the detail as usual.
 */
export function timelineLogger(timeline: Timeline, storeName: (memoryStoreId: string) => string): Logger {
  const detail = debugLogger();
  const shown = (level: 'warn' | 'error') => (msg: string, fields?: Record<string, unknown>) => {
    detail[level](msg, fields);
    const { memory_store_id: id, path, error } = fields ?? {};
    const where = [
      typeof path === 'string' ? path : undefined,
      typeof id === 'string' ? `in ${storeName(id)} (${id})` : undefined,
    ].filter(Boolean);
    const cause = typeof error === 'string' ? ` (${error})` : '';
    timeline.event(level, `${msg}${cause}${where.length ? ` — ${where.join(' ')}` : ''}`);
  };
  return { debug: detail.debug, info: detail.info, warn: shown('warn'), error: shown('error') };
}
