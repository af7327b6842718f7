import { describe, expect, it } from 'vitest';
import type { StoreMemoryVersion } from '@memory-mounter/core';
import {
  checkListingAtOnce,
  chooseRead,
  contentWindow,
  emptyFeedState,
  FEED_OVERLAP_MS,
  fetchContradictsListing,
  foldVersions,
  forgetMemories,
  formatTimestamp,
  keepGone,
  learnChange,
  landedThenDeleted,
  type GoneMemory,
  LISTING_CHAIN_MAX,
  MAX_ELAPSED_CREDIT_MS,
  parseTimestamp,
  stateFromListing,
  type KnownMemory,
  type ReadChoiceInput,
  type RemoteFeedState,
} from '../src/decide/feed-fold.js';

// The pure fold of the change feed, row by row (see the tables in feed-fold.ts). Times are ms
// after T0 on the server's clock; the host's monotonic clock is a separate number line.
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const ns = (ms: number) => BigInt(T0 + ms) * 1_000_000n;
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const OVERLAP = BigInt(FEED_OVERLAP_MS) * 1_000_000n;
/** A read that took no host time, at host time 1,000. */
const READ = { startedMs: 1_000, endedMs: 1_000 };

type Op = StoreMemoryVersion['operation'];
function v(id: string, memoryId: string, op: Op, path: string | null, sha: string | null, atMs: number, redacted = false): StoreMemoryVersion {
  return {
    id,
    memory_id: memoryId,
    operation: op,
    path: redacted ? null : path,
    content_sha256: redacted || op === 'deleted' ? null : sha,
    created_at: iso(atMs),
    redacted_at: redacted ? iso(atMs + 1) : null,
  };
}

const known = (path: string, sha: string, versionId: string | null, atMs: number | null): KnownMemory => ({
  path,
  sha,
  versionId,
  at: atMs === null ? null : ns(atMs),
});

/** mem_a at /a.md (sha A1, version va1 at 0), mem_b at /d/b.md (sha B1, version vb1 at 0); the feed starts at -2 s. */
function state(over: Partial<RemoteFeedState> = {}): RemoteFeedState {
  return {
    memories: new Map([
      ['mem_a', known('/a.md', 'A1', 'va1', 0)],
      ['mem_b', known('/d/b.md', 'B1', 'vb1', 0)],
    ]),
    since: ns(-2_000),
    seen: new Map(),
    mark: { at: ns(0), localMs: 1_000 },
    gone: new Map(),
    listingUnchecked: false,
    listingChain: 0,
    listingContradicted: null,
    ...over,
  };
}

function folded(result: ReturnType<typeof foldVersions>): Extract<ReturnType<typeof foldVersions>, { kind: 'folded' }> {
  if (result.kind !== 'folded') throw new Error(`expected a fold, got doubt ${result.doubt.code}: ${result.doubt.detail}`);
  return result;
}
const paths = (s: RemoteFeedState) => Object.fromEntries([...s.memories].map(([id, m]) => [id, `${m.path}@${m.sha}`]));
const doubtOf = (result: ReturnType<typeof foldVersions>) => (result.kind === 'doubt' ? result.doubt.code : 'folded');

describe('timestamps', () => {
  it.each([
    ['2026-01-01T00:00:00Z', ns(0)],
    ['2026-01-01T00:00:00.5Z', ns(500)],
    ['2026-01-01T00:00:00.000000001Z', ns(0) + 1n],
    ['2026-01-01T00:00:00.1234567891Z', ns(123) + 456_789n], // beyond ns: truncated
    ['2026-01-01T01:00:00+01:00', ns(0)],
    ['2026-01-01t00:00:00z', ns(0)],
  ])('parses %s', (text, at) => {
    expect(parseTimestamp(text)).toBe(at);
  });

  it.each(['', '2026-01-01', '2026-01-01 00:00:00Z', '2026-01-01T00:00:00', '2026-13-01T00:00:00Z', 'yesterday', 17])('refuses %s', (text) => {
    expect(parseTimestamp(text)).toBeNull();
  });

  it('formats in UTC to the millisecond, rounding down: a bound sent is never later than the instant', () => {
    expect(formatTimestamp(ns(0))).toBe('2026-01-01T00:00:00.000Z');
    expect(formatTimestamp(ns(1) - 1n)).toBe('2026-01-01T00:00:00.000Z');
    expect(formatTimestamp(ns(1))).toBe('2026-01-01T00:00:00.001Z');
  });
});

describe('foldVersions: the read as a whole', () => {
  it('nothing new: nothing changes, not even the map (an idle pass copies nothing)', () => {
    const before = state();
    const result = folded(foldVersions(before, [], READ));
    expect(result.changed).toBe(0);
    expect(result.state.memories).toBe(before.memories);
  });

  it('no start yet: doubt no_start', () => {
    expect(doubtOf(foldVersions(state({ since: null }), [], READ))).toBe('no_start');
  });

  it('a version already folded in, read again through the overlap, is not applied twice', () => {
    const once = folded(foldVersions(state(), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)], READ));
    // Another writer then puts A3; the overlap reads va2 again, with va3.
    const twice = folded(foldVersions(once.state, [v('va3', 'mem_a', 'modified', '/a.md', 'A3', 700), v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)], READ));
    expect(paths(twice.state).mem_a).toBe('/a.md@A3');
    // And a read of only the old one changes nothing.
    const again = folded(foldVersions(twice.state, [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)], READ));
    expect(again.changed).toBe(0);
    expect(paths(again.state).mem_a).toBe('/a.md@A3');
  });

  it('one version listed twice alike (a page boundary that moved): applied once', () => {
    const dup = v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500);
    const result = folded(foldVersions(state(), [dup, { ...dup }], READ));
    expect(paths(result.state).mem_a).toBe('/a.md@A2');
  });

  it('one version id twice with different fields: doubt duplicate', () => {
    const dup = v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500);
    expect(doubtOf(foldVersions(state(), [dup, { ...dup, content_sha256: 'A9' }], READ))).toBe('duplicate');
  });

  it('a redacted version: doubt redacted (what it recorded is gone)', () => {
    expect(doubtOf(foldVersions(state(), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500, true)], READ))).toBe('redacted');
    expect(doubtOf(foldVersions(state(), [v('va2', 'mem_a', 'deleted', '/a.md', null, 500, true)], READ))).toBe('redacted');
  });

  it('a version that is not a deletion, without a path or a sha: doubt pathless', () => {
    expect(doubtOf(foldVersions(state(), [{ ...v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500), path: null }], READ))).toBe('pathless');
    expect(doubtOf(foldVersions(state(), [{ ...v('vc', 'mem_c', 'created', '/c.md', 'C', 500), content_sha256: null }], READ))).toBe(
      'pathless',
    );
  });

  it('a deletion without a path is fine: the memory id says what went', () => {
    const result = folded(foldVersions(state(), [{ ...v('va2', 'mem_a', 'deleted', '/a.md', null, 500), path: null }], READ));
    expect(result.state.memories.has('mem_a')).toBe(false);
  });

  it('a created_at that is not RFC 3339: doubt bad_timestamp', () => {
    expect(doubtOf(foldVersions(state(), [{ ...v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500), created_at: 'soon' }], READ))).toBe(
      'bad_timestamp',
    );
  });

  it('versions of different memories may share an instant', () => {
    const result = folded(
      foldVersions(state(), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500), v('vb2', 'mem_b', 'modified', '/d/b.md', 'B2', 500)], READ),
    );
    expect(result.changed).toBe(2);
  });

  it('order does not matter: every permutation of a batch folds to the same state', () => {
    const batch = [
      v('va2', 'mem_a', 'modified', '/a.md', 'A2', 100),
      v('va3', 'mem_a', 'modified', '/x/a.md', 'A2', 200),
      v('va4', 'mem_a', 'modified', '/x/a.md', 'A4', 300),
      v('vb2', 'mem_b', 'deleted', '/d/b.md', null, 150),
      v('vc1', 'mem_c', 'created', '/d/b.md', 'C1', 250),
    ];
    const results = permutations(batch).map((p) => paths(folded(foldVersions(state(), p, READ)).state));
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(results[0]).toEqual({ mem_a: '/x/a.md@A4', mem_c: '/d/b.md@C1' });
  });

  it('after a fold, two memories at one path: doubt path_taken (a version was missed)', () => {
    // mem_c created at /a.md, while mem_a is still known there: its move or deletion was missed.
    expect(doubtOf(foldVersions(state(), [v('vc1', 'mem_c', 'created', '/a.md', 'C1', 500)], READ))).toBe('path_taken');
  });

  it('after a fold, a memory at a folder of another, or below one: doubt path_taken', () => {
    expect(doubtOf(foldVersions(state(), [v('vc1', 'mem_c', 'created', '/a.md/c.md', 'C1', 500)], READ))).toBe('path_taken');
    expect(doubtOf(foldVersions(state(), [v('vc1', 'mem_c', 'created', '/d', 'C1', 500)], READ))).toBe('path_taken');
  });

  it('a path freed and taken in one read is no clash', () => {
    const result = folded(
      foldVersions(state(), [v('va2', 'mem_a', 'modified', '/moved.md', 'A1', 400), v('vc1', 'mem_c', 'created', '/a.md', 'C1', 500)], READ),
    );
    expect(paths(result.state)).toEqual({ mem_a: '/moved.md@A1', mem_b: '/d/b.md@B1', mem_c: '/a.md@C1' });
  });
});

describe('foldVersions: one memory, row by row', () => {
  it('any: two of its versions at one instant: doubt tie (which came last is unknown)', () => {
    const batch = [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500), v('va3', 'mem_a', 'modified', '/a.md', 'A3', 500)];
    expect(doubtOf(foldVersions(state(), batch, READ))).toBe('tie');
    const unknown = [v('vc1', 'mem_c', 'created', '/c.md', 'C1', 500), v('vc2', 'mem_c', 'modified', '/c.md', 'C2', 500)];
    expect(doubtOf(foldVersions(state(), unknown, READ))).toBe('tie');
  });

  it('any: a deletion followed by another version: doubt after_delete', () => {
    const batch = [v('va2', 'mem_a', 'deleted', '/a.md', null, 500), v('va3', 'mem_a', 'modified', '/a.md', 'A3', 600)];
    expect(doubtOf(foldVersions(state(), batch, READ))).toBe('after_delete');
  });

  it('known: only versions older than what is known: keep', () => {
    const result = folded(foldVersions(state(), [v('va0', 'mem_a', 'modified', '/a.md', 'A0', -500)], READ));
    expect(result.changed).toBe(0);
    expect(paths(result.state).mem_a).toBe('/a.md@A1');
  });

  it('known: its own version read again (after the listing that taught it): keep', () => {
    const result = folded(foldVersions(state(), [v('va1', 'mem_a', 'modified', '/a.md', 'A1', 0)], READ));
    expect(result.changed).toBe(0);
  });

  it("known: its own version in the read sets the known instant, even where the listing's updated_at differs", () => {
    // Listed with updated_at 10 ms after its version was stamped; a newer version at 5 ms is newer than the version.
    const s = state({ memories: new Map([['mem_a', known('/a.md', 'A1', 'va1', 10)]]) });
    const result = folded(foldVersions(s, [v('va1', 'mem_a', 'modified', '/a.md', 'A1', 0), v('va2', 'mem_a', 'modified', '/a.md', 'A2', 5)], READ));
    expect(paths(result.state).mem_a).toBe('/a.md@A2');
  });

  it('known: another version at the known instant, recording the same state: keep', () => {
    const result = folded(foldVersions(state(), [v('vx', 'mem_a', 'modified', '/a.md', 'A1', 0)], READ));
    expect(result.changed).toBe(0);
  });

  it('known: another version at the known instant, recording something else: doubt tie', () => {
    expect(doubtOf(foldVersions(state(), [v('vx', 'mem_a', 'modified', '/a.md', 'A2', 0)], READ))).toBe('tie');
    expect(doubtOf(foldVersions(state(), [v('vx', 'mem_a', 'deleted', '/a.md', null, 0)], READ))).toBe('tie');
  });

  it("known: a newer 'created': doubt recreated", () => {
    expect(doubtOf(foldVersions(state(), [v('vx', 'mem_a', 'created', '/a.md', 'A2', 500)], READ))).toBe('recreated');
  });

  it('known: the newest is a deletion: removed', () => {
    const result = folded(
      foldVersions(state(), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 100), v('va3', 'mem_a', 'deleted', '/a.md', null, 200)], READ),
    );
    expect(result.state.memories.has('mem_a')).toBe(false);
    expect(result.changed).toBe(1);
  });

  it('known: the newest is a change: set to it, path and content (a rename moves it)', () => {
    const result = folded(
      foldVersions(state(), [v('va3', 'mem_a', 'modified', '/z/a.md', 'A3', 200), v('va2', 'mem_a', 'modified', '/a.md', 'A2', 100)], READ),
    );
    expect(result.state.memories.get('mem_a')).toEqual(known('/z/a.md', 'A3', 'va3', 200));
  });

  it('known: changed and changed back: the same path and content, known by the newest version (the one events name)', () => {
    const result = folded(
      foldVersions(state(), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 100), v('va3', 'mem_a', 'modified', '/a.md', 'A1', 200)], READ),
    );
    expect(result.state.memories.get('mem_a')).toEqual(known('/a.md', 'A1', 'va3', 200));
    expect(result.changed).toBe(1);
  });

  it('known without an instant (a client without updated_at): the newest version wins', () => {
    const s = state({ memories: new Map([['mem_a', known('/a.md', 'A1', null, null)]]) });
    const result = folded(foldVersions(s, [v('va2', 'mem_a', 'modified', '/a.md', 'A2', -500), v('va3', 'mem_a', 'modified', '/a.md', 'A3', 100)], READ));
    expect(paths(result.state).mem_a).toBe('/a.md@A3');
  });

  it('unknown: the newest is a deletion: nothing (it is absent here already)', () => {
    const result = folded(
      foldVersions(state(), [v('vc1', 'mem_c', 'created', '/c.md', 'C1', 100), v('vc2', 'mem_c', 'deleted', '/c.md', null, 200)], READ),
    );
    expect(result.state.memories.has('mem_c')).toBe(false);
    expect(folded(foldVersions(state(), [v('vc2', 'mem_c', 'deleted', '/c.md', null, 200)], READ)).changed).toBe(0);
  });

  it("unknown: a change without its 'created' (a gap, a version past retention): doubt unknown_memory", () => {
    expect(doubtOf(foldVersions(state(), [v('vc2', 'mem_c', 'modified', '/c.md', 'C2', 200)], READ))).toBe('unknown_memory');
  });

  it("unknown: 'created' first: set to the newest", () => {
    const result = folded(
      foldVersions(state(), [v('vc2', 'mem_c', 'modified', '/c2.md', 'C2', 200), v('vc1', 'mem_c', 'created', '/c.md', 'C1', 100)], READ),
    );
    expect(result.state.memories.get('mem_c')).toEqual(known('/c2.md', 'C2', 'vc2', 200));
  });
});

describe('foldVersions: where the next read starts', () => {
  it('moves to the estimated server time at the read start, less the overlap, and remembers what it folded from there on', () => {
    // The mark: the server read 0 at host time 1,000. This read started at host 1,500 and saw a version at 1,400.
    const result = folded(foldVersions(state(), [v('vc1', 'mem_c', 'created', '/c.md', 'C1', 1_400)], { startedMs: 1_500, endedMs: 1_520 }));
    // The newest timestamp (1,400 at host 1,520) says the server read at least 1,380 at host 1,500.
    expect(result.state.since).toBe(ns(1_380) - OVERLAP);
    expect(result.state.mark).toEqual({ at: ns(1_400), localMs: 1_520 });
    expect([...result.state.seen.keys()]).toEqual(['vc1']);
  });

  it('an idle read still moves it, by the host time elapsed since the mark', () => {
    const result = folded(foldVersions(state(), [], { startedMs: 6_000, endedMs: 6_020 }));
    expect(result.state.since).toBe(ns(5_000) - OVERLAP);
    expect(result.state.mark).toEqual(state().mark);
  });

  it(`credits at most ${MAX_ELAPSED_CREDIT_MS} ms of host time to the server's clock`, () => {
    const result = folded(foldVersions(state(), [], { startedMs: 1_000 + 3_600_000, endedMs: 1_000 + 3_600_001 }));
    expect(result.state.since).toBe(ns(MAX_ELAPSED_CREDIT_MS) - OVERLAP);
  });

  it('never moves back, and forgets seen versions it has passed', () => {
    const ahead = state({ since: ns(10_000), seen: new Map([['old', ns(9_000)], ['kept', ns(10_500)]]) });
    const result = folded(foldVersions(ahead, [], READ));
    expect(result.state.since).toBe(ns(10_000));
    expect([...result.state.seen.keys()]).toEqual(['kept']);
  });
});

describe('stateFromListing', () => {
  const listed = [
    { id: 'mem_a', path: '/a.md', content_sha256: 'A1', updated_at: iso(0), memory_version_id: 'va1' },
    { id: 'mem_b', path: '/d/b.md', content_sha256: 'B1', updated_at: iso(300), memory_version_id: 'vb1' },
  ];

  it('knows every memory with its version and instant; starts the feed at the newest update less the listing time and the overlap', () => {
    const s = stateFromListing(emptyFeedState(), listed, { startedMs: 1_000, endedMs: 1_200 });
    expect(s.memories.get('mem_b')).toEqual(known('/d/b.md', 'B1', 'vb1', 300));
    expect(s.since).toBe(ns(300 - 200) - OVERLAP);
    expect(s.mark).toEqual({ at: ns(300), localMs: 1_200 });
  });

  it('without updated_at nor an earlier start: no start (the next pass lists again)', () => {
    const bare = listed.map(({ id, path, content_sha256 }) => ({ id, path, content_sha256 }));
    expect(stateFromListing(emptyFeedState(), bare, READ).since).toBeNull();
    expect(stateFromListing(emptyFeedState(), [], READ).since).toBeNull();
  });

  it('an earlier start stays valid: an empty store keeps the feed', () => {
    const s = stateFromListing(state(), [], { startedMs: 1_000, endedMs: 1_000 });
    expect(s.since).toBe(ns(0) - OVERLAP);
    expect(s.memories.size).toBe(0);
  });

  it('a doubtful read made before the listing: its versions are reflected in it, so they are seen', () => {
    const read = [v('vx', 'mem_b', 'modified', '/d/b.md', 'B1', 300, true)];
    const s = stateFromListing(state(), listed, { startedMs: 1_100, endedMs: 1_100 }, { versions: read, times: { startedMs: 1_050, endedMs: 1_050 } });
    expect([...s.seen.keys()]).toEqual(['vx']);
    // And the next read, with that redacted version in it again, is no doubt.
    expect(folded(foldVersions(s, read, { startedMs: 2_000, endedMs: 2_000 })).changed).toBe(0);
  });

  it('a version of that read whose memory the listing missed is not seen: the feed starts at it again, and the next read doubts the listing', () => {
    // mem_c was created (at 200) before the listing, which skipped it while another writer acted.
    // Listed 5 s later: the feed would start past that version (at 5,000 less the overlap).
    const read = [v('vb2', 'mem_b', 'modified', '/d/b.md', 'B1', 300), v('vc1', 'mem_c', 'created', '/d/c.md', 'C1', 200)];
    const s = stateFromListing(state(), listed, { startedMs: 6_000, endedMs: 6_000 }, { versions: read, times: { startedMs: 5_900, endedMs: 5_900 }, doubt: 'listed_while_written' });
    expect([...s.seen.keys()]).toEqual(['vb2']);
    expect(s.since).toBe(ns(200));
    expect(doubtOf(foldVersions(s, read, { startedMs: 6_100, endedMs: 6_100 }))).toBe('listed_while_written');
  });

  it('a version of that read the listing shows older than the read did is not seen either; a deletion the listing shows (the memory absent) is', () => {
    const read = [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 250), v('vd1', 'mem_d', 'deleted', null, null, 400)];
    const s = stateFromListing(state(), listed, { startedMs: 6_000, endedMs: 6_000 }, { versions: read, times: { startedMs: 5_900, endedMs: 5_900 } });
    expect([...s.seen.keys()]).toEqual(['vd1']);
    expect(s.since).toBe(ns(250));
  });

  it('one memory met at two paths (renamed while listed): no start, so the next pass lists again', () => {
    const s = stateFromListing(state(), [...listed, { ...listed[0]!, path: '/moved.md' }], READ);
    expect(s.since).toBeNull();
  });
});

describe('the first read after a full listing checks it (listed_while_written)', () => {
  // A paged listing another writer acted during may have missed a memory that was there all
  // along; the feed never names it again. So the first read after a listing doubts when it
  // brings a version that listing does not account for. One row per case.
  const listedState = (over: Partial<RemoteFeedState> = {}) => state({ listingUnchecked: true, ...over });

  it('nothing new: folds, and the listing stands (the next read does not check it again)', () => {
    const result = folded(foldVersions(listedState(), [], READ));
    expect(result.state.listingUnchecked).toBe(false);
  });

  it("versions the listing reflects (a memory's listed version read again through the overlap, or an older one): folds", () => {
    const reread = [v('va0', 'mem_a', 'created', '/a.md', 'A0', -1_000), v('va1', 'mem_a', 'modified', '/a.md', 'A1', 0), v('vb1', 'mem_b', 'created', '/d/b.md', 'B1', 0)];
    const result = folded(foldVersions(listedState(), reread, READ));
    expect(result.changed).toBe(0);
    expect(result.state.listingUnchecked).toBe(false);
  });

  it('a version newer than the state the listing showed of its memory: doubt', () => {
    expect(doubtOf(foldVersions(listedState(), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)], READ))).toBe('listed_while_written');
    expect(doubtOf(foldVersions(listedState(), [v('va2', 'mem_a', 'modified', '/moved.md', 'A1', 500)], READ))).toBe('listed_while_written');
    expect(doubtOf(foldVersions(listedState(), [v('va2', 'mem_a', 'deleted', null, null, 500)], READ))).toBe('listed_while_written');
  });

  it('a memory the listing did not show, created (and even deleted again) in the read: doubt', () => {
    expect(doubtOf(foldVersions(listedState(), [v('vz1', 'mem_z', 'created', '/z.md', 'Z1', 500)], READ))).toBe('listed_while_written');
    const createdAndGone = [v('vz1', 'mem_z', 'created', '/z.md', 'Z1', 500), v('vz2', 'mem_z', 'deleted', null, null, 600)];
    expect(doubtOf(foldVersions(listedState(), createdAndGone, READ))).toBe('listed_while_written');
  });

  it("the deletion of a memory known gone (this session's own delete, learned after the listing): folds", () => {
    const gone = listedState({ memories: new Map([['mem_b', known('/d/b.md', 'B1', 'vb1', 0)]]), gone: new Map([['mem_a', { at: null }]]) });
    const result = folded(foldVersions(gone, [v('va2', 'mem_a', 'deleted', null, null, 500)], READ));
    expect(result.state.listingUnchecked).toBe(false);
  });

  it("this session's own write after the listing, learned with its version, comes back as known: folds", () => {
    const s = listedState();
    const memories = new Map(s.memories);
    learnChange(memories, { kind: 'memory', memory: { id: 'mem_a', path: '/a.md', content_sha256: 'A2', updated_at: iso(500), memory_version_id: 'va2' } });
    const result = folded(foldVersions({ ...s, memories }, [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)], READ));
    expect(result.changed).toBe(0);
  });

  describe("a fetch after the listing, learned before the check (B50: the fetch's state hid the other writer's version)", () => {
    const fetchedA2 = { id: 'mem_a', path: '/a.md', content_sha256: 'A2', updated_at: iso(500), memory_version_id: 'va2' };

    it('a memory fetched at a newer state, another content or path, or one the listing did not show: a contradiction; as listed: none', () => {
      const s = listedState();
      expect(fetchContradictsListing(s, fetchedA2)).toMatch(/mem_a was fetched at another state/);
      expect(fetchContradictsListing(s, { ...fetchedA2, updated_at: iso(0), memory_version_id: 'va1', path: '/moved.md', content_sha256: 'A1' })).toMatch(/another state/);
      expect(fetchContradictsListing(s, { id: 'mem_z', path: '/z.md', content_sha256: 'Z1', updated_at: iso(-60_000) })).toMatch(/mem_z .* did not show it/);
      expect(fetchContradictsListing(s, { id: 'mem_a', path: '/a.md', content_sha256: 'A1', updated_at: iso(0), memory_version_id: 'va1' })).toBeNull();
      // Without timestamps or versions, the content and path still tell.
      expect(fetchContradictsListing(listedState({ memories: new Map([['mem_a', known('/a.md', 'A1', null, null)]]) }), { id: 'mem_a', path: '/a.md', content_sha256: 'A1' })).toBeNull();
    });

    it('a listing already checked is not contradicted by a later fetch', () => {
      expect(fetchContradictsListing(listedState({ listingUnchecked: false }), fetchedA2)).toBeNull();
    });

    it('the fetch learned over the listing, the read that shows its version is in doubt all the same', () => {
      const s = listedState();
      const memories = new Map(s.memories);
      learnChange(memories, { kind: 'memory', memory: fetchedA2, fetched: true });
      const versions = [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)];
      // Without the contradiction kept, the read folds: mem_a's version is known by then.
      expect(folded(foldVersions({ ...s, memories }, versions, READ)).changed).toBe(0);
      const kept = { ...s, memories, listingContradicted: fetchContradictsListing(s, fetchedA2) };
      expect(doubtOf(foldVersions(kept, versions, READ))).toBe('listed_while_written');
      // Even a read that brings nothing: the memory the listing missed would never come in one.
      expect(doubtOf(foldVersions(kept, [], READ))).toBe('listed_while_written');
      // The listing made for the doubt starts clean, and its chain counts it.
      const relisted = stateFromListing(kept, [fetchedA2, { id: 'mem_b', path: '/d/b.md', content_sha256: 'B1', updated_at: iso(0) }], READ, { versions, times: READ, doubt: 'listed_while_written' });
      expect([relisted.listingContradicted, relisted.listingChain, checkListingAtOnce(relisted)]).toEqual([null, 1, true]);
    });
  });

  it('only the first read checks: the same version in a later read is folded', () => {
    const result = folded(foldVersions(listedState({ listingUnchecked: false }), [v('va2', 'mem_a', 'modified', '/a.md', 'A2', 500)], READ));
    expect(paths(result.state).mem_a).toBe('/a.md@A2');
  });

  it('a listing is to be checked: by the next pass for any reason but this doubt, at once for this doubt', () => {
    const listed = [{ id: 'mem_a', path: '/a.md', content_sha256: 'A1', updated_at: iso(0), memory_version_id: 'va1' }];
    const doubtful = [v('vz1', 'mem_z', 'created', '/z.md', 'Z1', 500)];
    const times = { startedMs: 1_000, endedMs: 1_000 };
    const fresh = stateFromListing(emptyFeedState(), listed, READ);
    expect([fresh.listingUnchecked, fresh.listingChain, checkListingAtOnce(fresh)]).toEqual([true, 0, false]);
    const afterTie = stateFromListing(state(), listed, READ, { versions: doubtful, times, doubt: 'tie' });
    expect([afterTie.listingUnchecked, afterTie.listingChain, checkListingAtOnce(afterTie)]).toEqual([true, 0, false]);
    const recheck = stateFromListing(state(), listed, READ, { versions: doubtful, times, doubt: 'listed_while_written' });
    expect([recheck.listingUnchecked, recheck.listingChain, checkListingAtOnce(recheck)]).toEqual([true, 1, true]);
  });

  it('a fresh start (a wiped folder) lists, and that listing is checked in turn', () => {
    const wiped = forgetMemories(listedState());
    expect([wiped.listingUnchecked, wiped.listingChain]).toEqual([false, 0]);
    expect(doubtOf(foldVersions(wiped, [], READ))).toBe('no_start');
  });
});

describe('a listing made for listed_while_written is checked at once, up to LISTING_CHAIN_MAX in a row', () => {
  // B28: the listing made for the doubt can itself miss a memory while another writer acts; the
  // check read made right after it sees that writer's version. One row per case.
  /** The read whose doubt called for the listing: another writer created mem_z at 500, which the listing before missed. */
  const doubtful = [v('vz1', 'mem_z', 'created', '/z.md', 'Z1', 500)];
  const listed = [
    { id: 'mem_a', path: '/a.md', content_sha256: 'A1', updated_at: iso(0), memory_version_id: 'va1' },
    { id: 'mem_b', path: '/d/b.md', content_sha256: 'B1', updated_at: iso(0), memory_version_id: 'vb1' },
    { id: 'mem_z', path: '/z.md', content_sha256: 'Z1', updated_at: iso(500), memory_version_id: 'vz1' },
  ];
  const TIMES = { startedMs: 1_000, endedMs: 1_000 };
  /** A listing made for listed_while_written after `before`. */
  const chained = (before: RemoteFeedState) => stateFromListing(before, listed, READ, { versions: doubtful, times: TIMES, doubt: 'listed_while_written' });

  it('the window saw a version the listing does not account for (mem_w written while it paged): doubt again, and the next listing extends the chain', () => {
    const first = chained(state({ listingUnchecked: true }));
    expect(checkListingAtOnce(first)).toBe(true);
    const check = foldVersions(first, [...doubtful, v('vw1', 'mem_w', 'created', '/w.md', 'W1', 600)], READ);
    expect(doubtOf(check)).toBe('listed_while_written');
    const second = chained(first);
    expect([second.listingChain, checkListingAtOnce(second)]).toEqual([2, true]);
  });

  it('the window saw no version beyond those the listing accounts for: the check folds, and the chain ends', () => {
    const first = chained(state({ listingUnchecked: true }));
    // vz1 is seen (the doubtful read's) and listed, va1 is the listing's own: nothing written while it paged.
    const check = folded(foldVersions(first, [...doubtful, v('va1', 'mem_a', 'modified', '/a.md', 'A1', 0)], READ));
    expect(check.changed).toBe(0);
    expect([check.state.listingUnchecked, check.state.listingChain, checkListingAtOnce(check.state)]).toEqual([false, 0, false]);
    // A listing made for another doubt afterwards starts no chain.
    expect(stateFromListing(check.state, listed, READ).listingChain).toBe(0);
  });

  it(`the chain cap: the ${LISTING_CHAIN_MAX}th listing in a row is not checked, so a version it does not account for is folded`, () => {
    let s = state({ listingUnchecked: true });
    for (let i = 1; i <= LISTING_CHAIN_MAX; i++) {
      s = chained(s);
      expect(s.listingChain).toBe(i);
      expect(checkListingAtOnce(s)).toBe(i < LISTING_CHAIN_MAX);
    }
    expect(s.listingUnchecked).toBe(false);
    const result = folded(foldVersions(s, [v('vw1', 'mem_w', 'created', '/w.md', 'W1', 600)], READ));
    expect(paths(result.state).mem_w).toBe('/w.md@W1');
    expect(result.state.listingChain).toBe(0);
  });

  it('a chained listing that met a memory twice gives no start: not checked at once (the next pass lists anyway)', () => {
    const twice = stateFromListing(state({ listingUnchecked: true }), [...listed, { ...listed[0]!, path: '/moved.md' }], READ, {
      versions: doubtful,
      times: TIMES,
      doubt: 'listed_while_written',
    });
    expect(twice.since).toBeNull();
    expect(checkListingAtOnce(twice)).toBe(false);
  });

  it('a check read that failed leaves the check to the next read, and the chain counts on from there', () => {
    const first = chained(state({ listingUnchecked: true }));
    // The pass's check read failed: the state stays as the listing left it, for the next pass's first read.
    expect(doubtOf(foldVersions(first, [v('vw1', 'mem_w', 'created', '/w.md', 'W1', 600)], READ))).toBe('listed_while_written');
    expect(chained(first).listingChain).toBe(2);
  });
});

describe('gone: the deletions the store itself reported (what corroborates an absence, absence.ts)', () => {
  it('a deleted version folded: the memory leaves the view and is known gone, whether the view knew it or not', () => {
    const result = folded(foldVersions(state(), [v('va2', 'mem_a', 'deleted', null, null, 100), v('vz1', 'mem_z', 'created', '/z.md', 'Z1', 50), v('vz2', 'mem_z', 'deleted', null, null, 60)], READ));
    expect(result.state.memories.has('mem_a')).toBe(false);
    expect([...result.state.gone.keys()].sort()).toEqual(['mem_a', 'mem_z']);
    // A memory the view never knew, created and deleted between two reads: what it held is kept.
    expect(result.state.gone.get('mem_z')).toEqual({ at: ns(60), last: { path: '/z.md', sha: 'Z1' }, deletedAs: { path: '/z.md', sha: 'Z1' } });
    // One the view knew: no write of ours in doubt, however equal the bytes; no `last`. Where and
    // with what it was deleted is kept all the same: the state the view knew.
    expect(result.state.gone.get('mem_a')).toEqual({ at: ns(100), deletedAs: { path: '/a.md', sha: 'A1' } });
  });

  it('a known memory moved and then deleted in one read: deleted as what it held at its new path (B44)', () => {
    const result = folded(foldVersions(state(), [v('va2', 'mem_a', 'modified', '/moved.md', 'A1', 100), v('va3', 'mem_a', 'deleted', null, null, 110)], READ));
    expect(result.state.gone.get('mem_a')).toEqual({ at: ns(110), deletedAs: { path: '/moved.md', sha: 'A1' } });
  });

  it('a listing, which cannot show a deletion, keeps what is known gone, but not a memory it lists after all', () => {
    const before = state({ gone: new Map([['mem_a', { at: null }], ['mem_x', { at: null }]]) });
    const listed = [{ id: 'mem_a', path: '/a.md', content_sha256: 'A1', updated_at: iso(0), memory_version_id: 'va1' }];
    expect([...stateFromListing(before, listed, READ).gone.keys()]).toEqual(['mem_x']);
  });

  it('a listing that misses a memory does not make it gone: only the store saying so does', () => {
    expect(stateFromListing(state(), [], READ).gone.size).toBe(0);
  });

  it('learned: a deletion (own delete, not_found) is known gone; a memory written or fetched is not', () => {
    const memories = new Map(state().memories);
    const gone = new Map<string, GoneMemory>();
    learnChange(memories, { kind: 'deleted', memoryId: 'mem_a' }, gone);
    expect([...gone]).toEqual([['mem_a', { at: null }]]);
    // The instant of a deletion the feed showed stays: the answer has none.
    const shown = new Map<string, GoneMemory>([['mem_b', { at: ns(40) }]]);
    learnChange(memories, { kind: 'deleted', memoryId: 'mem_b' }, shown);
    expect(shown.get('mem_b')).toEqual({ at: ns(40) });
    learnChange(memories, { kind: 'memory', memory: { id: 'mem_a', path: '/a.md', content_sha256: 'A2' } }, gone);
    expect(gone.size).toBe(0);
  });

  it('kept only for the ids a baseline path still names, so it stays bounded by the baseline', () => {
    const s = state({ gone: new Map([['mem_a', { at: null }], ['mem_x', { at: null }]]) });
    expect([...keepGone(s, new Set(['mem_a'])).gone.keys()]).toEqual(['mem_a']);
    expect(keepGone(s, new Set(['mem_a', 'mem_x']))).toBe(s);
  });

  it('and for deletions the feed showed at or after where the next read starts: older versions may still come late', () => {
    // since is ns(-2_000): a deletion at ns(-1_000) is in the next read's reach, one at ns(-3_000) is not.
    const s = state({ gone: new Map([['mem_x', { at: ns(-1_000) }], ['mem_y', { at: ns(-3_000) }], ['mem_z', { at: null }]]) });
    expect([...keepGone(s, new Set()).gone.keys()]).toEqual(['mem_x']);
  });

  // The fuzz with the folder watch on (seed 20261601, case 2,840): another writer made a memory
  // and deleted it; one read showed only the deletion (a version missing from it), the next the
  // creation. Folded, the creation made the memory known again: a read-only store then got a
  // file for a memory the store no longer held, and kept it.
  it('a version of a memory the feed showed deleted, stamped before that deletion and shown late, brings nothing back', () => {
    const first = folded(foldVersions(state(), [v('vg2', 'mem_g', 'deleted', null, null, 200)], READ));
    expect(first.state.gone.get('mem_g')?.at).toBe(ns(200));
    const late = foldVersions(first.state, [v('vg1', 'mem_g', 'created', '/g/h.md', 'G1', 100)], READ);
    const second = folded(late);
    expect(second.state.memories.has('mem_g')).toBe(false);
    expect(second.state.gone.has('mem_g')).toBe(true);
    expect(second.changed).toBe(0);
    // Kept by the bound while the next read can reach it, though no baseline path names it.
    expect(keepGone(second.state, new Set()).gone.has('mem_g')).toBe(true);
  });
});

describe('chooseRead, row by row', () => {
  const input = (over: Partial<ReadChoiceInput> = {}): ReadChoiceInput => ({
    mode: 'auto',
    feed: 'available',
    since: ns(0),
    passesSinceFull: 0,
    msSinceFull: 0,
    policy: { everyPasses: 100, everyMs: 600_000 },
    ...over,
  });
  it.each([
    ['the final sync asks for a listing', { mode: 'full' }, 'requested'],
    ['the client has no change feed', { feed: 'absent' }, 'no_feed'],
    ['the feed refused this session', { feed: 'refused' }, 'feed_refused'],
    ['no start known', { since: null }, 'no_start'],
    ['never listed', { msSinceFull: null }, 'no_start'],
    ['the 100th pass since the last listing', { passesSinceFull: 99 }, 'pass_count'],
    ['10 minutes since the last listing', { msSinceFull: 600_000 }, 'interval'],
  ] as const)('%s: full listing (%s)', (_label, over, reason) => {
    expect(chooseRead(input(over as Partial<ReadChoiceInput>))).toEqual({ kind: 'full', reason });
  });

  it('otherwise the feed', () => {
    expect(chooseRead(input({ passesSinceFull: 98, msSinceFull: 599_999 }))).toEqual({ kind: 'feed' });
  });

  it('every pass lists in full when everyPasses is 1', () => {
    expect(chooseRead(input({ policy: { everyPasses: 1, everyMs: 600_000 } }))).toEqual({ kind: 'full', reason: 'pass_count' });
  });
});

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe('contentWindow: which stretch of a basic read to read again with content', () => {
  const none = () => false;
  const sized = (version: StoreMemoryVersion, bytes = 1_000) => ({ ...version, content_size_bytes: bytes });
  // mem_c .. mem_f are new memories, each created once, 10 ms apart after 100.
  const created = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => sized(v(`vn${from + i}`, `mem_n${from + i}`, 'created', `/n${from + i}.md`, `N${from + i}`, 100 + 10 * (from + i))));

  it('none for one change or none: a get costs what a read does', () => {
    expect(contentWindow(state(), [], none, 20, 1e9)).toBeNull();
    expect(contentWindow(state(), created(1), none, 20, 1e9)).toBeNull();
  });

  it('from the newest change back to the oldest, both bounds inclusive and exactly as sent', () => {
    const versions = created(5);
    expect(contentWindow(state(), versions, none, 20, 1e9)).toEqual({ createdAtGte: iso(100), createdAtLte: iso(140), count: 5, covers: 5 });
  });

  it('what needs no content is not counted: known at that sha, seen, deleted, redacted, held already', () => {
    const versions = [
      ...created(3),
      sized(v('va1', 'mem_a', 'created', '/a.md', 'A1', 0)), // the state known
      sized(v('vb2', 'mem_b', 'deleted', '/d/b.md', null, 200)),
      sized(v('vx', 'mem_x', 'created', '/x.md', 'X', 210, true)),
    ];
    const seen = new Map([['vn0', ns(100)]]);
    const held = (sha: string) => sha === 'N1';
    // Only mem_n2 needs content: one change, a get is as cheap.
    expect(contentWindow(state({ seen }), versions, held, 20, 1e9)).toBeNull();
    expect(contentWindow(state({ seen }), versions, none, 20, 1e9)).toEqual({ createdAtGte: iso(110), createdAtLte: iso(120), count: 2, covers: 2 });
  });

  it('only the newest version of a memory decides; versions of others in between are counted as read', () => {
    const versions = [
      sized(v('vc1', 'mem_c', 'created', '/c.md', 'C1', 100)),
      sized(v('vc2', 'mem_c', 'modified', '/c.md', 'C2', 300)),
      sized(v('vd1', 'mem_d', 'created', '/d.md', 'D1', 200)),
      sized(v('va2', 'mem_a', 'modified', '/a.md', 'A1', 250)), // same sha as known: no content needed
    ];
    expect(contentWindow(state(), versions, none, 20, 1e9)).toEqual({ createdAtGte: iso(200), createdAtLte: iso(300), count: 3, covers: 2 });
  });

  it('grows back while the bytes stay within the budget; versions at one instant go together', () => {
    const versions = [...created(4), sized(v('vt', 'mem_t', 'created', '/t.md', 'T', 130), 1_000)];
    // Newest first: 130 holds two versions (vn3 and vt), 2,000 bytes; then 120, 110, 100.
    expect(contentWindow(state(), versions, none, 20, 3_500)).toEqual({ createdAtGte: iso(120), createdAtLte: iso(130), count: 3, covers: 3 });
    expect(contentWindow(state(), versions, none, 20, 1_500)).toBeNull();
  });

  it('none when the pages would outnumber the changes they carry', () => {
    // Two changes 60 versions apart: 3 pages of 20 for 2 gets' worth.
    const filler = Array.from({ length: 60 }, (_, i) => sized(v(`vf${i}`, 'mem_a', 'modified', '/a.md', 'A1', 1_000 + i)));
    const versions = [sized(v('vc', 'mem_c', 'created', '/c.md', 'C', 900)), ...filler, sized(v('vd', 'mem_d', 'created', '/d.md', 'D', 2_000))];
    expect(contentWindow(state(), versions, none, 20, 1e9)).toBeNull();
    expect(contentWindow(state(), versions, none, 100, 1e9)).toEqual({ createdAtGte: iso(900), createdAtLte: iso(2_000), count: 62, covers: 2 });
  });
});

describe('landedThenDeleted: a write of unknown outcome the store showed holding, then deleted', () => {
  it('names the deleted memory that last held exactly that sha at that path; nothing else', () => {
    const gone = new Map<string, GoneMemory>([
      ['mem_b', { at: ns(10), last: { path: '/b.md', sha: 'B1' } }],
      ['mem_c', { at: null }],
    ]);
    expect(landedThenDeleted(gone, '/b.md', 'B1')).toBe('mem_b');
    expect(landedThenDeleted(gone, '/b.md', 'B2')).toBeUndefined();
    expect(landedThenDeleted(gone, '/c.md', 'B1')).toBeUndefined();
  });
});
