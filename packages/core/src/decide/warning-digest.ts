import type { Logger } from '../model/types.js';

/**
 * Warnings about paths, bounded (issue 20 item 5). An agent can make any number of names the
 * scan refuses (50,000 symlinks), and a failing disk or store fails every transfer of every pass
 * the same way: one line per path per pass would bury everything else in the log. So each round
 * of warnings (a pass's scan, a pass's transfers) is said as one line per message, with the
 * count and a few example paths, and a path is counted only when what is said about it changed
 * since the round before: a lasting condition is said once, when it begins, and again only if it
 * ends and comes back, or becomes another.
 *
 * The reports still list every path every pass; this is the log only.
 */

/** Example paths one line names. */
export const DIGEST_EXAMPLES = 3;

export interface PathWarning {
  level: 'info' | 'warn';
  message: string;
  fields: { path: string } & Record<string, unknown>;
}

/** A line to log: one path's warning as it is, or a message said about several, counted. */
export interface DigestLine {
  level: 'info' | 'warn';
  message: string;
  fields: Record<string, unknown>;
}

/**
 * Pure: the lines for one round, given what was last said about each path (`said`, path ->
 * message), and what is said now. Paths absent from this round are dropped from the new `said`,
 * so it never holds more paths than the last round named.
 */
export function digestWarnings(said: ReadonlyMap<string, string>, warnings: readonly PathWarning[]): { lines: DigestLine[]; said: Map<string, string> } {
  const next = new Map<string, string>();
  const fresh = new Map<string, PathWarning[]>();
  for (const warning of warnings) {
    const { path } = warning.fields;
    if (next.get(path) === warning.message) continue; // said twice in one round: once
    next.set(path, warning.message);
    if (said.get(path) === warning.message) continue;
    const group = fresh.get(warning.message) ?? [];
    group.push(warning);
    fresh.set(warning.message, group);
  }
  const lines: DigestLine[] = [];
  for (const [message, group] of fresh) {
    if (group.length === 1) {
      const only = group[0]!;
      lines.push({ level: only.level, message, fields: only.fields });
      continue;
    }
    const level = group.some((w) => w.level === 'warn') ? 'warn' : 'info';
    const examples = group.slice(0, DIGEST_EXAMPLES).map((w) => w.fields.path);
    lines.push({ level, message: `${message} (${group.length} paths)`, fields: { count: group.length, paths: examples, ...(group.length > DIGEST_EXAMPLES && { more: group.length - DIGEST_EXAMPLES }) } });
  }
  return { lines, said: next };
}

/** One kind of round's memory of what was said, and its logger. */
export class WarningDigest {
  #said = new Map<string, string>();

  constructor(private readonly logger: Logger) {}

  say(warnings: readonly PathWarning[]): void {
    const { lines, said } = digestWarnings(this.#said, warnings);
    this.#said = said;
    for (const line of lines) this.logger[line.level](line.message, line.fields);
  }
}
