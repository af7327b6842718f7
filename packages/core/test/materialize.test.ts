import { describe, expect, it } from 'vitest';
import { MemoryMountError, mountPathSlug } from '@memory-mounter/core';
import { aroundCreateFile, DISKS, notesResource, STORE, useHarness } from './harness.js';

const store = (id: string, over: Record<string, unknown> = {}) => ({ type: 'memory_store', memory_store_id: id, name: id, ...over });

async function mountError(promise: Promise<unknown>): Promise<MemoryMountError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MemoryMountError);
  return err as MemoryMountError;
}

describe('mountPathSlug', () => {
  it.each([
    ['Demo Memory', 'demo-memory'],
    ['  User -- Preferences!! ', 'user-preferences'],
    ['ÄÖÜ notes 2024', 'notes-2024'],
    ['already-ok', 'already-ok'],
    ['__x__y__', 'x-y'],
    ['!!!', ''],
  ])('%j -> %j', (name, slug) => {
    expect(mountPathSlug(name)).toBe(slug);
  });
});

describe.each(DISKS)('materialize on %s', (disk) => {
  const h = useHarness(disk);

  it('downloads the whole store under the slug of its name, with the marker, before returning', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/deep/er/b.md': 'beta' });
    const mounts = await h.mounter().materialize([notesResource({ name: 'My Notes' })]);
    expect(mounts).toEqual([
      { memoryStoreId: STORE, name: 'My Notes', mountPath: '/mnt/memory/my-notes', path: `${h.memoryRoot}/my-notes`, access: 'read_write' },
    ]);
    expect(await h.read(`${h.memoryRoot}/my-notes/a.md`)).toBe('alpha');
    expect(await h.read(`${h.memoryRoot}/my-notes/deep/er/b.md`)).toBe('beta');
    expect(JSON.parse((await h.read(`${h.memoryRoot}/my-notes/.anthropic-memory-store`))!)).toEqual({ memory_store_id: STORE });
  });

  it('writes what the listing returned: no memory is fetched a second time', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta', '/d/c.md': 'gamma' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    expect(h.client.count('get')).toBe(0);
    expect(await h.read(`${h.notesDir}/d/c.md`)).toBe('gamma');
    // The baseline is what was written: an idle pass after it transfers nothing.
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ status: 'synced', pulled: [], pushed: [], errors: [] });
  });

  it('a memory the listing left without content is fetched, and only that one', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta' });
    const list = h.client.list.bind(h.client);
    h.client.list = async function* (id, opts) {
      for await (const memory of list(id, opts)) {
        if (memory.path === '/b.md') {
          const { content: _dropped, ...bare } = memory;
          yield bare;
        } else yield memory;
      }
    };
    const listFolder = h.client.listFolder.bind(h.client);
    h.client.listFolder = async function* (id, opts) {
      for await (const entry of listFolder(id, opts)) {
        if (entry.type === 'memory' && entry.memory.path === '/b.md') {
          const { content: _dropped, ...bare } = entry.memory;
          yield { ...entry, memory: bare };
        } else yield entry;
      }
    };
    await h.mounter().materialize([notesResource()]);
    expect(h.client.count('get')).toBe(1);
    expect(await h.read(`${h.notesDir}/b.md`)).toBe('beta');
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha');
  });

  it('uses mount_path when given, else the store id when the name has no slug', async () => {
    const m = h.mounter();
    const mounts = await m.materialize([
      store('memstore_a', { mount_path: '/mnt/memory/team/shared' }),
      store('memstore_b', { name: '???' }),
      { type: 'file' },
    ]);
    expect(mounts.map((x) => x.mountPath)).toEqual(['/mnt/memory/team/shared', '/mnt/memory/memstore_b']);
    expect(m.roots).toEqual([`${h.memoryRoot}/team/shared`, `${h.memoryRoot}/memstore_b`]);
  });

  it('ignores resources that are not memory stores; more than 8 stores is too_many_stores', async () => {
    const nine = Array.from({ length: 9 }, (_, i) => store(`memstore_${i}`));
    const err = await mountError(h.mounter().materialize(nine));
    expect(err.code).toBe('too_many_stores');
    expect(await h.fs.readdir(h.memoryRoot)).toEqual([]);
    const eight = [...nine.slice(0, 8), { type: 'github_repository' }];
    expect(await h.mounter().materialize(eight)).toHaveLength(8);
  });

  it.each([
    '/mnt/memory',
    '/mnt/memory/',
    '/mnt/memory//x',
    '/mnt/memory/a/../b',
    '/mnt/memory/./a',
    '/tmp/x',
    '/mnt/memoryx/a',
    'mnt/memory/a',
    '/mnt/memory/a\0b',
  ])('mount path %j is mount_path_invalid', async (mountPath) => {
    const err = await mountError(h.mounter().materialize([store('memstore_x', { mount_path: mountPath })]));
    expect(err.code).toBe('mount_path_invalid');
    expect(err.memoryStoreId).toBe('memstore_x');
  });

  it.each([
    ['/mnt/memory/a', '/mnt/memory/a'],
    ['/mnt/memory/Notes', '/mnt/memory/notes'],
    ['/mnt/memory/a', '/mnt/memory/a/b'],
    ['/mnt/memory/a/b', '/mnt/memory/a'],
  ])('%s and %s are duplicate_mount_path, and nothing is created', async (p1, p2) => {
    const err = await mountError(
      h.mounter().materialize([store('memstore_1', { mount_path: p1 }), store('memstore_2', { mount_path: p2 })]),
    );
    expect(err.code).toBe('duplicate_mount_path');
    expect(await h.fs.readdir(h.memoryRoot)).toEqual([]);
  });

  it.each([
    ['read-write and read-only, at two paths', { mount_path: '/mnt/memory/rw' }, { mount_path: '/mnt/memory/ro', access: 'read_only' }],
    ['twice the same, at two paths', { mount_path: '/mnt/memory/one' }, { mount_path: '/mnt/memory/two' }],
    ['at the same path', {}, {}],
  ])('one memory_store_id attached twice (%s) is duplicate_store_id, and nothing is created', async (_label, first, second) => {
    h.client.seed('memstore_twice', { '/a.md': 'a' });
    const m = h.mounter();
    const err = await mountError(
      m.materialize([store('memstore_other'), store('memstore_twice', first), store('memstore_twice', second)]),
    );
    expect(err.code).toBe('duplicate_store_id');
    expect(err.memoryStoreId).toBe('memstore_twice');
    const firstPath = (first as { mount_path?: string }).mount_path ?? '/mnt/memory/memstore-twice';
    const secondPath = (second as { mount_path?: string }).mount_path ?? '/mnt/memory/memstore-twice';
    expect(err.path).toBe(secondPath);
    expect(err.message).toBe(
      `store memstore_twice is attached twice, at ${firstPath} and at ${secondPath}; a store can be mounted once per session`,
    );
    expect(await h.fs.readdir(h.memoryRoot)).toEqual([]);
    expect(h.client.requests).toEqual([]);
    expect(m.mounts).toEqual([]);
  });

  it('anything already at a mount path is mount_path_exists, and it is left untouched', async () => {
    await h.write(`${h.memoryRoot}/notes/keep.md`, 'someone else');
    const err = await mountError(h.mounter().materialize([notesResource()]));
    expect(err.code).toBe('mount_path_exists');
    expect(err.message).toContain(`${h.memoryRoot}/notes`);
    expect(await h.read(`${h.memoryRoot}/notes/keep.md`)).toBe('someone else');
    expect(await h.exists(`${h.memoryRoot}/notes/.anthropic-memory-store`)).toBe(false);
  });

  it('a plain file at the mount path is mount_path_exists too', async () => {
    await h.write(`${h.memoryRoot}/notes`, 'a file');
    expect((await mountError(h.mounter().materialize([notesResource()]))).code).toBe('mount_path_exists');
    expect(await h.read(`${h.memoryRoot}/notes`)).toBe('a file');
  });

  it('two mounters racing for one path: exactly one wins', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha' });
    const results = await Promise.allSettled([h.mounter().materialize([notesResource()]), h.mounter().materialize([notesResource()])]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({ code: 'mount_path_exists' });
    expect(await h.read(`${h.memoryRoot}/notes/a.md`)).toBe('alpha');
  });

  it('a missing memoryRoot is mount_path_unwritable, with the fix in the message', async () => {
    const m = h.mounter({ memoryRoot: `${h.memoryRoot}/absent` });
    const err = await mountError(m.materialize([notesResource()]));
    expect(err.code).toBe('mount_path_unwritable');
    expect(err.message).toMatch(/mkdir -p .*absent/);
  });

  it('skips remote paths that cannot live in a mount, with a warning naming path and store', async () => {
    for (const path of ['/.anthropic-memory-store', '/x/.mm-tmp-0123456789abcdef', '/back\\slash.md']) {
      h.client.writeMemory(STORE, path, 'hostile');
    }
    h.client.writeMemory(STORE, '/fine.md', 'fine');
    await h.mounter().materialize([notesResource()]);
    const dir = h.notesDir;
    expect((await h.fs.readdir(dir)).map((e) => e.name).sort()).toEqual(['.anthropic-memory-store', 'fine.md']);
    const warned = h.logger.warnings().map((w) => w.fields);
    for (const path of ['/.anthropic-memory-store', '/x/.mm-tmp-0123456789abcdef', '/back\\slash.md']) {
      expect(warned).toContainEqual(expect.objectContaining({ memory_store_id: STORE, path }));
    }
    expect(JSON.parse((await h.read(`${dir}/.anthropic-memory-store`))!)).toEqual({ memory_store_id: STORE });
  });

  it('a memory whose path is also a folder of other memories is skipped, the others written', async () => {
    // The service refuses such a store; the engine must still cope with one.
    h.client.plantMemory(STORE, '/a', 'file a');
    h.client.plantMemory(STORE, '/a/b.md', 'inside a');
    await h.mounter().materialize([notesResource()]);
    expect(await h.read(`${h.memoryRoot}/notes/a/b.md`)).toBe('inside a');
    expect(h.logger.warnings().some((w) => w.fields.path === '/a')).toBe(true);
  });

  it('all or nothing: one store failing removes every folder the call created', async () => {
    h.client.seed('memstore_ok', { '/a.md': 'a' });
    h.client.seed('memstore_bad', { '/b.md': 'b' });
    const list = h.client.list.bind(h.client);
    const listFolder = h.client.listFolder.bind(h.client);
    h.client.list = (id, opts) => {
      if (id === 'memstore_bad') throw new Error('boom');
      return list(id, opts);
    };
    // The download lists folder by folder.
    h.client.listFolder = (id, opts) => {
      if (id === 'memstore_bad') throw new Error('boom');
      return listFolder(id, opts);
    };
    const err = await mountError(
      h.mounter().materialize([store('memstore_ok'), store('memstore_bad', { mount_path: '/mnt/memory/team/bad' })]),
    );
    expect(err.code).toBe('download_failed');
    expect(err.memoryStoreId).toBe('memstore_bad');
    // Whatever a client throws reaches the engine as a StoreError; the original is its cause.
    expect(err.cause).toMatchObject({ kind: 'unavailable', cause: { message: 'boom' } });
    expect(await h.fs.readdir(h.memoryRoot)).toEqual([]);
  });

  it('a store error while downloading is download_failed with the StoreError as cause', async () => {
    h.client.seed(STORE, { '/a.md': 'a' });
    h.client.failNext('list', 'unauthorized');
    const err = await mountError(h.mounter().materialize([notesResource()]));
    expect(err.code).toBe('download_failed');
    expect(err.cause).toMatchObject({ kind: 'unauthorized' });
    expect(await h.exists(`${h.memoryRoot}/notes`)).toBe(false);
  });

  it('reads nothing back before a write: the fresh folder is taken as empty, the write checks absence', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta', '/d/c.md': 'gamma' });
    const calls: string[] = [];
    const fs = new Proxy(h.fs, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const path = String(args[0]);
          if (/\/(a|b|c)\.md$/.test(path)) calls.push(`${String(prop)} ${path.slice(path.lastIndexOf('/') + 1)}`);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    await h.mounter({ fileSystem: fs }).materialize([notesResource()]);
    // Per memory one call: the file created in place, its exclusive create the only-if-absent
    // check; no lstat, no open to read, no temp file and rename.
    expect(calls.sort()).toEqual(['createFile a.md', 'createFile b.md', 'createFile c.md']);
    expect(await h.read(`${h.notesDir}/d/c.md`)).toBe('gamma');
  });

  it('without createFile, each memory is the only-if-absent lstat and the atomic write', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/d/c.md': 'gamma' });
    const calls: string[] = [];
    const fs = new Proxy(h.fs, {
      get(target, prop, receiver) {
        if (prop === 'createFile') return undefined;
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const path = String(args[0]);
          if (/\/(a|c)\.md$/.test(path)) calls.push(`${String(prop)} ${path.slice(path.lastIndexOf('/') + 1)}`);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    await h.mounter({ fileSystem: fs }).materialize([notesResource()]);
    expect(calls.sort()).toEqual(['lstat a.md', 'lstat c.md', 'writeFile a.md', 'writeFile c.md']);
    expect(await h.read(`${h.notesDir}/d/c.md`)).toBe('gamma');
  });

  it('an entry made where a memory goes before its create is kept, not written over, when the file is made in place', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta' });
    let planted = false;
    const fs = aroundCreateFile(h.fs, async (create, path, data, opts) => {
      if (path.endsWith('/a.md') && !planted) {
        planted = true;
        await h.fs.writeFile(path, new TextEncoder().encode('made first'));
      }
      return create(path, data, opts);
    });
    await h.mounter({ fileSystem: fs }).materialize([notesResource()]).catch(() => {});
    expect(planted).toBe(true);
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('made first');
    expect(await h.read(`${h.notesDir}/b.md`)).toBe('beta');
  });

  it('a second materialize throws', async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    await expect(m.materialize([notesResource()])).rejects.toMatchObject({ code: 'already_materialized' });
  });
});
