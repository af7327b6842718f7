import { beforeEach, describe, expect, it } from 'vitest';
import { tempFileName } from '@memory-mounter/core';
import { DISKS, notesResource, STORE, useHarness } from './harness.js';

const FILES = { '/a.md': 'alpha', '/d/b.md': 'beta' };

describe.each(DISKS)('reconcile on %s', (disk) => {
  const h = useHarness(disk);
  let dir: string;
  beforeEach(() => {
    dir = h.notesDir;
  });

  it('does nothing when nothing changed, and fetches nothing', async () => {
    const m = await h.mountNotes({}, FILES);
    const gets = h.client.count('get');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]).toMatchObject({ status: 'synced', pulled: [], pushed: [], deletedLocal: [], deletedRemote: [] });
    expect(h.client.count('get')).toBe(gets);
    expect(h.client.count('update') + h.client.count('create') + h.client.count('delete')).toBe(0);
  });

  it('pushes a local edit as an update guarded by the remote sha', async () => {
    const m = await h.mountNotes({}, FILES);
    await h.write(`${dir}/a.md`, 'alpha 2');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.pushed).toEqual(['/a.md']);
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha 2');
    expect(h.client.requests.filter((r) => r.op === 'update')).toHaveLength(1);
  });

  it('creates a memory for a new local file, nested folders included', async () => {
    const m = await h.mountNotes({}, FILES);
    await h.write(`${dir}/new/deep/c.md`, 'gamma');
    await m.reconcile({ force: true });
    expect(h.client.snapshot(STORE)['/new/deep/c.md']).toBe('gamma');
  });

  it('pulls a remote edit and a new remote memory, their content with the feed read: no fetch', async () => {
    const m = await h.mountNotes({}, FILES);
    h.client.writeMemory(STORE, '/a.md', 'alpha from elsewhere');
    h.client.writeMemory(STORE, '/e/f.md', 'new');
    const gets = h.client.count('get');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.pulled.sort()).toEqual(['/a.md', '/e/f.md']);
    expect(h.client.count('get') - gets).toBe(0);
    expect(await h.read(`${dir}/a.md`)).toBe('alpha from elsewhere');
    expect(await h.read(`${dir}/e/f.md`)).toBe('new');
  });

  it('both changed to the same content: adopted with no transfer', async () => {
    const m = await h.mountNotes({}, FILES);
    h.client.writeMemory(STORE, '/a.md', 'same');
    await h.write(`${dir}/a.md`, 'same');
    const before = h.client.requests.length;
    await m.reconcile({ force: true });
    // No transfer. The first feed read after the download's listing meets a version that listing
    // does not account for (another writer wrote since), so the store is listed again: the
    // listing may have missed a memory while it paged (listed_while_written). That listing is
    // checked at once by one feed read (nothing written while it paged: it stands). Then one feed read.
    expect(h.client.requests.slice(before).map((r) => r.op)).toEqual(['listVersions', 'list', 'listVersions']);
    await m.reconcile({ force: true });
    expect(h.client.requests.slice(before).map((r) => r.op)).toEqual(['listVersions', 'list', 'listVersions', 'listVersions']);
  });

  it('conflict: the store wins, with a warning naming the path and the store', async () => {
    const m = await h.mountNotes({}, FILES);
    h.client.writeMemory(STORE, '/a.md', 'remote edit');
    await h.write(`${dir}/a.md`, 'local edit');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.conflicts).toEqual(['/a.md']);
    expect(await h.read(`${dir}/a.md`)).toBe('remote edit');
    expect(h.client.snapshot(STORE)['/a.md']).toBe('remote edit');
    const warning = h.logger.warnings().find((w) => w.msg.includes('conflict'));
    expect(warning?.fields).toMatchObject({ memory_store_id: STORE, path: '/a.md' });
  });

  it('a memory deleted in the store is deleted locally when the file was untouched', async () => {
    const m = await h.mountNotes({}, FILES);
    h.client.deleteMemory(STORE, '/a.md');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.deletedLocal).toEqual(['/a.md']);
    expect(await h.exists(`${dir}/a.md`)).toBe(false);
  });

  it('a memory deleted in the store but edited locally is re-created from the file', async () => {
    const m = await h.mountNotes({}, FILES);
    h.client.deleteMemory(STORE, '/a.md');
    await h.write(`${dir}/a.md`, 'only copy');
    await m.reconcile({ force: true });
    expect(h.client.snapshot(STORE)['/a.md']).toBe('only copy');
    expect(await h.read(`${dir}/a.md`)).toBe('only copy');
  });

  it('a file deleted locally while its memory changed remotely is restored', async () => {
    const m = await h.mountNotes({}, FILES);
    await h.remove(`${dir}/a.md`);
    h.client.writeMemory(STORE, '/a.md', 'changed remotely');
    await m.reconcile({ force: true });
    expect(await h.read(`${dir}/a.md`)).toBe('changed remotely');
    expect(h.client.count('delete')).toBe(0);
  });

  it('gone on both sides: dropped from the baseline, nothing sent', async () => {
    const m = await h.mountNotes({}, FILES);
    await h.remove(`${dir}/a.md`);
    h.client.deleteMemory(STORE, '/a.md');
    await m.reconcile({ force: true });
    // Re-created remotely later, it is a plain new memory: pulled, not a conflict.
    h.client.writeMemory(STORE, '/a.md', 'back');
    const report = await m.reconcile({ force: true });
    expect(report!.stores[0]!.pulled).toEqual(['/a.md']);
    expect(report!.stores[0]!.conflicts).toEqual([]);
  });

  describe('throttling', () => {
    it('returns null until memory_sync_interval has passed since the last sync (materialize counts)', async () => {
      const m = await h.mountNotes({ memory_sync_interval: 15 }, FILES);
      h.clock.advance(14);
      expect(await m.reconcile()).toBeNull();
      h.clock.advance(1);
      expect(await m.reconcile()).not.toBeNull();
      h.clock.advance(5);
      expect(await m.reconcile()).toBeNull();
      expect(await m.reconcile({ force: true })).not.toBeNull();
    });

    it('concurrent calls share one run', async () => {
      const m = await h.mountNotes({}, FILES);
      const reads = () => h.client.count('list') + h.client.count('listVersions');
      const before = reads();
      const [a, b, c] = await Promise.all([m.reconcile({ force: true }), m.reconcile({ force: true }), m.reconcile()]);
      expect(a).toBe(b);
      expect(b).toBe(c);
      expect(reads() - before).toBe(1);
    });
  });

  describe('store errors', () => {
    it('precondition_failed on a push drops it; the next sync pulls the winner', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/a.md`, 'mine');
      h.client.failNext('update', 'precondition_failed');
      const first = await m.reconcile({ force: true });
      expect(first!.stores[0]!.pushed).toEqual([]);
      expect(first!.stores[0]!.errors).toMatchObject([{ path: '/a.md', kind: 'precondition_failed' }]);
      h.client.writeMemory(STORE, '/a.md', 'winner');
      await m.reconcile({ force: true });
      expect(await h.read(`${dir}/a.md`)).toBe('winner');
    });

    it('not_found on update re-creates the memory', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/a.md`, 'mine');
      // Another writer deletes the memory between our listing and our update.
      const update = h.client.update.bind(h.client);
      h.client.update = (...args) => {
        h.client.deleteMemory(STORE, '/a.md');
        return update(...args);
      };
      const report = await m.reconcile({ force: true });
      expect(report!.stores[0]!.pushed).toEqual(['/a.md']);
      expect(h.client.count('create')).toBe(1);
    });

    it('path_conflict on create: the next listing decides (store wins on different content)', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/n.md`, 'mine');
      // Another writer creates the same path between our listing and our create.
      const create = h.client.create.bind(h.client);
      h.client.create = (...args) => {
        h.client.writeMemory(STORE, '/n.md', 'theirs');
        return create(...args);
      };
      const first = await m.reconcile({ force: true });
      expect(first!.stores[0]!.errors).toMatchObject([{ path: '/n.md', kind: 'path_conflict' }]);
      const report = await m.reconcile({ force: true });
      expect(report!.stores[0]!.conflicts).toEqual(['/n.md']);
      expect(await h.read(`${dir}/n.md`)).toBe('theirs');
    });

    it('rejected: warned once, not retried until the file changes', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/a.md`, 'refused');
      h.client.failNext('update', 'rejected');
      await m.reconcile({ force: true });
      await m.reconcile({ force: true });
      expect(h.client.count('update')).toBe(1);
      expect(h.logger.warnings().filter((w) => w.msg.includes('rejected'))).toHaveLength(1);
      await h.write(`${dir}/a.md`, 'refused, edited');
      await m.reconcile({ force: true });
      expect(h.client.snapshot(STORE)['/a.md']).toBe('refused, edited');
    });

    // A create is never retried (a repeat is not safe), so its unknown outcome reaches the engine.
    // Guarded updates and deletes are retried within the pass: see time-bounds.test.ts.
    it('unavailable after the write applied: the next listing recognises our write', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/n.md`, 'sent once');
      h.client.failAfterApply('create');
      const first = await m.reconcile({ force: true });
      expect(first!.stores[0]!.errors).toMatchObject([{ path: '/n.md', kind: 'unavailable' }]);
      const second = await m.reconcile({ force: true });
      expect(second!.stores[0]).toMatchObject({ pulled: [], pushed: [], conflicts: [] });
      expect(h.client.count('create')).toBe(1);
      expect(await h.read(`${dir}/n.md`)).toBe('sent once');
    });

    it('unavailable before the write applied: the next sync sends it again', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/n.md`, 'try again');
      h.client.failNext('create', 'unavailable');
      await m.reconcile({ force: true });
      expect(h.client.snapshot(STORE)['/n.md']).toBeUndefined();
      await m.reconcile({ force: true });
      expect(h.client.snapshot(STORE)['/n.md']).toBe('try again');
    });

    it('a failing listing fails only its store; reconcile does not throw', async () => {
      h.client.seed(STORE, { '/a.md': 'a' });
      h.client.seed('memstore_other', { '/x.md': 'x' });
      const m = h.mounter();
      await m.materialize([notesResource(), { type: 'memory_store', memory_store_id: 'memstore_other', name: 'Other' }]);
      h.client.writeMemory('memstore_other', '/x.md', 'x2');
      // The first store to read is refused its feed, then its listing.
      h.client.failNext('listVersions', 'unauthorized');
      h.client.failNext('list', 'unauthorized');
      const report = await m.reconcile({ force: true });
      const statuses = report!.stores.map((s) => s.status).sort();
      expect(statuses).toEqual(['failed', 'synced']);
      const failed = report!.stores.find((s) => s.status === 'failed')!;
      expect(failed.reason).toMatch(/unauthorized/);
    });
  });

  describe('content the store cannot take', () => {
    it('non-UTF-8 and oversize files are refused with a warning, other files keep syncing', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/bin.dat`, new Uint8Array([0xff, 0xfe, 0x00, 0x80]));
      await h.write(`${dir}/big.md`, 'x'.repeat(102_401));
      await h.write(`${dir}/ok.md`, 'fine');
      const report = await m.reconcile({ force: true });
      expect(report!.stores[0]!.refused.map((r) => r.path).sort()).toEqual(['/big.md', '/bin.dat']);
      expect(Object.keys(h.client.snapshot(STORE))).toContain('/ok.md');
      expect(Object.keys(h.client.snapshot(STORE))).not.toContain('/big.md');
      await m.reconcile({ force: true });
      expect(h.logger.warnings().filter((w) => w.fields.path === '/big.md')).toHaveLength(1);
    });

    it('exactly 102,400 bytes and multi-byte UTF-8 (BOM kept) are pushed byte for byte', async () => {
      const m = await h.mountNotes({}, FILES);
      await h.write(`${dir}/max.md`, 'y'.repeat(102_400));
      await h.write(`${dir}/bom.md`, '\uFEFFnaïve ✓');
      await m.reconcile({ force: true });
      expect(h.client.snapshot(STORE)['/bom.md']).toBe('\uFEFFnaïve ✓');
      expect(h.client.snapshot(STORE)['/max.md']).toHaveLength(102_400);
      const again = await m.reconcile({ force: true });
      expect(again!.stores[0]!.pushed).toEqual([]);
    });
  });

  it('the marker and temp files of atomic writes never sync', async () => {
    const m = await h.mountNotes({}, FILES);
    // Ours, and the agent toolset's (`.tmp-<pid>-<uuid>`, written beside its target then renamed).
    await h.write(`${dir}/${tempFileName()}`, 'half written');
    await h.write(`${dir}/.tmp-4242-0f8e2c1a-9b7d-4c3e-8a2f-1d6b5e4c3a21`, 'half written by a tool');
    await m.reconcile({ force: true });
    const paths = Object.keys(h.client.snapshot(STORE));
    expect(paths).not.toContain('/.anthropic-memory-store');
    expect(paths.filter((p) => p.includes('tmp'))).toEqual([]);
  });
});
