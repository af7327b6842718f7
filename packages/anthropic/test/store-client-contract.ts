import { MAX_MEMORY_BYTES, sha256Hex } from '@memory-mounter/core';
import type { StoreClient, StoreMemory } from '@memory-mounter/core';
import { ManualClock } from '@memory-mounter/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { changeFeedContract, type FeedContext } from './store-client-contract-feed.js';
import { collect, expectStoreError, numberedFiles, utf8Length } from './store-client-contract-helpers.js';

/**
 * The StoreClient contract as behaviour tests: one suite, run against every implementation
 * (the in-memory fake, and the real SDK path through the emulator), so that the fake the
 * engine's tests trust cannot drift from what the API does.
 *
 * It pins what SPEC 3 and the service's documented rules promise, and nothing an
 * implementation may choose (listing order, HTTP statuses, which extra fields a write returns).
 */
export interface ContractSubject {
  /** Must implement the optional `listVersions` and `listFolder` too. */
  client: StoreClient;
  /** Puts memories in place as another writer would, bypassing `client`. */
  seed(storeId: string, files: Record<string, string>): void | Promise<void>;
  /** Redacts a memory version, as a user would out of band. */
  redactVersion(storeId: string, versionId: string): void | Promise<void>;
  /** Versions written more than `ms` ago (by the setup's clock) are gone; `undefined` keeps all. */
  setVersionRetention(ms: number | undefined): void;
  /** The next request of `call` (its next page) fails as the service would for `failure`. */
  failNext(call: 'listVersions' | 'listFolder', failure: 'unauthorized' | 'not_found' | 'unavailable'): void;
  teardown?(): void | Promise<void>;
}

/**
 * `setup` gets the clock the subject's store must stamp writes and versions with; it stands
 * still until a test moves it.
 */
export function storeClientContract(
  name: string,
  setup: (clock: ManualClock) => ContractSubject | Promise<ContractSubject>,
): void {
  describe(`StoreClient contract: ${name}`, () => {
    let subject: ContractSubject;
    let client: StoreClient;
    let storeId: string;
    let clock: ManualClock;
    let storeCount = 0;

    beforeEach(async () => {
      clock = new ManualClock();
      subject = await setup(clock);
      client = subject.client;
      // A fresh store per test, so a subject may share one backend between tests. It exists
      // (an empty store, as made in the Console): a service answers 404 for one that does not.
      storeId = `memstore_contract_${++storeCount}`;
      await subject.seed(storeId, {});
    });
    afterEach(async () => {
      await subject.teardown?.();
    });

    const seed = (files: Record<string, string>) => subject.seed(storeId, files);
    const list = (opts?: { withContent?: boolean; pathPrefix?: string }) => collect(client.list(storeId, opts));
    const pathOf = (memory: StoreMemory) => memory.path;

    describe('list', () => {
      it('follows every page without content (more than 100 memories)', async () => {
        const files = numberedFiles(230, (i) => `note ${i}`);
        await seed(files);
        const listed = await list();
        expect(listed.map(pathOf).sort()).toEqual(Object.keys(files).sort());
        for (const memory of listed) {
          expect(memory.content ?? undefined).toBeUndefined();
          expect(memory.content_sha256).toBe(sha256Hex(files[memory.path]!));
          expect(memory.content_size_bytes).toBe(utf8Length(files[memory.path]!));
          expect(memory.id).toMatch(/^mem_/);
        }
      });

      it('follows every page with content (more than 20 memories)', async () => {
        const files = numberedFiles(47, (i) => `content ${i} ${'é'.repeat(i)}`);
        await seed(files);
        const listed = await list({ withContent: true });
        expect(listed.map(pathOf).sort()).toEqual(Object.keys(files).sort());
        for (const memory of listed) {
          expect(memory.content).toBe(files[memory.path]);
          expect(memory.content_sha256).toBe(sha256Hex(files[memory.path]!));
        }
      });

      it('lists nothing for an empty store', async () => {
        expect(await list()).toEqual([]);
      });

      it('keeps to whole segments under pathPrefix', async () => {
        await seed({
          '/notes/a.md': 'a',
          '/notes/deep/b.md': 'b',
          '/notes-archive/c.md': 'c',
          '/other.md': 'd',
        });
        const listed = await list({ pathPrefix: '/notes/' });
        expect(listed.map(pathOf).sort()).toEqual(['/notes/a.md', '/notes/deep/b.md']);
      });

      it('is rejected for a pathPrefix without its trailing /', async () => {
        await seed({ '/p/a.md': 'a' });
        await expectStoreError(list({ pathPrefix: '/p' }), 'rejected');
      });

      it('yields memories only, however deep, never prefix roll-ups', async () => {
        await seed({ '/top.md': '1', '/a/b/c/d/e.md': '2', '/a/b/x.md': '3' });
        const listed = await list();
        expect(listed.map(pathOf).sort()).toEqual(['/a/b/c/d/e.md', '/a/b/x.md', '/top.md']);
        for (const memory of listed) expect(memory.id).toMatch(/^mem_/);
      });
    });

    describe('get', () => {
      it('returns the memory with its content', async () => {
        const created = await client.create(storeId, { path: '/doc.md', content: 'hello' });
        const memory = await client.get(storeId, created.id);
        expect(memory).toMatchObject({
          id: created.id,
          path: '/doc.md',
          content: 'hello',
          content_sha256: sha256Hex('hello'),
          content_size_bytes: 5,
        });
      });

      it('is not_found for an unknown id', async () => {
        await expectStoreError(client.get(storeId, 'mem_does_not_exist'), 'not_found');
      });
    });

    describe('create', () => {
      it('returns the new memory, which a listing then shows', async () => {
        const created = await client.create(storeId, { path: '/projects/foo/notes.md', content: 'first' });
        expect(created.id).toMatch(/^mem_/);
        expect(created.path).toBe('/projects/foo/notes.md');
        expect(created.content_sha256).toBe(sha256Hex('first'));
        expect((await list()).map(pathOf)).toEqual(['/projects/foo/notes.md']);
      });

      it('accepts an empty memory', async () => {
        const created = await client.create(storeId, { path: '/empty.md', content: '' });
        expect(created.content_sha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
        expect((await client.get(storeId, created.id)).content).toBe('');
      });

      it('is path_conflict at a path that is taken', async () => {
        await seed({ '/taken.md': 'old' });
        await expectStoreError(client.create(storeId, { path: '/taken.md', content: 'new' }), 'path_conflict');
        expect(await contents()).toEqual({ '/taken.md': 'old' });
      });

      it('is path_conflict below a memory, or above one', async () => {
        await seed({ '/notes': 'a memory, not a folder', '/docs/readme.md': 'r' });
        await expectStoreError(client.create(storeId, { path: '/notes/todo.md', content: 'x' }), 'path_conflict');
        await expectStoreError(client.create(storeId, { path: '/docs', content: 'x' }), 'path_conflict');
        expect(Object.keys(await contents()).sort()).toEqual(['/docs/readme.md', '/notes']);
      });

      it.each(BAD_PATHS)('is rejected for a bad path: %s', async (_why, path) => {
        await expectStoreError(client.create(storeId, { path, content: 'x' }), 'rejected');
        expect(await list()).toEqual([]);
      });

      it('is rejected for content with a lone surrogate, which has no UTF-8 form', async () => {
        await expectStoreError(client.create(storeId, { path: '/a.md', content: 'x\udc00y' }), 'rejected');
        expect(await list()).toEqual([]);
      });

      it('accepts exactly 102,400 bytes and rejects one byte more', async () => {
        const max = 'a'.repeat(MAX_MEMORY_BYTES);
        const created = await client.create(storeId, { path: '/max.md', content: max });
        expect(created.content_size_bytes).toBe(MAX_MEMORY_BYTES);
        await expectStoreError(client.create(storeId, { path: '/over.md', content: `${max}a` }), 'rejected');
      });

      it('counts the limit in UTF-8 bytes, not characters', async () => {
        const twoByte = 'é'.repeat(MAX_MEMORY_BYTES / 2); // 51,200 characters, 102,400 bytes
        const created = await client.create(storeId, { path: '/fits.md', content: twoByte });
        expect(created.content_size_bytes).toBe(MAX_MEMORY_BYTES);
        await expectStoreError(client.create(storeId, { path: '/over.md', content: `${twoByte}é` }), 'rejected');
        expect((await list()).map(pathOf)).toEqual(['/fits.md']);
      });
    });

    describe('update', () => {
      it('replaces content; the id stays', async () => {
        const created = await client.create(storeId, { path: '/a.md', content: 'v1' });
        const updated = await client.update(storeId, created.id, { content: 'v2' });
        expect(updated).toMatchObject({ id: created.id, path: '/a.md', content_sha256: sha256Hex('v2') });
        expect((await client.get(storeId, created.id)).content).toBe('v2');
      });

      it('renames; the id and content stay', async () => {
        const created = await client.create(storeId, { path: '/old/name.md', content: 'body' });
        const renamed = await client.update(storeId, created.id, { path: '/new/name.md' });
        expect(renamed).toMatchObject({ id: created.id, path: '/new/name.md', content_sha256: sha256Hex('body') });
        expect(await contents()).toEqual({ '/new/name.md': 'body' });
      });

      it('renames and replaces content in one call', async () => {
        const created = await client.create(storeId, { path: '/x.md', content: 'one' });
        await client.update(storeId, created.id, { path: '/y.md', content: 'two' });
        expect(await contents()).toEqual({ '/y.md': 'two' });
      });

      it('applies when expected_content_sha256 matches', async () => {
        const created = await client.create(storeId, { path: '/p.md', content: 'base' });
        const updated = await client.update(storeId, created.id, {
          content: 'mine',
          expected_content_sha256: sha256Hex('base'),
        });
        expect(updated.content_sha256).toBe(sha256Hex('mine'));
      });

      it('is precondition_failed when the store moved, and changes nothing', async () => {
        const created = await client.create(storeId, { path: '/p.md', content: 'theirs' });
        await expectStoreError(
          client.update(storeId, created.id, { content: 'mine', expected_content_sha256: sha256Hex('base') }),
          'precondition_failed',
        );
        await expectStoreError(
          client.update(storeId, created.id, { path: '/moved.md', expected_content_sha256: sha256Hex('base') }),
          'precondition_failed',
        );
        expect(await contents()).toEqual({ '/p.md': 'theirs' });
      });

      it('succeeds despite a stale precondition when the memory already holds the requested content', async () => {
        // The service's rule that makes a retried, already-applied update harmless.
        const created = await client.create(storeId, { path: '/p.md', content: 'mine' });
        const updated = await client.update(storeId, created.id, {
          content: 'mine',
          expected_content_sha256: sha256Hex('base'),
        });
        expect(updated.content_sha256).toBe(sha256Hex('mine'));
      });

      it('is rejected for an expected_content_sha256 that is not a sha256, and changes nothing', async () => {
        const created = await client.create(storeId, { path: '/p.md', content: 'x' });
        await expectStoreError(client.update(storeId, created.id, { content: 'y', expected_content_sha256: 'abc' }), 'rejected');
        await expectStoreError(client.delete(storeId, created.id, { expected_content_sha256: 'ABC' }), 'rejected');
        expect(await contents()).toEqual({ '/p.md': 'x' });
      });

      it('is path_conflict when renaming onto a taken path, and changes nothing', async () => {
        await seed({ '/a.md': 'a', '/b.md': 'b' });
        const a = (await list()).find((m) => m.path === '/a.md')!;
        await expectStoreError(client.update(storeId, a.id, { path: '/b.md' }), 'path_conflict');
        expect(await contents()).toEqual({ '/a.md': 'a', '/b.md': 'b' });
      });

      it.each(BAD_PATHS)('is rejected when renaming to a bad path: %s', async (_why, path) => {
        const created = await client.create(storeId, { path: '/ok.md', content: 'x' });
        await expectStoreError(client.update(storeId, created.id, { path }), 'rejected');
        expect(await contents()).toEqual({ '/ok.md': 'x' });
      });

      it('is rejected for content over 102,400 bytes', async () => {
        const created = await client.create(storeId, { path: '/a.md', content: 'small' });
        await expectStoreError(
          client.update(storeId, created.id, { content: '€'.repeat(34_134) }), // 102,402 bytes
          'rejected',
        );
        expect(await contents()).toEqual({ '/a.md': 'small' });
      });

      it('is not_found for an unknown id', async () => {
        await expectStoreError(client.update(storeId, 'mem_does_not_exist', { content: 'x' }), 'not_found');
      });
    });

    describe('delete', () => {
      it('removes the memory', async () => {
        const created = await client.create(storeId, { path: '/gone.md', content: 'x' });
        await client.delete(storeId, created.id);
        expect(await list()).toEqual([]);
        await expectStoreError(client.get(storeId, created.id), 'not_found');
      });

      it('applies when expected_content_sha256 matches', async () => {
        const created = await client.create(storeId, { path: '/gone.md', content: 'x' });
        await client.delete(storeId, created.id, { expected_content_sha256: sha256Hex('x') });
        expect(await list()).toEqual([]);
      });

      it('is precondition_failed when the store moved, and keeps the memory', async () => {
        const created = await client.create(storeId, { path: '/kept.md', content: 'theirs' });
        await expectStoreError(
          client.delete(storeId, created.id, { expected_content_sha256: sha256Hex('base') }),
          'precondition_failed',
        );
        expect(await contents()).toEqual({ '/kept.md': 'theirs' });
      });

      it('is not_found for an unknown id', async () => {
        await expectStoreError(client.delete(storeId, 'mem_does_not_exist'), 'not_found');
      });
    });

    describe('content_sha256 and content_size_bytes', () => {
      it.each([
        ['empty', '', 0],
        ['ASCII', 'abc', 3],
        ['two-byte', 'café', 5],
        ['three-byte', '日本語', 9],
        ['four-byte', '😀 ok', 7],
        ['newlines and NUL', 'a\nb\r\n\u0000', 6],
      ])('are the sha256 and byte count of the UTF-8 bytes: %s', async (_why, content, bytes) => {
        const created = await client.create(storeId, { path: '/m.md', content });
        const expected = { content_sha256: sha256Hex(Buffer.from(content, 'utf8')), content_size_bytes: bytes };
        expect(created).toMatchObject(expected);
        expect(await client.get(storeId, created.id)).toMatchObject({ ...expected, content });
        expect(await list()).toMatchObject([expected]);
        expect(await list({ withContent: true })).toMatchObject([{ ...expected, content }]);
      });

      it('matches a known vector', async () => {
        const created = await client.create(storeId, { path: '/abc.md', content: 'abc' });
        expect(created.content_sha256).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
      });
    });

    describe('onPage: told once per page requested, so that the engine counts requests exactly', () => {
      const pagesOf = async (walk: (onPage: () => void) => AsyncIterable<unknown>): Promise<{ items: number; pages: number }> => {
        let pages = 0;
        const items = await collect(walk(() => pages++));
        return { items: items.length, pages };
      };

      it('list, without content and with it; an empty store is one request', async () => {
        expect(await pagesOf((onPage) => client.list(storeId, { onPage }))).toEqual({ items: 0, pages: 1 });
        await seed(numberedFiles(230, (i) => `note ${i}`));
        expect(await pagesOf((onPage) => client.list(storeId, { onPage }))).toEqual({ items: 230, pages: 3 });
        expect(await pagesOf((onPage) => client.list(storeId, { withContent: true, onPage }))).toEqual({ items: 230, pages: 12 });
      });

      it('listVersions, and no page past maxVersions', async () => {
        await seed(numberedFiles(230, (i) => `note ${i}`));
        expect(await pagesOf((onPage) => client.listVersions!(storeId, { onPage }))).toEqual({ items: 230, pages: 3 });
        expect(await pagesOf((onPage) => client.listVersions!(storeId, { withContent: true, maxVersions: 41, onPage }))).toEqual({ items: 41, pages: 3 });
      });

      it('listFolder', async () => {
        await seed(numberedFiles(230, (i) => `note ${i}`));
        expect(await pagesOf((onPage) => client.listFolder!(storeId, { onPage }))).toEqual({ items: 1, pages: 1 });
        expect(await pagesOf((onPage) => client.listFolder!(storeId, { pathPrefix: '/bulk/', onPage }))).toEqual({ items: 230, pages: 3 });
      });
    });

    describe('the fake\'s seed helper', () => {
      // The helper stands for another writer going through the same service: it cannot plant
      // what the service refuses (the fakes' plantMemory exists for that, on purpose).
      it.each(BAD_PATHS)('refuses a bad path: %s', async (_why, path) => {
        expect(() => seed({ [path]: 'x' })).toThrow();
        expect(await list()).toEqual([]);
      });

      it('refuses a path that overlaps a memory', async () => {
        await seed({ '/d/x.md': 'x' });
        expect(() => seed({ '/d': 'a memory where a folder is' })).toThrow();
        expect(await contents()).toEqual({ '/d/x.md': 'x' });
      });
    });

    changeFeedContract((): FeedContext => ({ subject, client, storeId, clock }));

    /** The store as `{ path: content }`, read through the client under test. */
    async function contents(): Promise<Record<string, string>> {
      const listed = await list({ withContent: true });
      return Object.fromEntries(listed.map((m) => [m.path, m.content ?? '']));
    }
  });
}

/** Paths the service refuses (SPEC 5), each with why. */
const BAD_PATHS: [string, string][] = [
  ['empty', ''],
  ['relative', 'notes.md'],
  ['trailing slash', '/notes/'],
  ['empty segment', '/a//b.md'],
  ['dot segment', '/a/./b.md'],
  ['dot-dot segment', '/a/../b.md'],
  ['NUL', '/a\u0000b.md'],
  ['lone surrogate', '/a\ud800b.md'],
  ['control character', '/a\u0007b.md'],
  ['format character', '/a\u200bb.md'],
  ['not NFC', '/cafe\u0301.md'],
  ['21 segments', `/${Array.from({ length: 21 }, () => 's').join('/')}`],
  ['over 1,024 bytes', `/${'é'.repeat(512)}`],
];
