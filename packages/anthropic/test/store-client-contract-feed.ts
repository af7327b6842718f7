import { sha256Hex } from '@memory-mounter/core';
import type {
  StoreClient,
  StoreFolderEntry,
  StoreListFolderOptions,
  StoreListVersionsOptions,
  StoreMemory,
  StoreMemoryVersion,
} from '@memory-mounter/core';
import type { ManualClock } from '@memory-mounter/testing';
import { describe, expect, it } from 'vitest';
import type { ContractSubject } from './store-client-contract.js';
import { collect, expectStoreError, numberedFiles } from './store-client-contract-helpers.js';

/** What the cases read from the running contract: set afresh before each test. */
export interface FeedContext {
  subject: ContractSubject;
  client: StoreClient;
  storeId: string;
  clock: ManualClock;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The optional StoreClient methods: the memory-version change feed (`listVersions`) and the
 * one-folder listing (`listFolder`). Like the rest of the contract, nothing here depends on
 * the order of a listing: the engine is promised none.
 */
export function changeFeedContract(context: () => FeedContext): void {
  const ctx = () => context();
  const versions = (opts?: StoreListVersionsOptions) => {
    const { client, storeId } = ctx();
    return collect(client.listVersions!(storeId, opts));
  };
  const folder = (opts?: StoreListFolderOptions) => {
    const { client, storeId } = ctx();
    return collect(client.listFolder!(storeId, opts));
  };
  const create = (path: string, content: string) => ctx().client.create(ctx().storeId, { path, content });
  const at = (ms: number) => new Date(ms).toISOString();

  describe('listVersions', () => {
    it('is implemented', () => {
      expect(typeof ctx().client.listVersions).toBe('function');
    });

    it('records one version per create, update and delete, with the fields the engine reads', async () => {
      const { client, storeId, clock } = ctx();
      const t0 = clock.now();
      const memory = await create('/a.md', 'v1');
      clock.advance(1_000);
      await client.update(storeId, memory.id, { content: 'v2' });
      clock.advance(1_000);
      await client.update(storeId, memory.id, { path: '/b.md' });
      clock.advance(1_000);
      await client.delete(storeId, memory.id);

      const listed = byTime(await versions());
      expect(listed).toEqual([
        { operation: 'created', path: '/a.md', content_sha256: sha256Hex('v1'), content_size_bytes: 2, at: t0 },
        { operation: 'modified', path: '/a.md', content_sha256: sha256Hex('v2'), content_size_bytes: 2, at: t0 + 1_000 },
        { operation: 'modified', path: '/b.md', content_sha256: sha256Hex('v2'), content_size_bytes: 2, at: t0 + 2_000 },
        { operation: 'deleted', path: '/b.md', content_sha256: null, at: t0 + 3_000 },
      ].map(({ at: ms, ...fields }) => ({
        ...fields,
        id: expect.stringMatching(/^memver_/),
        memory_id: memory.id,
        created_at: expect.stringMatching(RFC3339),
        redacted_at: null,
      })));
      expect(listed.map((v) => Date.parse(v.created_at))).toEqual([t0, t0 + 1_000, t0 + 2_000, t0 + 3_000]);
      expect(new Set(listed.map((v) => v.id)).size).toBe(4);
    });

    it('withContent: each version with its content as of it (none for a deletion); maxVersions stops the walk', async () => {
      const { client, storeId, clock } = ctx();
      const memory = await create('/a.md', 'v1');
      clock.advance(1_000);
      await client.update(storeId, memory.id, { content: 'v2' });
      clock.advance(1_000);
      await client.delete(storeId, memory.id);
      const full = byTime(await versions({ withContent: true }));
      expect(full.map((v) => [v.operation, v.content])).toEqual([
        ['created', 'v1'],
        ['modified', 'v2'],
        ['deleted', null],
      ]);
      // Without it, no content.
      expect((await versions()).every((v) => v.content === undefined || v.content === null)).toBe(true);
      for (let i = 0; i < 45; i++) await create(`/m${i}.md`, `m${i}`);
      expect(await versions({ withContent: true, maxVersions: 21 })).toHaveLength(21);
      expect(await versions({ maxVersions: 3 })).toHaveLength(3);
      expect(await versions({ withContent: true })).toHaveLength(48);
    });

    it('records a version for memories another writer created', async () => {
      const { subject, storeId } = ctx();
      await subject.seed(storeId, { '/x.md': 'x', '/y/z.md': 'z' });
      const listed = await versions();
      expect(listed.map((v) => [v.operation, v.path, v.content_sha256]).sort()).toEqual([
        ['created', '/x.md', sha256Hex('x')],
        ['created', '/y/z.md', sha256Hex('z')],
      ]);
    });

    it("a listed memory names the version that holds it (memory_version_id) and that version's time (updated_at)", async () => {
      const { client, storeId, clock } = ctx();
      const memory = await create('/a.md', 'v1');
      clock.advance(1_000);
      await client.update(storeId, memory.id, { content: 'v2' });
      const [listed] = await collect(client.list(storeId));
      const latest = (await versions()).find((v) => v.content_sha256 === sha256Hex('v2'))!;
      expect(listed!.memory_version_id).toBe(latest.id);
      expect(Date.parse(listed!.updated_at!)).toBe(Date.parse(latest.created_at));
    });

    it('a create, an update and a rename answer with the version each recorded (memory_version_id)', async () => {
      const { client, storeId, clock } = ctx();
      const created = await create('/a.md', 'v1');
      clock.advance(1_000);
      const updated = await client.update(storeId, created.id, { content: 'v2' });
      clock.advance(1_000);
      const renamed = await client.update(storeId, created.id, { path: '/b.md' });
      const recorded = (await versions()).filter((v) => v.memory_id === created.id);
      const id = (path: string, sha: string) => recorded.find((v) => v.path === path && v.content_sha256 === sha)?.id;
      expect(created.memory_version_id).toBe(id('/a.md', sha256Hex('v1')));
      expect(updated.memory_version_id).toBe(id('/a.md', sha256Hex('v2')));
      expect(renamed.memory_version_id).toBe(id('/b.md', sha256Hex('v2')));
      expect(new Set([created.memory_version_id, updated.memory_version_id, renamed.memory_version_id]).size).toBe(3);
    });

    it('records nothing for an update to nothing or a refused write', async () => {
      const { client, storeId } = ctx();
      const memory = await create('/a.md', 'same');
      await create('/taken.md', 't');
      await client.update(storeId, memory.id, { content: 'same' });
      await expectStoreError(
        client.update(storeId, memory.id, { content: 'new', expected_content_sha256: sha256Hex('stale') }),
        'precondition_failed',
      );
      await expectStoreError(client.update(storeId, memory.id, { path: '/taken.md' }), 'path_conflict');
      await expectStoreError(client.delete(storeId, memory.id, { expected_content_sha256: sha256Hex('stale') }), 'precondition_failed');
      await expectStoreError(create('/taken.md', 'again'), 'path_conflict');
      expect((await versions()).map((v) => v.operation)).toEqual(['created', 'created']);
    });

    it('is empty for a store with no history', async () => {
      expect(await versions()).toEqual([]);
    });

    describe('filters', () => {
      /** Four memories, created one second apart from t0; returns t0 and the memories. */
      async function fourSecondsOfHistory(): Promise<{ t0: number; memories: StoreMemory[] }> {
        const { clock } = ctx();
        const t0 = clock.now();
        const memories: StoreMemory[] = [];
        for (const name of ['a', 'b', 'c', 'd']) {
          memories.push(await create(`/${name}.md`, name));
          clock.advance(1_000);
        }
        return { t0, memories };
      }
      const paths = (listed: StoreMemoryVersion[]) => listed.map((v) => v.path).sort();

      it('bounds created_at inclusively at both ends', async () => {
        const { t0 } = await fourSecondsOfHistory();
        expect(paths(await versions({ createdAtGte: at(t0 + 1_000), createdAtLte: at(t0 + 2_000) }))).toEqual(['/b.md', '/c.md']);
        expect(paths(await versions({ createdAtGte: at(t0 + 2_000) }))).toEqual(['/c.md', '/d.md']);
        expect(paths(await versions({ createdAtLte: at(t0 + 1_000) }))).toEqual(['/a.md', '/b.md']);
        expect(paths(await versions({ createdAtGte: at(t0 + 1_001), createdAtLte: at(t0 + 1_999) }))).toEqual([]);
      });

      it('takes back a created_at it returned, unchanged, as a bound', async () => {
        await fourSecondsOfHistory();
        const all = await versions();
        const third = byTime(all)[2]!;
        expect(paths(await versions({ createdAtGte: third.created_at }))).toEqual(['/c.md', '/d.md']);
      });

      it('keeps to one memory with memoryId, its deleted version included', async () => {
        const { client, storeId } = ctx();
        const { memories } = await fourSecondsOfHistory();
        const b = memories[1]!;
        await client.update(storeId, b.id, { content: 'b2' });
        await client.delete(storeId, b.id);
        const listed = await versions({ memoryId: b.id });
        expect(listed.map((v) => v.operation).sort()).toEqual(['created', 'deleted', 'modified']);
        expect(listed.every((v) => v.memory_id === b.id)).toBe(true);
        expect(await versions({ memoryId: 'mem_never_existed' })).toEqual([]);
      });

      it('keeps to one kind of change with operation, and combines filters', async () => {
        const { client, storeId, clock } = ctx();
        const { t0, memories } = await fourSecondsOfHistory();
        for (const memory of memories) await client.update(storeId, memory.id, { content: `${memory.path} 2` });
        await client.delete(storeId, memories[0]!.id);
        expect(await versions({ operation: 'created' })).toHaveLength(4);
        expect(await versions({ operation: 'modified' })).toHaveLength(4);
        const deleted = await versions({ operation: 'deleted' });
        expect(deleted.map((v) => [v.memory_id, v.path, v.content_sha256])).toEqual([[memories[0]!.id, '/a.md', null]]);
        const combined = await versions({ operation: 'created', memoryId: memories[2]!.id, createdAtGte: at(t0) });
        expect(combined.map((v) => v.path)).toEqual(['/c.md']);
        expect(await versions({ operation: 'modified', createdAtLte: at(clock.now() - 1) })).toEqual([]);
      });

      it('is rejected for a created_at bound that is not RFC 3339', async () => {
        await expectStoreError(versions({ createdAtGte: 'yesterday' }), 'rejected');
        await expectStoreError(versions({ createdAtLte: '2026-02-30T00:00:00Z' }), 'rejected');
      });
    });

    describe('ties', () => {
      it('lists every version once when many share one created_at, and the bound takes them all in', async () => {
        const { client, storeId, clock } = ctx();
        const t = clock.now(); // the clock stands still: every write below ties
        const a = await create('/a.md', '1');
        await client.update(storeId, a.id, { content: '2' });
        await client.update(storeId, a.id, { path: '/b.md' });
        const c = await create('/c.md', '3');
        await client.delete(storeId, c.id);
        const listed = await versions();
        expect(listed).toHaveLength(5);
        expect(new Set(listed.map((v) => v.id)).size).toBe(5);
        expect(new Set(listed.map((v) => v.created_at)).size).toBe(1);
        expect(await versions({ createdAtGte: at(t), createdAtLte: at(t) })).toHaveLength(5);
        expect(await versions({ createdAtGte: at(t + 1) })).toEqual([]);
      });

      it('pages through ties without losing or repeating a version', async () => {
        const { subject, storeId } = ctx();
        await subject.seed(storeId, numberedFiles(250, (i) => `${i}`)); // 250 versions, one instant
        const listed = await versions();
        expect(listed).toHaveLength(250);
        expect(new Set(listed.map((v) => v.id)).size).toBe(250);
        expect(new Set(listed.map((v) => v.path)).size).toBe(250);
      });
    });

    it('follows every page (more than 100 versions), each version once', async () => {
      const { client, storeId, clock } = ctx();
      const memories: StoreMemory[] = [];
      for (let i = 0; i < 120; i++) {
        memories.push(await create(`/m/${i}.md`, `${i}`));
        clock.advance(i % 3 === 0 ? 0 : 7); // some ties, some not
      }
      for (const memory of memories.slice(0, 90)) await client.update(storeId, memory.id, { content: 'changed' });
      const listed = await versions();
      expect(listed).toHaveLength(210);
      expect(new Set(listed.map((v) => v.id)).size).toBe(210);
      expect(listed.filter((v) => v.operation === 'modified')).toHaveLength(90);
    });

    it('shows a redacted version with path and sha null and redacted_at set, its other fields kept', async () => {
      const { client, storeId, subject } = ctx();
      const memory = await create('/secret.md', 'password');
      await client.update(storeId, memory.id, { content: 'gone' });
      const created = (await versions({ operation: 'created' }))[0]!;
      await subject.redactVersion(storeId, created.id);
      const listed = await versions({ memoryId: memory.id });
      const redacted = listed.find((v) => v.id === created.id)!;
      expect(redacted).toEqual({
        id: created.id,
        memory_id: memory.id,
        operation: 'created',
        path: null,
        content_sha256: null,
        created_at: created.created_at,
        redacted_at: expect.stringMatching(RFC3339),
      });
      // With content asked for, a redacted version still has none.
      const [redactedFull] = (await versions({ memoryId: memory.id, withContent: true })).filter((v) => v.id === created.id);
      expect(redactedFull?.content ?? null).toBeNull();
      const other = listed.find((v) => v.id !== created.id)!;
      expect(other).toMatchObject({ operation: 'modified', path: '/secret.md', content_sha256: sha256Hex('gone'), redacted_at: null });
      // Filters still find it by what redaction keeps.
      expect((await versions({ operation: 'created', createdAtGte: created.created_at })).map((v) => v.id)).toEqual([created.id]);
    });

    it('drops versions older than the retention period', async () => {
      const { subject, clock } = ctx();
      await create('/old.md', 'o');
      clock.advance(10_000);
      await create('/new.md', 'n');
      clock.advance(1_000);
      subject.setVersionRetention(5_000);
      expect((await versions()).map((v) => v.path)).toEqual(['/new.md']);
      clock.advance(5_000);
      expect(await versions()).toEqual([]);
    });

    describe('failures are StoreErrors', () => {
      it.each(['unauthorized', 'not_found', 'unavailable'] as const)('%s on the first page', async (failure) => {
        await create('/a.md', 'a');
        ctx().subject.failNext('listVersions', failure);
        await expectStoreError(versions(), failure);
        expect(await versions()).toHaveLength(1);
      });

      it('on a later page, after the first page was yielded', async () => {
        const { subject, storeId, client } = ctx();
        await subject.seed(storeId, numberedFiles(150, (i) => `${i}`));
        const iterator = client.listVersions!(storeId)[Symbol.asyncIterator]();
        expect((await iterator.next()).done).toBe(false);
        subject.failNext('listVersions', 'unavailable');
        const rest = (async () => {
          for (let next = await iterator.next(); !next.done; next = await iterator.next());
        })();
        await expectStoreError(rest, 'unavailable');
      });

      it('unavailable when the signal is already aborted', async () => {
        const { client, storeId } = ctx();
        const controller = new AbortController();
        controller.abort();
        await expectStoreError(collect(client.listVersions!(storeId, { signal: controller.signal })), 'unavailable');
      });
    });
  });

  describe('listFolder', () => {
    const TREE = {
      '/top.md': 't',
      '/notes/a.md': 'a',
      '/notes/deep/b.md': 'b',
      '/notes/deep/er/c.md': 'c',
      '/notes-archive/d.md': 'd',
    };
    const rows = (entries: StoreFolderEntry[]) =>
      entries.map((e) => (e.type === 'memory' ? `memory ${e.memory.path}` : `prefix ${e.path}`)).sort();

    it('is implemented', () => {
      expect(typeof ctx().client.listFolder).toBe('function');
    });

    it('lists the root: its memories, and one roll-up per folder', async () => {
      await ctx().subject.seed(ctx().storeId, TREE);
      const root = await folder();
      expect(rows(root)).toEqual(['memory /top.md', 'prefix /notes-archive/', 'prefix /notes/']);
      expect(rows(await folder({ pathPrefix: '/' }))).toEqual(rows(root));
      const top = root.find((e) => e.type === 'memory')!;
      expect(top.type === 'memory' && top.memory).toMatchObject({
        id: expect.stringMatching(/^mem_/),
        content_sha256: sha256Hex('t'),
        content_size_bytes: 1,
      });
      expect(top.type === 'memory' && (top.memory.content ?? undefined)).toBeUndefined();
    });

    it('lists one folder, by whole segments', async () => {
      await ctx().subject.seed(ctx().storeId, TREE);
      expect(rows(await folder({ pathPrefix: '/notes/' }))).toEqual(['memory /notes/a.md', 'prefix /notes/deep/']);
      expect(rows(await folder({ pathPrefix: '/notes/deep/' }))).toEqual(['memory /notes/deep/b.md', 'prefix /notes/deep/er/']);
      expect(await folder({ pathPrefix: '/nowhere/' })).toEqual([]);
    });

    it('carries content when asked', async () => {
      await ctx().subject.seed(ctx().storeId, TREE);
      const listed = await folder({ pathPrefix: '/notes/', withContent: true });
      const memory = listed.find((e) => e.type === 'memory');
      expect(memory?.type === 'memory' && memory.memory.content).toBe('a');
    });

    it('fans out to the same memories as a full listing', async () => {
      const { client, storeId, subject } = ctx();
      await subject.seed(storeId, { ...TREE, ...numberedFiles(30, (i) => `${i}`), '/x/y/z/w/deep.md': 'deep' });
      const found: StoreMemory[] = [];
      const walk = async (pathPrefix: string | undefined): Promise<void> => {
        const entries = await folder(pathPrefix === undefined ? {} : { pathPrefix });
        await Promise.all(
          entries.map((e) => (e.type === 'memory' ? void found.push(e.memory) : walk(e.path))),
        );
      };
      await walk(undefined);
      const full = await collect(client.list(storeId));
      const key = (m: StoreMemory) => `${m.id} ${m.path} ${m.content_sha256}`;
      expect(found.map(key).sort()).toEqual(full.map(key).sort());
    });

    it('follows every page, roll-ups counting toward a page, each row once', async () => {
      const { subject, storeId } = ctx();
      const files: Record<string, string> = {};
      for (let i = 0; i < 130; i++) files[`/f/${String(i).padStart(3, '0')}.md`] = `${i}`;
      for (let i = 0; i < 90; i++) files[`/f/sub${String(i).padStart(2, '0')}/x.md`] = `${i}`;
      await subject.seed(storeId, files);
      const basic = await folder({ pathPrefix: '/f/' });
      expect(basic).toHaveLength(220);
      expect(new Set(rows(basic)).size).toBe(220);
      expect(basic.filter((e) => e.type === 'prefix')).toHaveLength(90);
      const full = await folder({ pathPrefix: '/f/', withContent: true });
      expect(rows(full)).toEqual(rows(basic));
      for (const e of full) if (e.type === 'memory') expect(e.memory.content).toBe(files[e.memory.path]);
    });

    it('is rejected for a prefix that is not a folder', async () => {
      await expectStoreError(folder({ pathPrefix: '/notes' }), 'rejected');
    });

    it.each(['unauthorized', 'not_found', 'unavailable'] as const)('fails with %s as a StoreError', async (failure) => {
      await ctx().subject.seed(ctx().storeId, TREE);
      ctx().subject.failNext('listFolder', failure);
      await expectStoreError(folder(), failure);
      expect(await folder()).toHaveLength(3);
    });
  });
}

/** Oldest first by instant, then as listed; with distinct instants, a total order. */
function byTime(listed: StoreMemoryVersion[]): StoreMemoryVersion[] {
  return [...listed].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
}
