import { describe, expect, it } from 'vitest';
import { runSessionWithMemory } from '@memory-mounter/anthropic';
import { MemoryMounter, type FinalizeReport } from '@memory-mounter/core';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';

async function mounted() {
  const fs = new MemfsFileSystem({ '/mnt/memory': null });
  const client = new InMemoryStoreClient();
  client.seed('memstore_1', { '/a.md': 'a' });
  const mounter = new MemoryMounter({ storeClient: client, fileSystem: fs });
  await mounter.materialize([{ type: 'memory_store', memory_store_id: 'memstore_1', name: 'notes' }]);
  return { fs, client, mounter };
}

describe('runSessionWithMemory', () => {
  it('a clean end finalizes completed and returns the body result', async () => {
    const { fs, client, mounter } = await mounted();
    let report: FinalizeReport | undefined;
    const result = await runSessionWithMemory(
      mounter,
      async () => {
        await fs.writeFile('/mnt/memory/notes/b.md', new TextEncoder().encode('b'));
        return 42;
      },
      { onFinalize: (r) => (report = r) },
    );
    expect(result).toBe(42);
    expect(report?.outcome).toBe('completed');
    expect(client.snapshot('memstore_1')['/b.md']).toBe('b');
    expect(await fs.lstat('/mnt/memory/notes')).toBeNull();
  });

  it('an error finalizes aborted (push-only) and rethrows the body error', async () => {
    const { fs, client, mounter } = await mounted();
    let report: FinalizeReport | undefined;
    const failure = runSessionWithMemory(
      mounter,
      async () => {
        await fs.writeFile('/mnt/memory/notes/a.md', new TextEncoder().encode('edited'));
        client.writeMemory('memstore_1', '/z.md', 'remote');
        throw new Error('agent crashed');
      },
      { onFinalize: (r) => (report = r) },
    );
    await expect(failure).rejects.toThrow('agent crashed');
    expect(report?.outcome).toBe('aborted');
    expect(report?.sync).toBeNull();
    expect(client.snapshot('memstore_1')['/a.md']).toBe('edited');
    expect(report?.removed).toEqual(['/mnt/memory/notes']);
  });

  it('an aborted signal finalizes aborted even when the body returns', async () => {
    const { mounter } = await mounted();
    const controller = new AbortController();
    let report: FinalizeReport | undefined;
    await runSessionWithMemory(mounter, async () => controller.abort(), { signal: controller.signal, onFinalize: (r) => (report = r) });
    expect(report?.outcome).toBe('aborted');
  });

  it('a fields-first logger (pino marks its loggers with a global symbol) gets (fields, msg)', async () => {
    const { mounter } = await mounted();
    const calls: unknown[][] = [];
    const record = (...args: unknown[]) => void calls.push(args);
    // What pino puts on every instance; the core's tests use the real pino package.
    const pinoLike = { [Symbol.for('pino.serializers')]: {}, debug: record, info: record, warn: record, error: record };
    await runSessionWithMemory(mounter, async () => undefined, { logger: pinoLike });
    const finalized = calls.find(([, msg]) => msg === 'memory finalized');
    expect(finalized).toBeDefined();
    expect(finalized![0]).toMatchObject({ outcome: 'completed' });
  });

  it('a null mounter just runs the body', async () => {
    await expect(runSessionWithMemory(null, async () => 'ran')).resolves.toBe('ran');
  });
});
