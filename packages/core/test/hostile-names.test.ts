import * as nodeFs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_MEMORY_BYTES, type StoreClient, type StoreMemory } from '@memory-mounter/core';
import { DISKS, notesResource, STORE, useHarness } from './harness.js';

/**
 * Names and sizes a hostile agent or a buggy store can produce (issue 8, item 3): none of them
 * may fail a whole materialize, drop an edit silently, or read as a deletion.
 */
describe.each(DISKS)('hostile names and sizes on %s', (disk) => {
  const h = useHarness(disk);

  it('a memory with a 255-byte name is written (temp names have a fixed length)', async () => {
    const name = `${'n'.repeat(252)}.md`;
    const m = await h.mountNotes({}, { [`/${name}`]: 'long name', '/a.md': 'alpha' });
    expect(await h.read(`${h.notesDir}/${name}`)).toBe('long name');
    await h.write(`${h.notesDir}/${name}`, 'edited');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.pushed).toEqual([`/${name}`]);
  });

  it.skipIf(disk === 'memfs')('a memory whose name the disk refuses is skipped and reported; the others are mounted', async () => {
    const tooLong = `/${'n'.repeat(300)}.md`; // a valid memory path, but over NAME_MAX
    h.client.seed(STORE, { [tooLong]: 'unmountable', '/a.md': 'alpha' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha');
    expect(h.logger.warnings().some((w) => w.fields.path === tooLong)).toBe(true);
    // Not on disk, yet never deleted from the store: it is not in the baseline.
    h.clock.advance(3600);
    await m.reconcile({ force: true });
    await m.finalize();
    expect(h.client.snapshot(STORE)[tooLong]).toBe('unmountable');
  });

  it('a folder named like a temp file holds memories like any other: written, and edits pushed', async () => {
    const path = '/.mm-tmp-0123456789abcdef/a.md';
    const m = await h.mountNotes({}, { [path]: 'in a temp-named folder' });
    expect(await h.read(`${h.notesDir}${path}`)).toBe('in a temp-named folder');
    await h.write(`${h.notesDir}${path}`, 'edited');
    await m.reconcile({ force: true });
    expect(h.client.snapshot(STORE)[path]).toBe('edited');
  });

  it.skipIf(disk === 'memfs')('a local name that is not UTF-8 is reported and warned, never pushed, never taken for a deletion', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 0 });
    nodeFs.writeFileSync(Buffer.concat([Buffer.from(`${h.notesDir}/`), Buffer.from([0x6e, 0xff, 0x2e, 0x6d, 0x64])]), 'latin-1 name');
    const report = await m.reconcile({ force: true });
    const store = report!.stores[0]!;
    expect(store.skippedPaths).toEqual([expect.objectContaining({ code: 'bad_name', reason: expect.stringMatching(/not UTF-8/) })]);
    expect(store.pushed).toEqual([]);
    expect(store.deletedRemote).toEqual([]);
    expect(h.logger.warnings().some((w) => /not UTF-8/.test(w.msg))).toBe(true);
    expect(Object.keys(h.client.snapshot(STORE)).sort()).toEqual(['/a.md', '/b.md', '/d/c.md']);
  });

  it('a remote memory over the size limit is never written: skipped at download and at a pull, with a warning', async () => {
    const big = 'x'.repeat(MAX_MEMORY_BYTES * 20);
    const oversized = oversizeAt(h.client, '/big.md', big);
    h.client.seed(STORE, { '/a.md': 'alpha', '/big.md': 'small for now' });
    const m = h.mounter({ storeClient: oversized.client });
    await m.materialize([notesResource()]);
    expect(await h.read(`${h.notesDir}/big.md`)).toBeNull();
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha');
    expect(h.logger.warnings().some((w) => w.fields.path === '/big.md')).toBe(true);

    // The store's version changes: the pull fetches it and refuses it, with a report entry.
    h.client.writeMemory(STORE, '/big.md', 'changed, still served oversized');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.skippedPaths).toContainEqual(expect.objectContaining({ path: '/big.md', code: 'remote_too_large', reason: expect.stringMatching(/limit/) }));
    expect(await h.read(`${h.notesDir}/big.md`)).toBeNull();
  });

  it('a local file over the limit is never read nor pushed: refused once, with a warning', async () => {
    const m = await h.mountNotes();
    await h.write(`${h.notesDir}/big.md`, 'y'.repeat(MAX_MEMORY_BYTES + 1));
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.refused).toEqual([{ path: '/big.md', code: 'too_large', reason: expect.stringMatching(/larger than/) }]);
    expect(h.client.snapshot(STORE)['/big.md']).toBeUndefined();
  });
});

/** `client` as a store that serves `content` (with a matching sha) for the memory at `path`. */
function oversizeAt(client: StoreClient, path: string, content: string): { client: StoreClient } {
  const serve = (m: StoreMemory): StoreMemory =>
    m.path === path ? { ...m, content: m.content === undefined || m.content === null ? m.content : content, content_size_bytes: undefined } : m;
  const wrapped: StoreClient = {
    list: (storeId, opts) => ({
      async *[Symbol.asyncIterator]() {
        for await (const m of client.list(storeId, opts)) yield serve(m);
      },
    }),
    get: async (storeId, id, opts) => serve(await client.get(storeId, id, opts)),
    create: (storeId, input, opts) => client.create(storeId, input, opts),
    update: (storeId, id, input, opts) => client.update(storeId, id, input, opts),
    delete: (storeId, id, opts) => client.delete(storeId, id, opts),
  };
  return { client: wrapped };
}
