import { describe, expect, it } from 'vitest';
import { conflictCopyPath, isConflictCopyName, MemoryMounter, type ConflictEvent, type MounterEvents } from '@memory-mounter/core';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { RecordingLogger } from './harness.js';

/** mounter.on(...): what each event carries, when it fires, and that a listener cannot break a pass. */

const STORE = 'memstore_notes';
const DIR = '/mnt/memory/notes';
const resource = { type: 'memory_store', memory_store_id: STORE, name: 'Notes' };

async function mounted(files: Record<string, string>, extra: { conflictCopies?: boolean } = {}) {
  const client = new InMemoryStoreClient();
  client.seed(STORE, files);
  const fs = new MemfsFileSystem({ '/mnt/memory': null });
  const logger = new RecordingLogger();
  const mounter = new MemoryMounter({ storeClient: client, fileSystem: fs, logger, now: () => 0, newFileSettle: 0, ...extra });
  const seen: { event: keyof MounterEvents; payload: unknown }[] = [];
  for (const event of ['conflict', 'pulled', 'pushed', 'deleted', 'refused', 'progress'] as const) {
    mounter.on(event, (payload: unknown) => void seen.push({ event, payload }));
  }
  await mounter.materialize([resource]);
  return { client, fs, mounter, seen, logger };
}

describe('events', () => {
  it("a pass's transfer events are told once the pass has done all its transfers (at its commit), not as each lands", async () => {
    const { client, fs, mounter } = await mounted({ '/a.md': 'a\n', '/b.md': 'b\n' });
    fs.vol.writeFileSync(`${DIR}/a.md`, 'a, edited\n');
    fs.vol.writeFileSync(`${DIR}/b.md`, 'b, edited\n');
    // b's update lands a moment after a's.
    const update = client.update.bind(client);
    client.update = async (storeId, memoryId, input, opts) => {
      if (client.memories(STORE).find((m) => m.id === memoryId)?.path === '/b.md') await new Promise((resolve) => setTimeout(resolve, 50));
      return update(storeId, memoryId, input, opts);
    };
    const inStoreWhenTold: Record<string, string | undefined>[] = [];
    mounter.on('pushed', () => void inStoreWhenTold.push({ ...client.snapshot(STORE) }));
    const report = await mounter.reconcile({ force: true });
    expect([...report!.stores[0]!.pushed].sort()).toEqual(['/a.md', '/b.md']);
    expect(inStoreWhenTold).toHaveLength(2);
    for (const seen of inStoreWhenTold) expect(seen).toEqual({ '/a.md': 'a, edited\n', '/b.md': 'b, edited\n' });
    await mounter.finalize();
  });

  it('a conflict hands the listener the exact losing bytes, before the file is replaced', async () => {
    const { client, fs, mounter } = await mounted({ '/a.md': 'base\n' });
    // Not UTF-8 on purpose: the listener gets the bytes as they are on disk, not a decoded string.
    const losing = new Uint8Array([0x6c, 0x6f, 0x63, 0x61, 0x6c, 0x0a, 0xc3, 0xa9, 0x00, 0xff]);
    fs.vol.writeFileSync(`${DIR}/a.md`, losing);
    client.writeMemory(STORE, '/a.md', 'remote wins\n');
    let onDiskWhenCalled: Uint8Array | undefined;
    let got: ConflictEvent | undefined;
    mounter.on('conflict', (e) => {
      got = e;
      onDiskWhenCalled = new Uint8Array(fs.vol.readFileSync(`${DIR}/a.md`) as Buffer);
    });
    const report = await mounter.reconcile({ force: true });
    expect(report!.stores[0]!.conflicts).toEqual(['/a.md']);
    expect(got).toBeDefined();
    expect(Buffer.from(got!.localContent).equals(Buffer.from(losing))).toBe(true);
    expect(Buffer.from(onDiskWhenCalled!).equals(Buffer.from(losing))).toBe(true);
    expect(got).toMatchObject({ memoryStoreId: STORE, path: '/a.md', hostPath: `${DIR}/a.md`, copyPath: null });
    expect(got!.storeSha).toBe(client.memories(STORE).find((m) => m.path === '/a.md')!.content_sha256);
    expect(fs.vol.readFileSync(`${DIR}/a.md`, 'utf8')).toBe('remote wins\n');
    await mounter.finalize();
  });

  it('conflictCopies writes the loser beside the file, and the copy never reaches the store', async () => {
    const { client, fs, mounter } = await mounted({ '/n/a.md': 'base\n' }, { conflictCopies: true });
    fs.vol.writeFileSync(`${DIR}/n/a.md`, 'mine\n');
    client.writeMemory(STORE, '/n/a.md', 'theirs\n');
    let copy: string | null = null;
    mounter.on('conflict', (e) => void (copy = e.copyPath));
    await mounter.reconcile({ force: true });
    expect(copy).toMatch(new RegExp(`^${DIR}/n/a\\.conflict-\\d{8}T\\d{9}Z\\.md$`));
    expect(fs.vol.readFileSync(copy!, 'utf8')).toBe('mine\n');
    await mounter.reconcile({ force: true });
    await mounter.finalize();
    expect(Object.keys(client.snapshot(STORE))).toEqual(['/n/a.md']);
  });

  it('pulled, pushed, deleted and refused carry the path, the host path and the sha', async () => {
    const { client, fs, mounter, seen } = await mounted({ '/a.md': 'a', '/gone.md': 'g' });
    seen.length = 0;
    client.writeMemory(STORE, '/b.md', 'b');
    fs.vol.writeFileSync(`${DIR}/c.md`, 'c');
    fs.vol.writeFileSync(`${DIR}/bad.md`, Buffer.from([0xff, 0xfe]));
    client.deleteMemory(STORE, '/gone.md');
    await mounter.reconcile({ force: true });
    const names = seen.map((s) => s.event);
    expect(names).toContain('pulled');
    expect(names).toContain('pushed');
    expect(names).toContain('refused');
    expect(seen.find((s) => s.event === 'deleted')!.payload).toMatchObject({ path: '/gone.md', side: 'local', hostPath: `${DIR}/gone.md` });
    expect(seen.find((s) => s.event === 'pulled')!.payload).toMatchObject({ path: '/b.md', hostPath: `${DIR}/b.md`, reason: 'remote_change' });
    expect(seen.find((s) => s.event === 'pushed')!.payload).toMatchObject({ path: '/c.md', memoryStoreId: STORE });
    expect(seen.find((s) => s.event === 'refused')!.payload).toMatchObject({ path: '/bad.md' });
    expect(names).not.toContain('progress'); // a reconcile pass reports no progress
    await mounter.finalize();
  });

  it('progress counts materialize downloads and finalize actions', async () => {
    const client = new InMemoryStoreClient();
    client.seed(STORE, { '/1.md': '1', '/2.md': '2', '/3.md': '3' });
    const fs = new MemfsFileSystem({ '/mnt/memory': null });
    const mounter = new MemoryMounter({ storeClient: client, fileSystem: fs, logger: new RecordingLogger(), now: () => 0, newFileSettle: 0 });
    const progress: MounterEvents['progress'][0][] = [];
    mounter.on('progress', (p) => void progress.push(p));
    await mounter.materialize([resource]);
    expect(progress.filter((p) => p.phase === 'materialize').at(-1)).toEqual({ phase: 'materialize', memoryStoreId: STORE, done: 3, total: 3 });
    fs.vol.writeFileSync(`${DIR}/4.md`, '4');
    await mounter.finalize();
    expect(progress.filter((p) => p.phase === 'finalize').at(-1)).toMatchObject({ done: 1, total: 1 });
  });

  it('a throwing listener never breaks a pass; the others still run', async () => {
    const { client, fs, mounter, logger } = await mounted({ '/a.md': 'a' });
    let after = 0;
    mounter.on('pushed', () => {
      throw new Error('listener bug');
    });
    mounter.on('pushed', () => void after++);
    fs.vol.writeFileSync(`${DIR}/a.md`, 'edited');
    const report = await mounter.reconcile({ force: true });
    expect(report!.stores[0]!.pushed).toEqual(['/a.md']);
    expect(report!.stores[0]!.errors).toEqual([]);
    expect(after).toBe(1);
    expect(client.snapshot(STORE)['/a.md']).toBe('edited');
    expect(logger.lines.some((l) => l.msg.includes('event listener threw'))).toBe(true);
    await mounter.finalize();
  });
});

describe('conflict copy names', () => {
  it('are <name>.conflict-<timestamp>.<ext> and recognised as never synced', () => {
    const path = conflictCopyPath('/a/notes.md', Date.UTC(2025, 0, 2, 3, 4, 5, 678));
    expect(path).toBe('/a/notes.conflict-20250102T030405678Z.md');
    expect(isConflictCopyName('notes.conflict-20250102T030405678Z.md')).toBe(true);
    expect(conflictCopyPath('/Makefile', 0)).toBe('/Makefile.conflict-19700101T000000000Z');
    expect(isConflictCopyName('Makefile.conflict-19700101T000000000Z')).toBe(true);
    expect(isConflictCopyName('notes.conflict.md')).toBe(false);
  });
});
