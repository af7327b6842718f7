import Anthropic from '@anthropic-ai/sdk';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { AnthropicStoreClient, withMemorySync } from '@memory-mounter/anthropic';
import { MemoryMounter, type MemoryMounterOptions } from '@memory-mounter/core';
import { MemfsFileSystem, MemoryApiServer } from '@memory-mounter/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * SPEC 6.2 through the real SDK, against the loopback emulator: a store that stops answering,
 * and one that answers 503 for a while, seen by the mounter as the worker would see them.
 */

const ROOT = '/mnt/memory';
const STORE = 'memstore_notes';
const DIR = `${ROOT}/notes`;
const encoder = new TextEncoder();

let server: MemoryApiServer;
let fs: MemfsFileSystem;
let clock: number;

beforeEach(async () => {
  server = new MemoryApiServer({ retryAfterSeconds: 0.01 });
  await server.start();
  fs = new MemfsFileSystem({ [ROOT]: null });
  clock = 1_000_000;
});
afterEach(async () => {
  await server.close();
});

async function mounted(options: Partial<MemoryMounterOptions>): Promise<MemoryMounter> {
  server.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta' });
  // The SDK's own retries off: the mounter's are the ones under test.
  const client = new Anthropic({ apiKey: 'test', baseURL: server.baseURL, maxRetries: 0 });
  const mounter = new MemoryMounter({
    storeClient: new AnthropicStoreClient({ client }),
    fileSystem: fs,
    memoryRoot: ROOT,
    now: () => clock,
    newFileSettle: 0, // a test writes, then syncs: nothing is mid-write
    ...options,
  });
  await mounter.materialize([{ type: 'memory_store', memory_store_id: STORE, name: 'notes' }]);
  return mounter;
}

async function changeLocally(): Promise<void> {
  await fs.writeFile(`${DIR}/a.md`, encoder.encode('alpha, edited'));
  await fs.writeFile(`${DIR}/n.md`, encoder.encode('new here'));
  await fs.rm(`${DIR}/b.md`);
}

const noopTool = {
  name: 'read',
  description: 'does nothing',
  input_schema: { type: 'object', properties: {} },
  parse: (x: unknown) => x,
  run: async () => 'ok',
} as unknown as BetaRunnableTool;

async function timed<T>(work: Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await work;
  return { result, ms: Date.now() - started };
}

describe('a store that accepts requests and never answers them', () => {
  it('a wrapped tool call waits at most syncTimeout + 1.5 s; finalize ends within finalSyncTimeout + 2 s and names the unpushed paths', async () => {
    const mounter = await mounted({ requestTimeout: 0.2, syncTimeout: 0.5, finalSyncTimeout: 0.5 });
    await changeLocally();
    server.failNext('list', 'hang', 1_000);
    server.failNext('list_versions', 'hang', 1_000);
    const [tool] = withMemorySync([noopTool], mounter, { realPath: false });
    clock += 60_000; // past memory_sync_interval: the tool call syncs
    const reads = () => server.requestCount('list') + server.requestCount('list_versions');
    const before = reads();
    const { result, ms } = await timed(Promise.resolve(tool!.run({}, undefined as never)));
    expect(result).toBe('ok');
    expect(ms).toBeLessThan(500 + 1_500);
    // The stalled feed read was abandoned for a listing within the pass.
    expect(reads() - before).toBeGreaterThanOrEqual(2);

    const { result: report, ms: finalizeMs } = await timed(mounter.finalize());
    expect(finalizeMs).toBeLessThan(500 + 2_000);
    expect(report.timedOut).toEqual({ sync: true, flush: true });
    expect(report.unpushed.map((u) => u.path)).toEqual(['/a.md', '/b.md', '/n.md']);
    for (const u of report.unpushed) expect(u.reason).toMatch(/time bound/);
    expect(report.removed).toEqual([DIR]);
    expect(server.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/b.md': 'beta' });
  });
});

describe('a store answering 503', () => {
  it('a burst shorter than the window is retried: nothing lost', async () => {
    const mounter = await mounted({ syncTimeout: 10, deleteGracePeriod: 0 });
    await changeLocally();
    server.failNext('list', 503, 2);
    server.failNext('update', 503, 2);
    server.failNext('delete', 503, 2);
    const report = (await mounter.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ status: 'synced', errors: [], deletedRemote: ['/b.md'] });
    expect(report.pushed.sort()).toEqual(['/a.md', '/n.md']);
    expect(server.snapshot(STORE)).toEqual({ '/a.md': 'alpha, edited', '/n.md': 'new here' });
    expect(server.requestCounts()).toMatchObject({ update: 3, delete: 3, create: 1 });
    const final = await mounter.finalize();
    expect(final.unpushed).toEqual([]);
  });

  it('a longer outage: finalize ends within finalSyncTimeout + 2 s and names every path not pushed', async () => {
    const mounter = await mounted({ finalSyncTimeout: 0.5 });
    await changeLocally();
    for (const route of ['list', 'retrieve', 'create', 'update', 'delete'] as const) server.failNext(route, 503, 10_000);
    const { result: report, ms } = await timed(mounter.finalize());
    expect(ms).toBeLessThan(500 + 2_000);
    expect(report.unpushed).toEqual([
      { memoryStoreId: STORE, path: '/a.md', code: 'time_bound', reason: expect.stringMatching(/^edited locally; not pushed: cut off by the time bound/), memoryId: expect.stringMatching(/^mem_/) },
      { memoryStoreId: STORE, path: '/b.md', code: 'time_bound', reason: expect.stringMatching(/^deleted locally; not pushed/), memoryId: expect.stringMatching(/^mem_/) },
      // A new file has no memory yet.
      { memoryStoreId: STORE, path: '/n.md', code: 'time_bound', reason: expect.stringMatching(/^new local file; not pushed/) },
    ]);
    // Retried until the deadline, not given up on at the first 503.
    expect(server.requestCount('list')).toBeGreaterThan(1 + 2);
  });
});
