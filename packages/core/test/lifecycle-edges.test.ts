import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryConfigError, MemoryLifecycleError, MemoryMounter, MemoryMountError, MemoryWriteRefusedError } from '@memory-mounter/core';
import { FaultyFileSystem, InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { DISKS, neverAnsweringList, notesResource, STORE, useHarness } from './harness.js';

// Edges of the mounter's life found in review: timer limits, overlapping calls, what is left
// mounted, what a write guard covers, and how failures are classified.

describe('finalSyncTimeout beyond what a timer can hold', () => {
  it('is refused at construction (a longer timer would fire at once and cut everything off)', () => {
    const make = (finalSyncTimeout: number) =>
      new MemoryMounter({ storeClient: new InMemoryStoreClient(), fileSystem: new MemfsFileSystem(), finalSyncTimeout });
    expect(() => make(2_147_483)).not.toThrow();
    expect(() => make(2_147_484)).toThrow(MemoryConfigError);
  });
});

describe.each(DISKS)('lifecycle edges on %s', (disk) => {
  const h = useHarness(disk);
  let dir: string;
  beforeEach(() => {
    dir = h.notesDir;
  });

  it('finalize during materialize stops it: materialize fails, all or nothing, and nothing is left', async () => {
    h.client.seed(STORE, { '/a.md': 'a' });
    h.client.latencyMs = 30;
    const m = h.mounter();
    const mounting = m.materialize([notesResource()]);
    const report = await m.finalize();
    await expect(mounting).rejects.toMatchObject({ code: 'download_failed', message: expect.stringMatching(/stopped by finalize/) });
    expect(report.removed).toEqual([]);
    expect(report.unpushed).toEqual([]);
    expect(await h.exists(dir)).toBe(false);
    expect(m.mounts).toEqual([]);
    await expect(m.reconcile({ force: true })).rejects.toBeInstanceOf(MemoryLifecycleError);
  });

  it('finalize during the download of a store that never answers: bounded, and nothing is left', async () => {
    h.client.seed(STORE, { '/a.md': 'a' });
    h.client.list = neverAnsweringList;
    // The download lists folder by folder: that never answers either.
    h.client.listFolder = () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise<never>(() => {}) }) });
    const m = h.mounter({ finalSyncTimeout: 0.3 });
    const mounting = m.materialize([notesResource()]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await m.finalize();
    expect(Date.now() - started).toBeLessThan(300 + 2_000);
    await expect(mounting).rejects.toMatchObject({ code: 'download_failed' });
    expect(await h.exists(dir)).toBe(false);
  });

  it('a reconcile while finalize runs is refused', async () => {
    h.client.seed(STORE, { '/a.md': 'a' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.client.latencyMs = 30;
    const finalizing = m.finalize();
    await expect(m.reconcile({ force: true })).rejects.toBeInstanceOf(MemoryLifecycleError);
    await finalizing;
  });

  it('a plain Error thrown by a listing is a store error too (the pass fails as unavailable)', async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.client.list = () => {
      throw new Error('connection reset');
    };
    // The feed too: otherwise the pass reads it and never lists.
    h.client.listVersions = () => {
      throw new Error('connection reset');
    };
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]).toMatchObject({ status: 'failed', code: 'store_error', reason: expect.stringMatching(/^store unavailable/) });
  });

  it('nothing is mounted after finalize: mounts and roots are empty', async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    await m.finalize();
    expect(m.mounts).toEqual([]);
    expect(m.roots).toEqual([]);
  });

  it('checkWrite refuses the store marker: it is not a memory', async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    expect(() => m.checkWrite(`${dir}/.anthropic-memory-store`)).toThrow(MemoryWriteRefusedError);
    expect(() => m.checkWrite(`${dir}/sub/.anthropic-memory-store`)).not.toThrow();
  });

  it('a disk error while creating a store folder is a MemoryMountError, and nothing is left', async () => {
    const fs = new FaultyFileSystem(h.fs);
    fs.fail('mkdir', dir, 'ENOSPC');
    const m = h.mounter({ fileSystem: fs });
    const err = await m.materialize([notesResource()]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MemoryMountError);
    expect(err).toMatchObject({ code: 'mount_path_unwritable', memoryStoreId: STORE, path: dir });
    expect(await h.exists(dir)).toBe(false);
  });

  it('a store client throwing a plain Error is recorded as a store error (unavailable), not a disk one', async () => {
    const m = await h.mountNotes({}, { '/a.md': 'a' });
    h.client.writeMemory(STORE, '/a.md', 'changed');
    // A feed without content: the pull fetches the memory, and that fetch fails.
    const listVersions = h.client.listVersions.bind(h.client);
    h.client.listVersions = (storeId, opts) => listVersions(storeId, { ...opts, withContent: false });
    h.client.get = () => Promise.reject(new Error('socket hang up'));
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.errors).toMatchObject([{ path: '/a.md', operation: 'pull', kind: 'unavailable' }]);
  });

  it('finalize warns, naming the paths, when local changes could not be pushed before removal', async () => {
    const m = h.mounter({ finalSyncTimeout: 1 });
    await m.materialize([notesResource()]);
    await h.write(`${dir}/unsaved.md`, 'only here');
    // Every create fails: finalize sends it again until its window ends (retry-policy.ts).
    h.client.failNext('create', 'unavailable', 1_000);
    await m.finalize();
    const warning = h.logger.warnings().find((w) => w.msg.includes('not pushed'));
    expect(warning?.fields).toMatchObject({ memory_store_id: STORE, paths: ['/unsaved.md'] });
  });
});
