import { randomBytes } from 'node:crypto';
import { sha256Hex } from '@memory-mounter/core';
import { decodePageCursor, encodePageCursor } from './page-cursor.js';

/**
 * The memory-version history both fakes keep (`MemoryApiServer` behind `memory_versions`,
 * `InMemoryStoreClient` behind `listVersions`), so that their change feeds cannot drift apart.
 * No HTTP and no StoreError here: a bad query is a `VersionQueryError` each fake turns into
 * its own refusal.
 *
 * The service's rules it keeps:
 * - every create, every update that changed content or path, and every delete records one
 *   version; an update to nothing records none;
 * - a version never changes afterwards, except that redaction nulls its path, content, size
 *   and sha and sets `redacted_at`;
 * - versions outlive their memory; a version older than the retention period is gone;
 * - listings are newest first by `created_at`; versions written in the same instant (the
 *   clock is the test's, and may stand still or go back) are newest-recorded first.
 */

export type VersionOperation = 'created' | 'modified' | 'deleted';

const VERSION_OPERATIONS: readonly VersionOperation[] = ['created', 'modified', 'deleted'];

/** Who wrote or redacted a version, in the service's `created_by` / `redacted_by` shape. */
export type VersionActor =
  | { type: 'api_actor'; api_key_id: string }
  | { type: 'user_actor'; user_id: string };

/** One version as the fakes hold it: the wire fields, content always kept (unless redacted). */
export interface VersionRecord {
  id: string;
  memory_id: string;
  operation: VersionOperation;
  path: string | null;
  content: string | null;
  content_sha256: string | null;
  content_size_bytes: number | null;
  created_at: string;
  created_by: VersionActor | null;
  redacted_at: string | null;
  redacted_by: VersionActor | null;
}

export interface VersionFilter {
  /** Inclusive bounds, as parsed by `parseInstant`. */
  createdAtGte?: Instant;
  createdAtLte?: Instant;
  memoryId?: string;
  operation?: VersionOperation;
}

/** Where a log reads the time and the retention period; both may change between calls. */
export interface VersionClock {
  /** Milliseconds since the epoch. */
  nowMs(): number;
  /** Versions written more than this many ms ago are gone; `undefined` keeps every version. */
  retentionMs(): number | undefined;
}

/** A query the service would refuse (a malformed timestamp or cursor, an unknown operation). */
export class VersionQueryError extends Error {
  override name = 'VersionQueryError';
}

/** An instant at nanosecond precision, so that a sub-millisecond bound is not rounded. */
export type Instant = bigint;

interface Entry {
  record: VersionRecord;
  at: Instant;
  /** Recording order: breaks ties between versions written in the same instant. */
  seq: number;
}

const utf8 = new TextEncoder();

/** The versions of one store. */
export class VersionLog {
  readonly #entries: Entry[] = [];
  readonly #byId = new Map<string, Entry>();
  #seq = 0;

  constructor(private readonly clock: VersionClock) {}

  /**
   * Records one version at the clock's current time. `state` is the memory after the change;
   * for a delete, its content is dropped and only the path kept.
   */
  record(
    memoryId: string,
    operation: VersionOperation,
    state: { path: string; content: string },
    createdBy: VersionActor | null = null,
  ): VersionRecord {
    const nowMs = this.clock.nowMs();
    const content = operation === 'deleted' ? null : state.content;
    const record: VersionRecord = {
      id: newVersionId(),
      memory_id: memoryId,
      operation,
      path: state.path,
      content,
      content_sha256: content === null ? null : sha256Hex(content),
      content_size_bytes: content === null ? null : utf8.encode(content).length,
      created_at: new Date(nowMs).toISOString(),
      created_by: createdBy,
      redacted_at: null,
      redacted_by: null,
    };
    const entry: Entry = { record, at: BigInt(nowMs) * NS_PER_MS, seq: ++this.#seq };
    this.#entries.push(entry);
    this.#byId.set(record.id, entry);
    return record;
  }

  /** The retained version with this id, or undefined. */
  get(versionId: string): VersionRecord | undefined {
    this.#expire();
    return this.#byId.get(versionId)?.record;
  }

  /**
   * Redacts a retained version: path, content, size and sha become `null`, `redacted_at` is
   * now. Redacting twice keeps the first `redacted_at`. Undefined when there is no such version.
   */
  redact(versionId: string, redactedBy: VersionActor | null = null): VersionRecord | undefined {
    this.#expire();
    const entry = this.#byId.get(versionId);
    if (!entry) return undefined;
    if (entry.record.redacted_at === null) {
      entry.record = {
        ...entry.record,
        path: null,
        content: null,
        content_sha256: null,
        content_size_bytes: null,
        redacted_at: new Date(this.clock.nowMs()).toISOString(),
        redacted_by: redactedBy,
      };
    }
    return entry.record;
  }

  /**
   * One page of the retained versions that match `filter`, newest first: the first `limit`
   * after `cursor`. The cursor names the last row's (instant, recording order), not an offset,
   * so a version recorded between two page requests never shifts another into the gap or
   * makes it appear twice.
   */
  page(filter: VersionFilter, cursor: string | undefined, limit: number): { versions: VersionRecord[]; nextPage: string | null } {
    this.#expire();
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const rows = this.#entries
      .filter((entry) => matches(entry, filter) && (after === undefined || olderThan(entry, after)))
      .sort(newestFirst);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      versions: page.map((entry) => entry.record),
      nextPage: rows.length > limit && last ? encodeCursor(last) : null,
    };
  }

  /** Every retained version, newest first. */
  all(): VersionRecord[] {
    this.#expire();
    return [...this.#entries].sort(newestFirst).map((entry) => entry.record);
  }

  /** Drops the versions past retention, for good: lengthening the period later brings none back. */
  #expire(): void {
    const retention = this.clock.retentionMs();
    if (retention === undefined) return;
    const cutoff = BigInt(this.clock.nowMs() - retention) * NS_PER_MS;
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i]!;
      if (entry.at >= cutoff) continue;
      this.#entries.splice(i, 1);
      this.#byId.delete(entry.record.id);
    }
  }
}

const NS_PER_MS = 1_000_000n;

// RFC 3339 date-time: full date, `T`, full time with optional fraction, `Z` or an offset.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 timestamp as nanoseconds since the epoch; `VersionQueryError` when it is not one
 * (the service refuses such a bound rather than guess). Fractions are kept to the nanosecond.
 */
export function parseInstant(name: string, text: string): Instant {
  const match = RFC3339.exec(text);
  const [, year, month, day, hour, minute, second, fraction = '', zone] = match ?? [];
  const daysInMonth = match ? new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate() : 0;
  const valid =
    match !== null &&
    Number(month) >= 1 && Number(month) <= 12 &&
    Number(day) >= 1 && Number(day) <= daysInMonth &&
    Number(hour) <= 23 && Number(minute) <= 59 && Number(second) <= 59;
  const ms = valid ? Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}${zone!.toUpperCase()}`) : NaN;
  if (Number.isNaN(ms)) throw new VersionQueryError(`${name} must be an RFC 3339 timestamp, not ${JSON.stringify(text)}`);
  return BigInt(ms) * NS_PER_MS + BigInt(fraction.padEnd(9, '0'));
}

export function parseOperation(name: string, text: string): VersionOperation {
  if ((VERSION_OPERATIONS as readonly string[]).includes(text)) return text as VersionOperation;
  throw new VersionQueryError(`${name} must be one of ${VERSION_OPERATIONS.join(', ')}, not ${JSON.stringify(text)}`);
}

function matches({ record, at }: Entry, filter: VersionFilter): boolean {
  return (
    (filter.createdAtGte === undefined || at >= filter.createdAtGte) &&
    (filter.createdAtLte === undefined || at <= filter.createdAtLte) &&
    (filter.memoryId === undefined || record.memory_id === filter.memoryId) &&
    (filter.operation === undefined || record.operation === filter.operation)
  );
}

function newestFirst(a: Entry, b: Entry): number {
  if (a.at !== b.at) return a.at > b.at ? -1 : 1;
  return b.seq - a.seq;
}

function olderThan(entry: Entry, cursor: { at: Instant; seq: number }): boolean {
  return entry.at < cursor.at || (entry.at === cursor.at && entry.seq < cursor.seq);
}

function encodeCursor(entry: Entry): string {
  return encodePageCursor(`v1:${entry.at}:${entry.seq}`);
}

function decodeCursor(cursor: string): { at: Instant; seq: number } {
  const match = /^v1:(-?\d+):(\d+)$/.exec(decodePageCursor(cursor) ?? '');
  if (!match) throw new VersionQueryError(`page ${JSON.stringify(cursor)} is not a cursor this listing returned`);
  return { at: BigInt(match[1]!), seq: Number(match[2]) };
}

function newVersionId(): string {
  return `memver_${randomBytes(12).toString('hex')}`;
}
