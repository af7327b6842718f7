import { MAX_MEMORY_BYTES, StoreError, sha256Hex } from '@memory-mounter/core';
import { InMemoryStoreClient, ManualClock } from '@memory-mounter/testing';
import { describe, expect, it } from 'vitest';

const STORE = 'memstore_a';

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** The StoreError a promise rejects with, or a failure when it resolves. */
async function storeErrorOf(promise: Promise<unknown>): Promise<StoreError> {
  const err = await promise.then(
    () => expect.fail('expected a StoreError'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  return err as StoreError;
}

describe('InMemoryStoreClient', () => {
  describe('create', () => {
    it('returns a memory with a mem_ id, the sha256 and UTF-8 size of its content', async () => {
      const client = new InMemoryStoreClient();
      const memory = await client.create(STORE, { path: '/notes/é.md', content: 'héllo' });
      expect(memory.id).toMatch(/^mem_[0-9a-z]+$/);
      expect(memory).toMatchObject({
        path: '/notes/é.md',
        content: 'héllo',
        content_sha256: sha256Hex('héllo'),
        content_size_bytes: 6,
      });
      expect(client.snapshot(STORE)).toEqual({ '/notes/é.md': 'héllo' });
    });

    it('gives every memory its own id', async () => {
      const client = new InMemoryStoreClient();
      const a = await client.create(STORE, { path: '/a', content: '' });
      const b = await client.create(STORE, { path: '/b', content: '' });
      expect(a.id).not.toBe(b.id);
    });

    it('rejects (400) a path the service refuses, and stores nothing', async () => {
      const client = new InMemoryStoreClient();
      for (const path of ['relative.md', '/a//b', '/a/../b', '/a\u0000b', '']) {
        const err = await storeErrorOf(client.create(STORE, { path, content: 'x' }));
        expect(err).toMatchObject({ kind: 'rejected', status: 400 });
      }
      expect(client.snapshot(STORE)).toEqual({});
    });

    it('rejects (400, as the emulator answers) content over 102,400 UTF-8 bytes and accepts exactly the limit', async () => {
      const client = new InMemoryStoreClient();
      await client.create(STORE, { path: '/max', content: 'a'.repeat(MAX_MEMORY_BYTES) });
      // 51,201 two-byte characters: under the limit in characters, over it in bytes.
      const err = await storeErrorOf(client.create(STORE, { path: '/big', content: 'é'.repeat(51_201) }));
      expect(err).toMatchObject({ kind: 'rejected', status: 400 });
      expect(Object.keys(client.snapshot(STORE))).toEqual(['/max']);
    });

    it('answers path_conflict (409) for a path already taken', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/a.md': 'old' });
      const err = await storeErrorOf(client.create(STORE, { path: '/a.md', content: 'new' }));
      expect(err).toMatchObject({ kind: 'path_conflict', status: 409 });
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'old' });
    });
  });

  describe('list', () => {
    it('yields memories sorted by path, without content unless asked', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/b.md': 'b', '/a/z.md': 'z', '/a.md': 'a' });

      const bare = await collect(client.list(STORE));
      expect(bare.map((m) => m.path)).toEqual(['/a.md', '/a/z.md', '/b.md']);
      expect(bare[0]).toEqual({
        id: expect.stringMatching(/^mem_/),
        path: '/a.md',
        content_sha256: sha256Hex('a'),
        content_size_bytes: 1,
        updated_at: expect.any(String),
        memory_version_id: expect.stringMatching(/^memver_/),
      });

      const full = await collect(client.list(STORE, { withContent: true }));
      expect(full.map((m) => m.content)).toEqual(['a', 'z', 'b']);
    });

    it('filters by path prefix', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/a/1.md': '1', '/a/2.md': '2', '/b/3.md': '3' });
      const listed = await collect(client.list(STORE, { pathPrefix: '/a/' }));
      expect(listed.map((m) => m.path)).toEqual(['/a/1.md', '/a/2.md']);
    });

    it('treats an unknown store as empty, and keeps stores apart', async () => {
      const client = new InMemoryStoreClient();
      client.seed('memstore_other', { '/x': 'x' });
      expect(await collect(client.list('memstore_never_seen'))).toEqual([]);
      expect(client.snapshot(STORE)).toEqual({});
    });

    it('requests one page per 100 memories, or per 20 with content', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`/m${i}`, `${i}`])));
      expect(await collect(client.list(STORE))).toHaveLength(150);
      expect(client.count('list')).toBe(2);
      expect(await collect(client.list(STORE, { withContent: true }))).toHaveLength(150);
      expect(client.count('list')).toBe(2 + 8);
    });

    it('stops with unavailable when the signal aborts between pages', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`/m${i}`, `${i}`])));
      const controller = new AbortController();
      const seen: string[] = [];
      const run = (async () => {
        for await (const memory of client.list(STORE, { withContent: true, signal: controller.signal })) {
          seen.push(memory.path);
          if (seen.length === 20) controller.abort();
        }
      })();
      expect(await storeErrorOf(run)).toMatchObject({ kind: 'unavailable' });
      expect(seen).toHaveLength(20);
    });
  });

  describe('get', () => {
    it('returns the memory with its content', async () => {
      const client = new InMemoryStoreClient();
      const [seeded] = client.seed(STORE, { '/a.md': 'alpha' });
      expect(await client.get(STORE, seeded!.id)).toEqual({
        id: seeded!.id,
        path: '/a.md',
        content: 'alpha',
        content_sha256: sha256Hex('alpha'),
        content_size_bytes: 5,
        updated_at: expect.any(String),
        memory_version_id: expect.stringMatching(/^memver_/),
      });
    });

    it('answers not_found (404) for an unknown id', async () => {
      const client = new InMemoryStoreClient();
      expect(await storeErrorOf(client.get(STORE, 'mem_nope'))).toMatchObject({ kind: 'not_found', status: 404 });
    });
  });

  describe('update', () => {
    it('replaces content, keeping id and path', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one' });
      const updated = await client.update(STORE, a!.id, { content: 'two' });
      expect(updated).toMatchObject({ id: a!.id, path: '/a.md', content: 'two', content_sha256: sha256Hex('two') });
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'two' });
    });

    it('renames, keeping the id, and can change content in the same call', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one' });
      const moved = await client.update(STORE, a!.id, { path: '/b.md', content: 'two' });
      expect(moved).toMatchObject({ id: a!.id, path: '/b.md', content: 'two' });
      expect(client.snapshot(STORE)).toEqual({ '/b.md': 'two' });
    });

    it('answers path_conflict (409) when renaming onto another memory', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'a', '/b.md': 'b' });
      const err = await storeErrorOf(client.update(STORE, a!.id, { path: '/b.md' }));
      expect(err).toMatchObject({ kind: 'path_conflict', status: 409 });
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'a', '/b.md': 'b' });
    });

    it('applies when expected_content_sha256 matches, answers precondition_failed (409) when not', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one' });
      await client.update(STORE, a!.id, { content: 'two', expected_content_sha256: sha256Hex('one') });
      const err = await storeErrorOf(
        client.update(STORE, a!.id, { content: 'three', expected_content_sha256: sha256Hex('one') }),
      );
      expect(err).toMatchObject({ kind: 'precondition_failed', status: 409 });
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'two' });
    });

    it('rejects a bad path, oversized content, or nothing to change', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one' });
      for (const input of [{ path: 'no-slash' }, { content: 'x'.repeat(MAX_MEMORY_BYTES + 1) }, {}]) {
        expect(await storeErrorOf(client.update(STORE, a!.id, input))).toMatchObject({ kind: 'rejected' });
      }
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'one' });
    });

    it('answers not_found (404) for an unknown id', async () => {
      const client = new InMemoryStoreClient();
      const err = await storeErrorOf(client.update(STORE, 'mem_nope', { content: 'x' }));
      expect(err).toMatchObject({ kind: 'not_found', status: 404 });
    });
  });

  describe('delete', () => {
    it('removes the memory; a second delete is not_found (404)', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one', '/b.md': 'two' });
      await client.delete(STORE, a!.id);
      expect(client.snapshot(STORE)).toEqual({ '/b.md': 'two' });
      expect(await storeErrorOf(client.delete(STORE, a!.id))).toMatchObject({ kind: 'not_found', status: 404 });
    });

    it('honours expected_content_sha256', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one' });
      const err = await storeErrorOf(client.delete(STORE, a!.id, { expected_content_sha256: sha256Hex('other') }));
      expect(err).toMatchObject({ kind: 'precondition_failed', status: 409 });
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'one' });
      await client.delete(STORE, a!.id, { expected_content_sha256: sha256Hex('one') });
      expect(client.snapshot(STORE)).toEqual({});
    });
  });

  describe('returned objects', () => {
    it('are copies: mutating them never changes the store', async () => {
      const client = new InMemoryStoreClient();
      const created = await client.create(STORE, { path: '/a.md', content: 'one' });
      created.path = '/hacked';
      created.content = 'hacked';
      const [listed] = await collect(client.list(STORE, { withContent: true }));
      listed!.content = 'hacked';
      client.memories(STORE)[0]!.content = 'hacked';
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'one' });
      expect((await client.get(STORE, created.id)).content).toBe('one');
    });
  });

  describe('test helpers', () => {
    it('the helpers change the store without being logged', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one', '/b.md': 'b' });
      const overwritten = client.writeMemory(STORE, '/a.md', 'two');
      expect(overwritten).toMatchObject({ id: a!.id, content: 'two' });
      expect(client.renameMemory(STORE, '/a.md', '/c.md')).toMatchObject({ id: a!.id, path: '/c.md' });
      client.deleteMemory(STORE, '/b.md');

      expect(client.snapshot(STORE)).toEqual({ '/c.md': 'two' });
      const [memory] = client.memories(STORE);
      // What the StoreClient serves is the helper's record, less the fields the wire type lacks.
      expect(await client.get(STORE, a!.id)).toEqual({
        id: a!.id,
        path: '/c.md',
        content: 'two',
        content_sha256: sha256Hex('two'),
        content_size_bytes: 3,
        updated_at: memory!.updated_at,
        memory_version_id: client.versions(STORE).find((v) => v.memory_id === a!.id)!.id, // newest first
      });
      expect(client.requests.map((r) => r.op)).toEqual(['get']);
    });

    it('logs every request with op, store, memory id, path and time, and counts them', async () => {
      const clock = new ManualClock(1_000);
      const client = new InMemoryStoreClient({ now: clock.now });
      const created = await client.create(STORE, { path: '/a.md', content: 'x' });
      clock.advance(1);
      await client.get(STORE, created.id);
      clock.advance(1);
      await client.update(STORE, created.id, { path: '/b.md' });
      clock.advance(1);
      await client.delete(STORE, created.id);
      clock.advance(1);
      await collect(client.list('memstore_b', { pathPrefix: '/p/' }));

      expect(client.requests).toEqual([
        { op: 'create', storeId: STORE, path: '/a.md', at: 1_000 },
        { op: 'get', storeId: STORE, memoryId: created.id, at: 1_001 },
        { op: 'update', storeId: STORE, memoryId: created.id, path: '/b.md', at: 1_002 },
        { op: 'delete', storeId: STORE, memoryId: created.id, at: 1_003 },
        { op: 'list', storeId: 'memstore_b', path: '/p/', at: 1_004 },
      ]);
      expect(client.count('create')).toBe(1);
      expect(client.count('list', STORE)).toBe(0);
      expect(client.count('list', 'memstore_b')).toBe(1);
    });
  });

  describe('latency', () => {
    it('delays each answer by latencyMs, settable between calls', async () => {
      const client = new InMemoryStoreClient({ latencyMs: 40 });
      let started = performance.now();
      await client.create(STORE, { path: '/a.md', content: 'x' });
      expect(performance.now() - started).toBeGreaterThanOrEqual(35);

      client.latencyMs = 0;
      started = performance.now();
      await client.create(STORE, { path: '/b.md', content: 'x' });
      expect(performance.now() - started).toBeLessThan(35);
    });

    it('answers unavailable as soon as the signal aborts, without applying the write', async () => {
      const client = new InMemoryStoreClient({ latencyMs: 10_000 });
      const controller = new AbortController();
      const pending = client.create(STORE, { path: '/a.md', content: 'x' }, { signal: controller.signal });
      setTimeout(() => controller.abort(), 10);
      expect(await storeErrorOf(pending)).toMatchObject({ kind: 'unavailable' });
      expect(client.snapshot(STORE)).toEqual({});
    }, 2_000);

    it('answers unavailable at once for an already aborted signal', async () => {
      const client = new InMemoryStoreClient();
      const err = await storeErrorOf(client.get(STORE, 'mem_x', { signal: AbortSignal.abort() }));
      expect(err).toMatchObject({ kind: 'unavailable' });
    });
  });

  describe('fault injection', () => {
    it('failNext fails the next N calls of one op with a StoreError of that kind and status, applying nothing', async () => {
      const client = new InMemoryStoreClient();
      client.failNext('create', 'unavailable', 2);
      client.failNext('get', 'unauthorized');

      for (let i = 0; i < 2; i++) {
        const err = await storeErrorOf(client.create(STORE, { path: '/a.md', content: 'x' }));
        expect(err).toMatchObject({ kind: 'unavailable', status: 503 });
      }
      expect(client.snapshot(STORE)).toEqual({});
      const created = await client.create(STORE, { path: '/a.md', content: 'x' });
      expect(await storeErrorOf(client.get(STORE, created.id))).toMatchObject({ kind: 'unauthorized', status: 401 });
      await expect(client.get(STORE, created.id)).resolves.toMatchObject({ content: 'x' });
      expect(client.count('create')).toBe(3);
    });

    it('failNext on list fails the listing', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/a.md': 'x' });
      client.failNext('list', 'not_found');
      expect(await storeErrorOf(collect(client.list(STORE)))).toMatchObject({ kind: 'not_found', status: 404 });
    });

    it('failAfterApply applies the write, then answers unavailable (outcome unknown to the caller)', async () => {
      const client = new InMemoryStoreClient();
      const [a] = client.seed(STORE, { '/a.md': 'one', '/gone.md': 'g' });
      client.failAfterApply('update');
      client.failAfterApply('create');
      client.failAfterApply('delete');

      const update = await storeErrorOf(client.update(STORE, a!.id, { content: 'two' }));
      const create = await storeErrorOf(client.create(STORE, { path: '/new.md', content: 'n' }));
      const gone = client.memories(STORE).find((m) => m.path === '/gone.md')!;
      const del = await storeErrorOf(client.delete(STORE, gone.id));

      for (const err of [update, create, del]) expect(err).toMatchObject({ kind: 'unavailable', status: 503 });
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'two', '/new.md': 'n' });
      await expect(client.update(STORE, a!.id, { content: 'three' })).resolves.toMatchObject({ content: 'three' });
    });
  });

  describe('an update repeated after it landed (alreadyAppliedUpdate)', () => {
    it.each([
      ['succeeds', { kind: 'resolved' }],
      ['precondition_failed', { kind: 'precondition_failed', status: 409 }],
    ] as const)('%s: the repeat of a guarded update that already landed', async (answer, expected) => {
      const client = new InMemoryStoreClient({ alreadyAppliedUpdate: answer });
      const [a] = client.seed(STORE, { '/a.md': 'one' });
      const guarded = { content: 'two', expected_content_sha256: sha256Hex('one') };
      client.failAfterApply('update');
      await storeErrorOf(client.update(STORE, a!.id, guarded));
      const repeat = await client.update(STORE, a!.id, guarded).then(
        () => ({ kind: 'resolved' }),
        (err: StoreError) => ({ kind: err.kind, status: err.status }),
      );
      expect(repeat).toEqual(expected);
      expect(client.snapshot(STORE)).toEqual({ '/a.md': 'two' });
      expect(client.versions(STORE)).toHaveLength(2); // created, modified once
    });

    it('either way a stale precondition that asks for a change is refused, and a rename that landed repeats harmlessly', async () => {
      for (const answer of ['succeeds', 'precondition_failed'] as const) {
        const client = new InMemoryStoreClient({ alreadyAppliedUpdate: answer });
        const [a] = client.seed(STORE, { '/a.md': 'one' });
        const stale = { content: 'three', expected_content_sha256: sha256Hex('zero') };
        expect(await storeErrorOf(client.update(STORE, a!.id, stale))).toMatchObject({ kind: 'precondition_failed' });
        const rename = { path: '/b.md', expected_content_sha256: sha256Hex('one') };
        await client.update(STORE, a!.id, rename);
        await expect(client.update(STORE, a!.id, rename)).resolves.toMatchObject({ path: '/b.md' });
      }
    });
  });

  describe('memory versions', () => {
    it('records the helpers\' writes, and nothing for a write to nothing', () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/a.md': 'a' });
      client.writeMemory(STORE, '/a.md', 'a'); // same content
      client.writeMemory(STORE, '/a.md', 'a2');
      client.renameMemory(STORE, '/a.md', '/a.md'); // same path
      client.renameMemory(STORE, '/a.md', '/b.md');
      client.deleteMemory(STORE, '/b.md');
      expect(client.versions(STORE).map((v) => [v.operation, v.path, v.content])).toEqual([
        ['deleted', '/b.md', null],
        ['modified', '/b.md', 'a2'],
        ['modified', '/a.md', 'a2'],
        ['created', '/a.md', 'a'],
      ]);
      expect(client.requests).toEqual([]);
    });

    it('records a write that failAfterApply answered unavailable: it did land', async () => {
      const client = new InMemoryStoreClient();
      client.failAfterApply('create');
      await storeErrorOf(client.create(STORE, { path: '/a.md', content: 'x' }));
      expect(client.versions(STORE).map((v) => v.operation)).toEqual(['created']);
    });

    it('logs one listVersions request per page of 100, and fails through failNext', async () => {
      const client = new InMemoryStoreClient();
      client.seed(STORE, Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`/m${i}`, `${i}`])));
      expect(await collect(client.listVersions(STORE))).toHaveLength(150);
      expect(client.count('listVersions', STORE)).toBe(2);
      client.failNext('listVersions', 'unauthorized');
      expect(await storeErrorOf(collect(client.listVersions(STORE)))).toMatchObject({ kind: 'unauthorized', status: 401 });
    });

    it('keeps versions of each store apart', async () => {
      const client = new InMemoryStoreClient();
      client.seed('memstore_x', { '/x.md': 'x' });
      client.seed('memstore_y', { '/y.md': 'y' });
      expect((await collect(client.listVersions('memstore_x'))).map((v) => v.path)).toEqual(['/x.md']);
    });

    it('forgets versions past the retention period for good', async () => {
      const clock = new ManualClock(0);
      const client = new InMemoryStoreClient({ now: clock.now, versionRetentionMs: 1_000 });
      client.seed(STORE, { '/old.md': 'o' });
      clock.advance(2_000);
      client.seed(STORE, { '/new.md': 'n' });
      expect(client.versions(STORE).map((v) => v.path)).toEqual(['/new.md']);
      client.versionRetentionMs = undefined;
      expect((await collect(client.listVersions(STORE))).map((v) => v.path)).toEqual(['/new.md']);
    });

    it('redactVersion throws for a version it does not hold', () => {
      const client = new InMemoryStoreClient();
      expect(() => client.redactVersion(STORE, 'memver_nope')).toThrow(/memory version memver_nope not found/);
    });
  });

  describe('listFolder', () => {
    it('logs each page as a list request with depth 1, 100 rows a page (20 with content)', async () => {
      const client = new InMemoryStoreClient();
      const files: Record<string, string> = {};
      for (let i = 0; i < 30; i++) files[`/f/${String(i).padStart(2, '0')}.md`] = `${i}`;
      for (let i = 0; i < 90; i++) files[`/f/d${String(i).padStart(2, '0')}/x.md`] = `${i}`;
      client.seed(STORE, files);
      expect(await collect(client.listFolder(STORE, { pathPrefix: '/f/' }))).toHaveLength(120);
      expect(client.requests.map(({ at: _, ...r }) => r)).toEqual([
        { op: 'list', storeId: STORE, path: '/f/', depth: 1 },
        { op: 'list', storeId: STORE, path: '/f/', depth: 1 },
      ]);
      client.requests.length = 0;
      expect(await collect(client.listFolder(STORE, { pathPrefix: '/f/', withContent: true }))).toHaveLength(120);
      expect(client.count('list')).toBe(6);
    });

    it('fails through failNext on list', async () => {
      const client = new InMemoryStoreClient();
      client.failNext('list', 'unavailable');
      expect(await storeErrorOf(collect(client.listFolder(STORE)))).toMatchObject({ kind: 'unavailable', status: 503 });
    });
  });
});
