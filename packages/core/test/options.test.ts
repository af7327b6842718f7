import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import createDebug from 'debug';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { MemoryMounter, type MemoryMounterOptions } from '@memory-mounter/core';
import { DISKS, neverAnsweringFeed, neverAnsweringList, notesResource, RecordingLogger, STORE, useHarness, withoutChangeFeed } from './harness.js';
import { configError, validOptions as valid } from './config-error.js';

/** MemoryMounterOptions: every refusal names its option; every default is measured, not read back. */

const noop = () => undefined;
const fsMethods = { lstat: noop, readdir: noop, readFile: noop, writeFile: noop, mkdir: noop, rm: noop };

describe('MemoryConfigError, naming the option at fault', () => {
  const cases: [option: keyof MemoryMounterOptions, values: unknown[]][] = [
    ['memory_sync_interval', [0, -1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '15', null, true]],
    ['memory_sync_deletions', ['on', 'ENABLED', 'delete', '', 1]],
    ['deleteGracePeriod', [-1, -0.001, Number.NaN, Number.POSITIVE_INFINITY, '30', null]],
    ['finalSyncTimeout', [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '30', null, 2_147_484]],
    ['requestTimeout', [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '30', null, 2_147_484]],
    ['syncTimeout', [0, -0.5, Number.NaN, Number.POSITIVE_INFINITY, '60', null, 2_147_484]],
    ['syncWait', [-1, Number.NaN, Number.POSITIVE_INFINITY, '2', null, 2_147_484]],
    ['retryBudget', [-0.5, Number.NaN, Number.POSITIVE_INFINITY, '5', null, 2_147_484]],
    ['transferConcurrency', [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '16', null]],
    ['fullListingEvery', [0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY, '100', null]],
    ['fullListingInterval', [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '600', null]],
    ['memoryRoot', ['mnt/memory', './mnt/memory', '', '~/memory', '/mnt/\0memory', 42]],
    ['storeClient', [undefined, null, {}, 'client', { list: noop, get: noop, create: noop, update: noop }]],
    ['fileSystem', [null, {}, 'fs', fsMethods /* no rename */]],
    ['logger', [null, {}, 'console', { debug: noop, info: noop, warn: noop } /* no error */]],
    ['now', [null, 123, 'Date.now', { now: noop }]],
  ];
  describe.each(cases)('%s', (option, values) => {
    it.each(values.map((v) => [typeof v === 'string' ? JSON.stringify(v) : String(v), v]))('%s', (_label, value) => {
      const err = configError({ ...valid(), [option]: value });
      expect(err.option).toBe(option);
      expect(err.message).toContain(option);
    });
  });

  it('memory_sync_interval above 3,600 s is refused as milliseconds passed by mistake', () => {
    const err = configError({ ...valid(), memory_sync_interval: 15_000 });
    expect(err.option).toBe('memory_sync_interval');
    expect(err.message).toMatch(/in seconds/);
    expect(err.message).toMatch(/milliseconds/);
    expect(err.message).toContain('15000');
    configError({ ...valid(), memory_sync_interval: 3_600.5 });
    expect(() => new MemoryMounter({ ...valid(), memory_sync_interval: 3_600 })).not.toThrow();
  });

  it('a value of the wrong type is shown with its type', () => {
    expect(configError({ ...valid(), memory_sync_interval: '15' }).message).toContain('got "15" (a string)');
    expect(configError({ ...valid(), deleteGracePeriod: '30' }).message).toContain('got "30" (a string)');
    expect(configError({ ...valid(), requestTimeout: true }).message).toContain('got true (a boolean)');
    expect(configError({ ...valid(), syncTimeout: null }).message).toContain('got null');
  });

  it('no options object at all', () => {
    configError(undefined);
    configError(null);
  });

  it('is thrown by the constructor before anything is touched', () => {
    const client = new InMemoryStoreClient();
    const fs = new MemfsFileSystem({ '/mnt/memory': null });
    const calls: string[] = [];
    for (const op of ['lstat', 'readdir', 'readFile', 'writeFile', 'mkdir', 'rm', 'rename'] as const) {
      const original = fs[op].bind(fs) as (...args: unknown[]) => unknown;
      (fs as unknown as Record<string, unknown>)[op] = (...args: unknown[]) => {
        calls.push(op);
        return original(...args);
      };
    }
    configError({ storeClient: client, fileSystem: fs, memory_sync_interval: 0 });
    expect(calls).toEqual([]);
    expect(client.requests).toEqual([]);
  });

  it('accepts the edges of each range', () => {
    expect(() => new MemoryMounter({ ...valid(), memory_sync_interval: 0.001, deleteGracePeriod: 0, finalSyncTimeout: 0.001 })).not.toThrow();
    expect(() => new MemoryMounter({ ...valid(), requestTimeout: 0.001, syncTimeout: 0.001 })).not.toThrow();
    expect(() => new MemoryMounter({ ...valid(), transferConcurrency: 1, fullListingEvery: 1, fullListingInterval: 0.001 })).not.toThrow();
    expect(() => new MemoryMounter({ ...valid(), requestTimeout: 2_147_483, syncTimeout: 2_147_483, finalSyncTimeout: 2_147_483 })).not.toThrow();
    for (const mode of ['enabled', 'log_only', 'disabled'] as const) {
      expect(() => new MemoryMounter({ ...valid(), memory_sync_deletions: mode })).not.toThrow();
    }
    expect(() => new MemoryMounter({ storeClient: new InMemoryStoreClient() })).not.toThrow();
  });
});

const FILES = { '/a.md': 'alpha', '/b.md': 'beta' };

describe.each(DISKS)('defaults and units, measured on %s', (disk) => {
  const h = useHarness(disk);
  let dir: string;
  beforeEach(() => {
    dir = h.notesDir;
  });

  it('memory_sync_interval defaults to 15 s (materialize counts as a sync)', async () => {
    const m = await h.mountNotes({}, FILES);
    h.clock.advance(14.999);
    expect(await m.reconcile()).toBeNull();
    h.clock.advance(0.001);
    expect(await m.reconcile()).not.toBeNull();
    expect(await m.reconcile()).toBeNull();
    h.clock.advance(14.999);
    expect(await m.reconcile()).toBeNull();
    h.clock.advance(0.001);
    expect(await m.reconcile()).not.toBeNull();
  });

  it('memory_sync_interval is in seconds', async () => {
    const m = await h.mountNotes({ memory_sync_interval: 2.5 }, FILES);
    h.clock.advance(2.499);
    expect(await m.reconcile()).toBeNull();
    h.clock.advance(0.001);
    expect(await m.reconcile()).not.toBeNull();
  });

  it('deleteGracePeriod defaults to 30 s from when the file is first seen missing, and deletions default to enabled', async () => {
    const m = await h.mountNotes({}, FILES);
    await h.remove(`${dir}/a.md`);
    const first = await m.reconcile({ force: true });
    expect(first!.stores[0]!.pendingDeletions).toEqual(['/a.md']);
    h.clock.advance(29.999);
    const before = await m.reconcile({ force: true });
    expect(before!.stores[0]!.pendingDeletions).toEqual(['/a.md']);
    expect(h.client.count('delete')).toBe(0);
    h.clock.advance(0.001);
    const due = await m.reconcile({ force: true });
    expect(due!.stores[0]!.deletedRemote).toEqual(['/a.md']);
    expect(h.client.snapshot(STORE)).toEqual({ '/b.md': 'beta' });
  });

  it('deleteGracePeriod is in seconds', async () => {
    const m = await h.mountNotes({ deleteGracePeriod: 1.5 }, FILES);
    await h.remove(`${dir}/a.md`);
    await m.reconcile({ force: true });
    h.clock.advance(1.499);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(0);
    h.clock.advance(0.001);
    await m.reconcile({ force: true });
    expect(h.client.count('delete')).toBe(1);
  });

  it('memoryRoot is normalised: a trailing slash or a ./ segment mounts at the same place', async () => {
    const m = await h.mountNotes({ memoryRoot: `${h.memoryRoot}/./` }, { '/a.md': 'alpha' });
    expect(m.roots).toEqual([dir]);
    expect(await h.read(`${dir}/a.md`)).toBe('alpha');
    expect(() => m.checkWrite(`${h.memoryRoot}/x.md`)).toThrow(expect.objectContaining({ reason: 'outside_store' }));
  });

  it('finalSyncTimeout defaults to 30 s, one deadline for the whole finalize', async () => {
    const m = await h.mountNotes({}, FILES);
    // A store that never answers, and ignores the abort.
    h.client.list = neverAnsweringList;
    h.client.listVersions = neverAnsweringFeed;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let done = false;
      const finalizing = m.finalize().then((r) => {
        done = true;
        return r;
      });
      await vi.advanceTimersByTimeAsync(29_999);
      expect(done).toBe(false);
      // The final sync and the flush share the deadline: past it, with the 2 s allowance for
      // wind-down, nothing is left that waits on a timer.
      await vi.advanceTimersByTimeAsync(2_001);
      vi.useRealTimers();
      const report = await finalizing;
      expect(report.timedOut).toEqual({ sync: true, flush: true });
    } finally {
      vi.useRealTimers();
    }
  });

  it('syncTimeout defaults to 60 s and requestTimeout to 30 s: a stalled call is abandoned and retried until the pass is cut off', async () => {
    const m = await h.mountNotes({}, FILES);
    // The listing is what is timed here: without the change feed, every pass lists.
    withoutChangeFeed(h.client);
    let lists = 0;
    h.client.list = () => {
      lists++;
      return neverAnsweringList();
    };
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let done = false;
      const reconciling = m.reconcile({ force: true }).then((r) => {
        done = true;
        return r;
      });
      // The scan reads the disk first (real I/O, which fake time does not wait for).
      // (vi.waitFor would advance fake time while it polls; setImmediate is not faked here.)
      while (lists === 0) await new Promise((resolve) => setImmediate(resolve));
      await vi.advanceTimersByTimeAsync(29_999);
      expect(lists).toBe(1);
      // The listing is abandoned at 30 s and tried again after a short backoff.
      await vi.advanceTimersByTimeAsync(3_100);
      expect(lists).toBe(2);
      await vi.advanceTimersByTimeAsync(26_800);
      expect(done).toBe(false);
      // The pass is cut off at 60 s; it gets 1 s to wind down.
      await vi.advanceTimersByTimeAsync(1_200);
      vi.useRealTimers();
      const report = await reconciling;
      expect(report!.stores[0]).toMatchObject({ status: 'skipped', code: 'time_bound', reason: expect.stringMatching(/time bound/) });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('defaults that need no harness', () => {
  it('memoryRoot defaults to /mnt/memory', async () => {
    const client = new InMemoryStoreClient();
    client.seed(STORE, { '/a.md': 'alpha' });
    const fs = new MemfsFileSystem({ '/mnt/memory': null });
    const m = new MemoryMounter({ storeClient: client, fileSystem: fs, logger: new RecordingLogger() });
    const [mount] = await m.materialize([notesResource()]);
    expect(mount!.path).toBe('/mnt/memory/notes');
    expect(new TextDecoder().decode(await fs.readFile('/mnt/memory/notes/a.md'))).toBe('alpha');
    await m.finalize();
  });

  it('fileSystem defaults to the real disk (NodeFileSystem)', async () => {
    const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-options-')));
    try {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/a.md': 'alpha' });
      const m = new MemoryMounter({ storeClient: client, memoryRoot: base, logger: new RecordingLogger() });
      await m.materialize([notesResource()]);
      expect(await readFile(join(base, 'notes', 'a.md'), 'utf8')).toBe('alpha');
      await m.finalize();
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('now defaults to Date.now', async () => {
    const client = new InMemoryStoreClient();
    const m = new MemoryMounter({
      storeClient: client,
      fileSystem: new MemfsFileSystem({ '/mnt/memory': null }),
      logger: new RecordingLogger(),
      memory_sync_interval: 0.05,
    });
    await m.materialize([notesResource()]);
    expect(await m.reconcile()).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await m.reconcile()).not.toBeNull();
  });

  it('the logger defaults to the debug package under memory-mounter:*', async () => {
    const lines: string[] = [];
    const previousLog = createDebug.log;
    const previousNamespaces = createDebug.disable();
    createDebug.log = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
    createDebug.enable('memory-mounter:*');
    try {
      const client = new InMemoryStoreClient();
      client.seed(STORE, { '/a.md': 'alpha' });
      const m = new MemoryMounter({ storeClient: client, fileSystem: new MemfsFileSystem({ '/mnt/memory': null }) });
      await m.materialize([notesResource()]);
      expect(lines.some((l) => l.includes('memory-mounter:info') && l.includes(STORE))).toBe(true);
    } finally {
      createDebug.log = previousLog;
      createDebug.enable(previousNamespaces);
    }
  });
});
