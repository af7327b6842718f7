import { ancestorPaths } from '../model/memory-path.js';
import type { StoreMemory, StoreMemoryVersion } from '../remote/store-client.js';

/**
 * What the engine knows of a store's memories between passes, and how the change feed (memory
 * versions) moves it forward. Pure: no I/O, no clock of its own. The I/O around it is
 * remote-view.ts.
 *
 * The feed is an optimisation. Whenever a batch of versions leaves any doubt, the fold says so
 * (`FeedDoubt`) and the caller lists the store in full instead; nothing here ever guesses.
 *
 * Time. Server timestamps are compared only with each other, never with the host's clock, and
 * never assumed distinct. Where the next read starts (`since`) is a lower bound on the
 * `created_at` of every version not yet accounted for:
 * - a version that committed before a read started is in that read (it matches the filter,
 *   since its `created_at` is at least `since` by this very invariant);
 * - one that commits later was stamped no earlier than the server's clock at the read's start,
 *   give or take `FEED_OVERLAP_MS` for writes in flight and for clocks of several servers.
 * The server's clock at a read's start is known only from below: every server timestamp seen
 * (`mark`) plus the time elapsed since on the host's monotonic clock. That elapsed time is
 * credited up to `MAX_ELAPSED_CREDIT_MS` only, so that a drift between the two clocks never
 * adds up over a long session; an idle store has no version newer than its mark anyway.
 * Versions at or after `since` that were already folded in are remembered by id (`seen`), so
 * the overlap re-reads them without applying them twice.
 */

/** An instant in nanoseconds since the epoch: the service may send sub-millisecond times. */
export type Instant = bigint;

/** How far back of the estimated server time each read starts, in ms. */
export const FEED_OVERLAP_MS = 2_000;
/** The most host-clock time credited to the server's clock since its last timestamp seen, in ms. */
export const MAX_ELAPSED_CREDIT_MS = 30_000;

const NS_PER_MS = 1_000_000n;

/** One memory as the engine last knew it. */
export interface KnownMemory {
  path: string;
  sha: string;
  /** The version that holds this state, when known (a listing's `memory_version_id`, a folded version's id). */
  versionId: string | null;
  /** When this state was written, on the server's clock (`updated_at`, a version's `created_at`), when known. */
  at: Instant | null;
}

/** The server's clock read at least `at` at `localMs` on the host's monotonic clock. */
export interface ServerClockMark {
  at: Instant;
  localMs: number;
}

/** What the view knows of a memory the store said is deleted. */
export interface GoneMemory {
  /**
   * The `created_at` of its deleted version, when the feed showed it (null when learned
   * otherwise: this session's delete, a `not_found`). A deletion is final, so a version of that
   * memory stamped no later, which the feed shows only now, is one it showed late, and brings
   * nothing back (`foldVersions`).
   */
  at: Instant | null;
  /**
   * For a memory the view never knew before the feed showed it deleted (created and deleted
   * between two reads, or created by a write whose answer was lost): the path and sha its last
   * version before the deletion held. How a write of unknown outcome that landed, and that
   * another writer deleted before the view ever saw it, is told from one that never landed
   * (`landedThenDeleted`). A memory the view knew (listed, written, fetched) gets none: its
   * content is no write of ours in doubt, however equal the bytes.
   */
  last?: { path: string; sha: string };
  /**
   * The path and sha the memory held when the store deleted it, as far as the feed showed it:
   * its last version before the deletion in the read that showed the deletion, or else the state
   * the view knew. Absent when learned otherwise (this session's delete, a `not_found`). How a
   * move the agent made alike, to a path where the memory was then deleted, is told from a new
   * file (`renames.ts` `movedAlikeThenDeleted`).
   */
  deletedAs?: { path: string; sha: string };
}

export interface RemoteFeedState {
  /** Every memory of the store, by memory id. */
  memories: ReadonlyMap<string, KnownMemory>;
  /** The next read asks for versions created at or after this; `null`: not known, list in full. */
  since: Instant | null;
  /** Version ids already accounted for, with their `created_at`; only those at or after `since` are kept. */
  seen: ReadonlyMap<string, Instant>;
  /** The best lower bound known on the server's clock. */
  mark: ServerClockMark | null;
  /**
   * Ids of memories the store itself said are deleted (a `deleted` version folded, this session's
   * delete, a `not_found`), until a listing, version or write shows them again: what corroborates
   * a memory's absence (absence.ts), where a listing's silence alone does not. See `GoneMemory`.
   */
  gone: ReadonlyMap<string, GoneMemory>;
  /**
   * The state rests on a full listing that no feed read has been folded after yet, and that
   * listing is to be checked by the first one (see `foldVersions`): a paged listing another
   * writer acted during may have missed a memory that was there all along, and the feed never
   * names such a memory again. False once a read is folded, and for the last listing of a chain
   * (`LISTING_CHAIN_MAX`).
   */
  listingUnchecked: boolean;
  /**
   * How many full listings in a row, the one this state rests on the last, were made because
   * the check of the listing before found another writer acting (`listed_while_written`): 0 for
   * a listing made for any other reason, and once a read is folded. What bounds the chain.
   */
  listingChain: number;
  /**
   * What a fetch made after that unchecked listing showed of a memory the listing does not
   * account for (another state of it, or a memory it did not show), or null. A pass learns its
   * own fetches into `memories` (`learnChange`) before the next read, and the feed then shows
   * that version as known: the one sign that another writer acted while the listing paged would
   * be gone before the check (B50). Kept here, the check still finds it (`foldVersions`).
   */
  listingContradicted: string | null;
}

/**
 * The most full listings in a row made for `listed_while_written`; the last of them is not
 * checked. Invariant: every other full listing is checked by a feed read folded after it, the
 * next pass's first read for a listing made for any other reason, a read made at once, in the
 * same pass, for one made for `listed_while_written` (`checkListingAtOnce`). A listing that
 * missed a memory there all along did so because another writer acted while it paged, and in
 * the check that write is a version the listing does not account for (a memory it did not show,
 * or showed older; a memory met twice starts over from `no_start` instead). So a missed memory
 * is in the view after the next listing unless that one is written during as well, and however
 * busy or hostile the other writer, a pass lists at most this many times in a row for it (a
 * chain whose check read fails goes on at the next pass, counted on). A chain cut off here
 * leaves a missed memory to the listing cadence (`ListingPolicy`): late, never lost.
 *
 * The check of a chained listing is made at once because only the versions written while that
 * listing paged can have displaced an entry, and the server's clock is known only from below:
 * a read a pass later could not tell those from the versions written after the listing, and
 * would list a busy store again every pass. A read right after it sees only the listing's own
 * window and the moment since.
 */
export const LISTING_CHAIN_MAX = 3;

/** When one read (a feed read, a listing) ran, on the host's monotonic clock, in ms. */
export interface ReadTimes {
  startedMs: number;
  endedMs: number;
}

/** A memory as a listing or a write returns it: what the state keeps of it. */
export type ListedMemory = Pick<StoreMemory, 'id' | 'path' | 'content_sha256' | 'updated_at' | 'memory_version_id'>;

/**
 * What a write or a fetch of this session taught about one memory. `fetched`: a `get`'s answer,
 * which shows the memory as any writer left it (a write's answer shows this session's own
 * version). `notFound`: the deletion was only inferred from a `not_found` answer, which a store
 * may send spuriously.
 */
export type RemoteChange = { kind: 'memory'; memory: ListedMemory; fetched?: true } | { kind: 'deleted'; memoryId: string; notFound?: boolean };

export type FeedDoubtCode =
  /** No `since` yet: the store was never listed with timestamps. */
  | 'no_start'
  /** A `created_at` that is not an RFC 3339 timestamp. */
  | 'bad_timestamp'
  /** A redacted version: what it recorded is gone. */
  | 'redacted'
  /** A version that is not a deletion but has no path or no sha. */
  | 'pathless'
  /** One version id twice in a read, with different fields. */
  | 'duplicate'
  /** Two versions of one memory with one `created_at`: which came last is unknown. */
  | 'tie'
  /** A change to a memory never seen created: versions were missed (retention, a gap). */
  | 'unknown_memory'
  /** A `created` version for a memory already known, newer than what is known of it. */
  | 'recreated'
  /** A version of a memory after its deletion. */
  | 'after_delete'
  /** After the fold, two memories at one path, or a memory at a folder of another. */
  | 'path_taken'
  /**
   * The first read after a full listing brings a version that listing does not account for:
   * another writer acted while (or since) it paged, so it may have missed a memory (a page
   * boundary moved under its cursor). Listed again; that listing is checked at once, and so
   * on, up to `LISTING_CHAIN_MAX` listings in a row.
   */
  | 'listed_while_written';

/** Why a batch of versions cannot be trusted: the caller lists the store in full. */
export interface FeedDoubt {
  code: FeedDoubtCode;
  detail: string;
}

export type FoldResult =
  | { kind: 'folded'; state: RemoteFeedState; changed: number }
  | { kind: 'doubt'; doubt: FeedDoubt };

export function emptyFeedState(): RemoteFeedState {
  return { memories: new Map(), since: null, seen: new Map(), mark: null, gone: new Map(), listingUnchecked: false, listingChain: 0, listingContradicted: null };
}

/**
 * A fresh start after the store's content is no longer known (a wiped folder, a failed
 * download): every memory forgotten, so the next read must be a full listing. The clock mark
 * stays: it is about the server, not about this store's content.
 */
export function forgetMemories(state: RemoteFeedState): RemoteFeedState {
  return { memories: new Map(), since: null, seen: new Map(), mark: state.mark, gone: new Map(), listingUnchecked: false, listingChain: 0, listingContradicted: null };
}

/** An RFC 3339 timestamp as an Instant, or `null` when it is not one. */
export function parseTimestamp(text: unknown): Instant | null {
  if (typeof text !== 'string') return null;
  // The common form (`2026-01-01T00:00:00.000Z`, what the service and the fakes send) without
  // the general regex: a listing of 10,000 memories parses one per memory.
  if (text.length === 24 && MS_UTC.test(text)) {
    const ms = Date.parse(text);
    return Number.isNaN(ms) ? null : BigInt(ms) * NS_PER_MS;
  }
  const match = RFC3339.exec(text);
  if (!match) return null;
  const [, date, time, fraction = '', zone] = match;
  const ms = Date.parse(`${date}T${time}${zone!.toUpperCase()}`);
  if (Number.isNaN(ms)) return null;
  return BigInt(ms) * NS_PER_MS + BigInt(fraction.slice(0, 9).padEnd(9, '0'));
}

const MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An Instant as RFC 3339 in UTC, rounded down to the millisecond: a bound sent to the service
 * may only ever be earlier than the instant, never later.
 */
export function formatTimestamp(at: Instant): string {
  const ms = at >= 0n ? at / NS_PER_MS : -((-at + NS_PER_MS - 1n) / NS_PER_MS);
  return new Date(Number(ms)).toISOString();
}

/**
 * Folds one read of the feed (every version at or after `state.since`, in any order, possibly
 * with duplicates) into the state. Returns the new state, or the doubt that calls for a full
 * listing instead; the state given is never changed.
 *
 * The first read after a full listing (`listingUnchecked`) also checks that listing. A paged
 * listing is not a snapshot: a memory there all along can fall between two pages when another
 * writer creates, deletes or renames while it pages, and the view built from it then lacks the
 * memory with no version ever to name it again (it is seen only at the next listing on the
 * cadence). So a version that listing does not account for — one newer than the state it showed
 * of its memory, or of a memory it did not show, unless that memory is known gone — is doubt
 * `listed_while_written`. The window cannot be narrowed to the listing's own here: the server's
 * clock is known only from below (`mark`), so a version stamped after the listing ended cannot be
 * told from one stamped while it paged. That is why the listing made for that doubt is checked by
 * a read made at once (`checkListingAtOnce`), up to `LISTING_CHAIN_MAX` listings in a row. A
 * read folded ends the chain.
 */
export function foldVersions(
  state: RemoteFeedState,
  versions: readonly StoreMemoryVersion[],
  times: ReadTimes,
  overlapMs = FEED_OVERLAP_MS,
): FoldResult {
  if (state.since === null) return doubt('no_start', 'the store was never listed with timestamps');
  if (state.listingUnchecked && state.listingContradicted !== null) return doubt('listed_while_written', state.listingContradicted);
  const fresh = new Map<string, Stamped>();
  let newest: Instant | undefined;
  for (const version of versions) {
    const at = parseTimestamp(version.created_at);
    if (at === null) return doubt('bad_timestamp', `version ${version.id} has created_at ${JSON.stringify(version.created_at)}`);
    if (newest === undefined || at > newest) newest = at;
    // Read again through the overlap: folded in already.
    if (state.seen.has(version.id)) continue;
    const twin = fresh.get(version.id);
    if (twin) {
      if (!sameVersion(twin.version, version)) return doubt('duplicate', `version ${version.id} was listed twice with different fields`);
      continue;
    }
    if (version.redacted_at !== null) return doubt('redacted', `version ${version.id} of memory ${version.memory_id} was redacted`);
    if (version.operation !== 'deleted' && (version.path === null || version.content_sha256 === null)) {
      return doubt('pathless', `version ${version.id} of memory ${version.memory_id} has no path or no sha`);
    }
    fresh.set(version.id, { version, at });
  }

  const byMemory = new Map<string, Stamped[]>();
  for (const stamped of fresh.values()) {
    const list = byMemory.get(stamped.version.memory_id);
    if (list) list.push(stamped);
    else byMemory.set(stamped.version.memory_id, [stamped]);
  }
  let memories: Map<string, KnownMemory> | undefined;
  let gone: Map<string, GoneMemory> | undefined;
  const moved = new Set<string>();
  let changed = 0;
  for (const [memoryId, all] of byMemory) {
    all.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    // A memory the feed showed deleted: its versions stamped no later than that deletion were
    // shown late (a version missing from one read, there in the next). Folded, the first of them
    // would make the memory known again, a memory the store no longer holds.
    const goneAt = state.gone.get(memoryId)?.at;
    const stamped = goneAt == null ? all : all.filter((s) => s.version.operation === 'deleted' || s.at > goneAt);
    if (stamped.length === 0) continue;
    const step = foldMemory(state.memories.get(memoryId), stamped);
    if (step.kind === 'doubt') return step;
    // Gone by the end of this read, whether known before or not: the store said so.
    const deleted = stamped.at(-1)!.version.operation === 'deleted';
    if (state.listingUnchecked && (step.kind !== 'keep' || (!state.memories.has(memoryId) && !(deleted && state.gone.has(memoryId))))) {
      return doubt('listed_while_written', `memory ${memoryId} has a version the last full listing does not account for: another writer acted while it paged`);
    }
    if (deleted ? state.gone.get(memoryId)?.at !== stamped.at(-1)!.at : state.gone.has(memoryId) && step.kind === 'set') {
      gone ??= new Map(state.gone);
      if (deleted) {
        const before = state.gone.get(memoryId);
        const unknownBefore = !state.memories.has(memoryId) && before === undefined;
        const held = lastHeld(stamped).last ?? known(state.memories.get(memoryId));
        gone.set(memoryId, {
          at: stamped.at(-1)!.at,
          ...(before?.last ? { last: before.last } : unknownBefore ? lastHeld(stamped) : {}),
          ...(held && { deletedAs: held }),
        });
      }
      else gone.delete(memoryId);
    }
    if (step.kind === 'keep') continue;
    // Copied once, on the first change: an idle read costs no copy of a large store.
    memories ??= new Map(state.memories);
    changed++;
    if (step.kind === 'remove') memories.delete(memoryId);
    else {
      memories.set(memoryId, step.memory);
      moved.add(memoryId);
    }
  }
  if (memories) {
    const clash = pathClash(memories, moved);
    if (clash) return { kind: 'doubt', doubt: clash };
  }

  const next = advance(state, newest, times, overlapMs);
  const seen = new Map<string, Instant>();
  for (const [id, at] of state.seen) if (at >= next.since!) seen.set(id, at);
  for (const [id, { at }] of fresh) if (at >= next.since!) seen.set(id, at);
  return {
    kind: 'folded',
    state: {
      memories: memories ?? state.memories,
      since: next.since,
      seen,
      mark: next.mark,
      gone: gone ?? state.gone,
      listingUnchecked: false,
      listingChain: 0,
      listingContradicted: null,
    },
    changed,
  };
}

interface Stamped {
  version: StoreMemoryVersion;
  at: Instant;
}

type MemoryStep = { kind: 'keep' } | { kind: 'remove' } | { kind: 'set'; memory: KnownMemory } | { kind: 'doubt'; doubt: FeedDoubt };

/**
 * One memory's new versions (oldest first, no two at one instant) against what is known of it.
 * One branch per row, in this order:
 *
 * | known? | its new versions                                           | step                 |
 * | ------ | ---------------------------------------------------------- | -------------------- |
 * | any    | one at the same instant as another                         | doubt `tie`          |
 * | any    | a `deleted` followed by another version                    | doubt `after_delete` |
 * | yes    | none newer than the known state (older, or equal to it)    | keep                 |
 * | yes    | one at the known state's instant, recording something else | doubt `tie`          |
 * | yes    | a `created` newer than the known state                     | doubt `recreated`    |
 * | yes    | the newest is `deleted`                                    | remove               |
 * | yes    | the newest is `created` or `modified`                      | set to the newest    |
 * | no     | the newest is `deleted`                                    | keep (it is absent)  |
 * | no     | the oldest is not `created`                                | doubt `unknown_memory` |
 * | no     | otherwise                                                  | set to the newest    |
 *
 * "The known state's instant" is the `created_at` of its version when that version is in the
 * read, else the `at` known (a listing's `updated_at`); when neither is known, every new version
 * counts as newer and only the newest matters.
 */
function foldMemory(known: KnownMemory | undefined, versions: readonly Stamped[]): MemoryStep {
  const memoryId = versions[0]!.version.memory_id;
  for (let i = 1; i < versions.length; i++) {
    if (versions[i]!.at === versions[i - 1]!.at) {
      return doubt('tie', `memory ${memoryId} has two versions created at ${versions[i]!.version.created_at}`);
    }
  }
  for (let i = 0; i < versions.length - 1; i++) {
    if (versions[i]!.version.operation === 'deleted') return doubt('after_delete', `memory ${memoryId} has a version after its deletion`);
  }
  if (known) {
    // The known state's own version, read again (after a listing, or its `seen` entry expired).
    const own = known.versionId === null ? undefined : versions.find((s) => s.version.id === known.versionId);
    const knownAt = own?.at ?? known.at;
    const newer = versions.filter((s) => s !== own && (knownAt === null || s.at >= knownAt));
    const tied = knownAt === null ? undefined : newer.find((s) => s.at === knownAt && !recordsState(s.version, known));
    if (tied) return doubt('tie', `memory ${memoryId}: version ${tied.version.id} has the instant of the state already known`);
    const after = newer.filter((s) => knownAt === null || s.at > knownAt);
    if (after.length === 0) return { kind: 'keep' };
    if (knownAt !== null && after.some((s) => s.version.operation === 'created')) {
      return doubt('recreated', `memory ${memoryId} is already known but has a newer 'created' version`);
    }
    const last = after.at(-1)!;
    if (last.version.operation === 'deleted') return { kind: 'remove' };
    const memory = stateOf(last);
    // The same path and content again (changed and changed back) is the same state to the
    // planner, but held by a newer version now: known by that one, so that no event names an
    // older version as the one written.
    return sameState(memory, known) && memory.versionId === known.versionId ? { kind: 'keep' } : { kind: 'set', memory };
  }
  const last = versions.at(-1)!;
  // Gone by the end of the read: absent here already, whatever came before.
  if (last.version.operation === 'deleted') return { kind: 'keep' };
  if (versions[0]!.version.operation !== 'created') {
    return doubt('unknown_memory', `memory ${memoryId} changed (${versions[0]!.version.operation}) but was never seen created`);
  }
  return { kind: 'set', memory: stateOf(last) };
}

/** The path and sha a memory held last before its deletion: its newest version in this read that is not the deletion. */
function lastHeld(stamped: readonly Stamped[]): Pick<GoneMemory, 'last'> {
  for (let i = stamped.length - 1; i >= 0; i--) {
    const { version } = stamped[i]!;
    if (version.operation !== 'deleted' && version.path !== null && version.content_sha256 !== null) return { last: { path: version.path, sha: version.content_sha256 } };
  }
  return {};
}

function known(memory: KnownMemory | undefined): { path: string; sha: string } | undefined {
  return memory && { path: memory.path, sha: memory.sha };
}

function stateOf({ version, at }: Stamped): KnownMemory {
  return { path: version.path!, sha: version.content_sha256!, versionId: version.id, at };
}

/** The version records exactly the state known: same path and content, not a deletion. */
function recordsState(version: StoreMemoryVersion, known: KnownMemory): boolean {
  return version.operation !== 'deleted' && version.path === known.path && version.content_sha256 === known.sha;
}

/** Same path and content: `at` and `versionId` only say when and by which version. */
function sameState(a: KnownMemory, b: KnownMemory): boolean {
  return a.path === b.path && a.sha === b.sha;
}

function sameVersion(a: StoreMemoryVersion, b: StoreMemoryVersion): boolean {
  return (
    a.memory_id === b.memory_id &&
    a.operation === b.operation &&
    a.path === b.path &&
    a.content_sha256 === b.content_sha256 &&
    a.created_at === b.created_at &&
    a.redacted_at === b.redacted_at
  );
}

/**
 * A store never holds two memories at one path, nor a memory at a folder of another: after a
 * fold, either means a version was missed. Checked where a memory this fold moved is involved.
 */
function pathClash(memories: ReadonlyMap<string, KnownMemory>, moved: ReadonlySet<string>): FeedDoubt | null {
  const owner = new Map<string, string>();
  for (const [id, memory] of memories) {
    const other = owner.get(memory.path);
    if (other === undefined) owner.set(memory.path, id);
    else if (moved.has(id) || moved.has(other)) {
      return { code: 'path_taken', detail: `memories ${other} and ${id} are both at ${memory.path}` };
    }
  }
  const movedAt = new Map<string, string>();
  for (const id of moved) {
    const path = memories.get(id)!.path;
    movedAt.set(path, id);
    const above = ancestorPaths(path).find((folder) => owner.has(folder));
    if (above !== undefined) return { code: 'path_taken', detail: `memory ${id} at ${path} is below the memory at ${above}` };
  }
  for (const memory of memories.values()) {
    const folder = ancestorPaths(memory.path).find((f) => movedAt.has(f));
    if (folder !== undefined) {
      return { code: 'path_taken', detail: `memory ${movedAt.get(folder)} at ${folder} is a folder of the memory at ${memory.path}` };
    }
  }
  return null;
}

/**
 * The state a full listing establishes. `accounted`: a feed read made before the listing
 * started (and found doubtful, `doubt` its code): a version in it that the listing shows
 * (`listingShows`) is remembered as seen, and every timestamp in it moves the clock mark like any
 * other; one the listing does not show is read again by the next read (`since` goes back to it).
 * The first read after the listing checks it (`listingUnchecked`); a listing made because that
 * check failed for the listing before it (`listed_while_written`) extends the chain, and the
 * `LISTING_CHAIN_MAX`-th in a row is not checked.
 */
export function stateFromListing(
  previous: RemoteFeedState,
  listed: Iterable<ListedMemory>,
  times: ReadTimes,
  accounted?: { versions: readonly StoreMemoryVersion[]; times: ReadTimes; doubt?: FeedDoubtCode },
  overlapMs = FEED_OVERLAP_MS,
): RemoteFeedState {
  const memories = new Map<string, KnownMemory>();
  let newestUpdate: Instant | undefined;
  let twice = false;
  for (const memory of listed) {
    const known = knownFrom(memory);
    if (known.at !== null && (newestUpdate === undefined || known.at > newestUpdate)) newestUpdate = known.at;
    if (memories.has(memory.id)) twice = true;
    memories.set(memory.id, known);
  }
  let clock: Pick<RemoteFeedState, 'since' | 'mark'> = previous;
  const accountedAt = new Map<string, Instant>();
  let unaccountedFrom: Instant | undefined;
  if (accounted) {
    let newest: Instant | undefined;
    const stamped: Stamped[] = [];
    for (const version of accounted.versions) {
      const at = parseTimestamp(version.created_at);
      if (at === null) continue;
      stamped.push({ version, at });
      if (newest === undefined || at > newest) newest = at;
    }
    clock = advance(clock, newest, accounted.times, overlapMs);
    const newestOf = new Map<string, Stamped>();
    for (const one of stamped) {
      const known = newestOf.get(one.version.memory_id);
      if (known === undefined || one.at > known.at) newestOf.set(one.version.memory_id, one);
    }
    for (const { version, at } of stamped) {
      if (listingShows(memories.get(version.memory_id), newestOf.get(version.memory_id)!)) accountedAt.set(version.id, at);
      else if (unaccountedFrom === undefined || at < unaccountedFrom) unaccountedFrom = at;
    }
  }
  clock = advance(clock, newestUpdate, times, overlapMs);
  // One memory met at two paths (a rename while the listing was under way): which is current is
  // unknown, so the next pass lists again rather than start the feed from this.
  let since = twice ? null : clock.since;
  // A version the listing does not account for is read again: the feed starts no later than it,
  // so the next read folds it and finds what the listing missed (`listed_while_written`).
  if (since !== null && unaccountedFrom !== undefined && unaccountedFrom < since) since = unaccountedFrom;
  const seen = new Map<string, Instant>();
  if (since !== null) {
    for (const [id, at] of previous.seen) if (at >= since) seen.set(id, at);
    for (const [id, at] of accountedAt) if (at >= since) seen.set(id, at);
  }
  // A deletion the store reported stays known across the listing (which cannot show it), unless
  // the listing shows the memory after all (the `not_found` was spurious).
  const gone = new Map([...previous.gone].filter(([id]) => !memories.has(id)));
  const listingChain = accounted?.doubt === 'listed_while_written' ? previous.listingChain + 1 : 0;
  return { memories, since, seen, mark: clock.mark, gone, listingUnchecked: listingChain < LISTING_CHAIN_MAX, listingChain, listingContradicted: null };
}

/**
 * Whether a listing shows (`shown`: what it holds of the memory) what the read made before it did
 * to that memory (`newest`: the read's newest version of it): the memory at that state (that version, or one written later), or, when
 * that read ended with the memory deleted, the memory absent. Not so when the listing missed the
 * memory (a paged listing can, while another writer acts) or shows it older than the read did:
 * that version is then not the listing's, and is not taken as seen. A memory the listing shows
 * without a timestamp is taken as shown (nothing tells otherwise).
 */
function listingShows(shown: KnownMemory | undefined, newest: Stamped): boolean {
  if (newest.version.operation === 'deleted') return shown === undefined;
  if (shown === undefined) return false;
  return shown.at === null || shown.versionId === newest.version.id || shown.at >= newest.at;
}

/**
 * Whether the listing the state rests on is to be checked by a feed read made at once, in the
 * pass that listed (see `LISTING_CHAIN_MAX`): it was made for `listed_while_written`, is not the
 * last of its chain, and gave the feed a start (one that met a memory twice did not: the next
 * pass lists anyway). Any other listing waits for the next pass's first read.
 */
export function checkListingAtOnce(state: RemoteFeedState): boolean {
  return state.listingUnchecked && state.listingChain > 0 && state.since !== null;
}

/** What the state keeps of a memory a listing, a write or a fetch returned. */
function knownFrom(memory: ListedMemory): KnownMemory {
  return {
    path: memory.path,
    sha: memory.content_sha256,
    versionId: typeof memory.memory_version_id === 'string' ? memory.memory_version_id : null,
    at: parseTimestamp(memory.updated_at),
  };
}

/**
 * Moves the clock mark by the newest server timestamp a read returned, and `since` to the
 * estimated server time at the read's start, less the overlap. Neither ever moves back.
 */
function advance(
  state: Pick<RemoteFeedState, 'since' | 'mark'>,
  newest: Instant | undefined,
  times: ReadTimes,
  overlapMs: number,
): Pick<RemoteFeedState, 'since' | 'mark'> {
  let mark = state.mark;
  if (newest !== undefined) {
    const learned: ServerClockMark = { at: newest, localMs: times.endedMs };
    if (mark === null || serverAtLeast(learned, times.endedMs) > serverAtLeast(mark, times.endedMs)) mark = learned;
  }
  if (mark === null) return { since: state.since, mark };
  const start = serverAtLeast(mark, times.startedMs) - BigInt(overlapMs) * NS_PER_MS;
  return { since: state.since === null || start > state.since ? start : state.since, mark };
}

/** The least the server's clock can have read at `localMs`, by `mark`. */
function serverAtLeast(mark: ServerClockMark, localMs: number): Instant {
  const elapsed = Math.floor(Math.min(localMs - mark.localMs, MAX_ELAPSED_CREDIT_MS));
  return mark.at + BigInt(elapsed) * NS_PER_MS;
}

/**
 * Why a memory fetched after the full listing the state rests on, not yet checked, contradicts
 * that listing: it is at another state than the listing showed (a newer version, other content,
 * another path) or the listing did not show it at all. Null when it agrees, or when the listing
 * is checked already. Another writer acted while the listing paged, or since: either way the
 * check the feed would have made of that version (`foldVersions`) is owed.
 */
export function fetchContradictsListing(state: RemoteFeedState, memory: ListedMemory): string | null {
  if (!state.listingUnchecked) return null;
  const listed = state.memories.get(memory.id);
  if (listed === undefined) return `memory ${memory.id} was fetched since the last full listing, which did not show it: another writer acted while it paged`;
  const fetched = knownFrom(memory);
  const newer = fetched.at !== null && listed.at !== null && fetched.at > listed.at;
  const otherVersion = fetched.versionId !== null && listed.versionId !== null && fetched.versionId !== listed.versionId;
  if (!newer && !otherVersion && sameState(fetched, listed)) return null;
  return `memory ${memory.id} was fetched at another state than the last full listing showed: another writer acted while (or since) it paged`;
}

/** Folds what this session's own write or fetch returned into `memories` and `gone` (both mutated). */
export function learnChange(memories: Map<string, KnownMemory>, change: RemoteChange, gone?: Map<string, GoneMemory>): void {
  if (change.kind === 'deleted') {
    memories.delete(change.memoryId);
    // The instant of a deletion the feed showed is kept: this answer has none.
    if (!gone?.has(change.memoryId)) gone?.set(change.memoryId, { at: null });
  } else {
    memories.set(change.memory.id, knownFrom(change.memory));
    gone?.delete(change.memory.id);
  }
}

/**
 * The state with `gone` cut down to what can still matter, which bounds it: the ids in `keep`
 * (the ones a baseline path still names, whose absence they corroborate), and deletions the feed
 * showed at or after `since`, older versions of which the next read may still show late.
 */
export function keepGone(state: RemoteFeedState, keep: ReadonlySet<string>): RemoteFeedState {
  const kept = ([id, { at }]: [string, GoneMemory]) => keep.has(id) || (at !== null && state.since !== null && at >= state.since);
  if ([...state.gone].every(kept)) return state;
  return { ...state, gone: new Map([...state.gone].filter(kept)) };
}

/** Options of the full-listing cadence, resolved. */
export interface ListingPolicy {
  /** A pass lists in full when this many passes (it included) have gone by since the last full listing. */
  everyPasses: number;
  /** A pass lists in full when this many ms (the mounter's clock) have gone by since the last full listing. */
  everyMs: number;
}

export type FullListingReason =
  | 'requested'
  | 'no_feed'
  | 'feed_refused'
  | 'no_start'
  | 'pass_count'
  | 'interval'
  | 'feed_error'
  /** The store contradicted the view at the last pass's writes (remote-view.ts `distrust`). */
  | 'contradicted'
  /** The last pass kept files whose memories one listing missed: a second listing settles them (absence.ts). */
  | 'unconfirmed_absence'
  | FeedDoubtCode;

export interface ReadChoiceInput {
  /** `full`: the caller wants a listing whatever else holds (the final sync). */
  mode: 'auto' | 'full';
  /** `absent`: the client has no `listVersions`; `refused`: it answered 400/401/403/404 this session. */
  feed: 'available' | 'absent' | 'refused';
  since: Instant | null;
  /** Passes since the last full listing, not counting this one. */
  passesSinceFull: number;
  /** ms on the mounter's clock since the last full listing; `null` if there has been none. */
  msSinceFull: number | null;
  policy: ListingPolicy;
}

/**
 * Whether a pass reads the feed or lists the store in full. One branch per row, in this order:
 *
 * | condition                                                | read                      |
 * | -------------------------------------------------------- | ------------------------- |
 * | the caller asks for a full listing (final sync)          | full `requested`          |
 * | the client has no change feed                            | full `no_feed`            |
 * | the feed refused this session                            | full `feed_refused`       |
 * | no start known (never listed with timestamps)            | full `no_start`           |
 * | `everyPasses` passes, this one included, since the last  | full `pass_count`         |
 * | `everyMs` or more since the last full listing            | full `interval`           |
 * | otherwise                                                | feed                      |
 */
export function chooseRead(input: ReadChoiceInput): { kind: 'feed' } | { kind: 'full'; reason: FullListingReason } {
  if (input.mode === 'full') return { kind: 'full', reason: 'requested' };
  if (input.feed === 'absent') return { kind: 'full', reason: 'no_feed' };
  if (input.feed === 'refused') return { kind: 'full', reason: 'feed_refused' };
  if (input.since === null || input.msSinceFull === null) return { kind: 'full', reason: 'no_start' };
  if (input.passesSinceFull + 1 >= input.policy.everyPasses) return { kind: 'full', reason: 'pass_count' };
  if (input.msSinceFull >= input.policy.everyMs) return { kind: 'full', reason: 'interval' };
  return { kind: 'feed' };
}

function doubt(code: FeedDoubtCode, detail: string): { kind: 'doubt'; doubt: FeedDoubt } {
  return { kind: 'doubt', doubt: { code, detail } };
}

/** A narrower read of the feed, with content: the versions created within the bounds, `count` of them when it was planned. */
export interface ContentWindow {
  /** The bounds (inclusive): versions' `created_at` exactly as the service sent them. */
  createdAtGte: string;
  createdAtLte: string;
  count: number;
  /** Memories whose newest version in the read it would carry the content of. */
  covers: number;
}

/**
 * After a read without content: the stretch of the versions read that, read again with
 * content (`pageSize` a page), carries what the memories changed in it now hold, when that
 * costs fewer requests than fetching those memories one by one; `null` when it does not (one
 * change or none, or changes spread so far back that the pages outnumber them). Pure.
 *
 * A memory needs content when its newest version read is not a deletion, not redacted, not
 * folded in already (`seen`), records a sha other than the one known, and `held` does not have
 * that sha. The stretch starts at the newest version that needs content and grows back while its
 * bytes (the versions' `content_size_bytes`) stay within `budgetBytes`; versions at one instant
 * go in or out together, since the bounds are inclusive.
 */
export function contentWindow(
  state: RemoteFeedState,
  versions: readonly StoreMemoryVersion[],
  held: (sha: string) => boolean,
  pageSize: number,
  budgetBytes: number,
): ContentWindow | null {
  const stamped: Stamped[] = [];
  const newest = new Map<string, Stamped>();
  for (const version of versions) {
    const at = parseTimestamp(version.created_at);
    if (at === null) return null;
    const s = { version, at };
    stamped.push(s);
    const before = newest.get(version.memory_id);
    if (!before || at > before.at) newest.set(version.memory_id, s);
  }
  const needed = new Set<Stamped>();
  for (const s of newest.values()) {
    const { version } = s;
    if (version.operation === 'deleted' || version.redacted_at !== null || version.content_sha256 === null) continue;
    if (state.seen.has(version.id) || state.memories.get(version.memory_id)?.sha === version.content_sha256 || held(version.content_sha256)) continue;
    needed.add(s);
  }
  if (needed.size < 2) return null;
  stamped.sort((a, b) => (a.at > b.at ? -1 : a.at < b.at ? 1 : 0));
  let best: ContentWindow | null = null;
  let start = -1;
  let bytes = 0;
  let covers = 0;
  for (let i = 0; i < stamped.length; ) {
    // Every version at this instant, together.
    let j = i;
    let add = 0;
    let found = 0;
    while (j < stamped.length && stamped[j]!.at === stamped[i]!.at) {
      add += stamped[j]!.version.content_size_bytes ?? 0;
      if (needed.has(stamped[j]!)) found++;
      j++;
    }
    // The stretch starts at the newest instant that needs content: what is newer is not re-read.
    if (start < 0 && found === 0) {
      i = j;
      continue;
    }
    if (start < 0) start = i;
    if (bytes + add > budgetBytes) break;
    bytes += add;
    covers += found;
    const count = j - start;
    if (found > 0 && Math.ceil(count / pageSize) < covers) {
      best = { createdAtGte: stamped[i]!.version.created_at, createdAtLte: stamped[start]!.version.created_at, count, covers };
    }
    if (covers === needed.size) break;
    i = j;
  }
  return best;
}

/**
 * The memory the store deleted after it held exactly `sha` at `path`, if the view saw one it
 * never knew before (`GoneMemory.last`): a write of unknown outcome whose path the store now
 * shows free, but whose very content such a memory held, landed, and another writer deleted it
 * before this view saw it. Pure.
 */
export function landedThenDeleted(gone: ReadonlyMap<string, GoneMemory>, path: string, sha: string): string | undefined {
  for (const [id, { last }] of gone) if (last?.path === path && last.sha === sha) return id;
  return undefined;
}
