/**
 * Unit-testing your own tool, and your memory lifecycle, with no disk and no network.
 *
 * MemoryMounter has two sides, and @memory-mounter/testing has a double for each:
 *   - `MemfsFileSystem`: the mount folders live in memory (memfs), with the real disk's rules
 *     (atomic writes, symlinks never followed); wrapped in `FaultyFileSystem`, whose `failNext`
 *     makes a call fail like a disk;
 *   - `InMemoryStoreClient`: the memory-store API in memory: `seed` it, read it back with
 *     `snapshot`, count what was sent with `count`/`requests`, and `failNext` to make the
 *     service fail.
 * A clock you move by hand (`now`) decides when `memory_sync_interval` has passed, so a test
 * never sleeps.
 *
 * The tool under test is `append_journal` (src/journal-tool.ts): a custom tool a worker author
 * wrote, wrapped with `withMemorySync` so it keeps the journal store in sync.
 */
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { beforeEach, describe, expect, it } from 'vitest';
import { runSessionWithMemory } from '@memory-mounter/anthropic';
import { MemoryMounter, StoreError, type Access, type FinalizeReport, type MemoryMounterOptions } from '@memory-mounter/core';
import { FaultyFileSystem, InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { journalToolFor } from '../src/journal-tool.js';

const STORE_ID = 'memstore_journal';
const FOLDER = '/mnt/memory/journal'; // the store's name is "Journal": /mnt/memory/<slug>
const FILE = `${FOLDER}/journal.md`;
const SEED = '# Journal\n';
const START = Date.UTC(2026, 0, 5); // the session starts on 5 January 2026
const SECONDS = 1000;

describe('the journal tool, with its memory', () => {
  let fs: FaultyFileSystem;
  let store: InMemoryStoreClient;
  let now: number;
  let mounter: MemoryMounter;
  let tool: BetaRunnableTool;

  /** Mounts the journal store the way a worker does before the agent's first tool call. */
  async function startSession(access: Access = 'read_write', options: Partial<MemoryMounterOptions> = {}) {
    now = START;
    // The operator's /mnt/memory, empty. `null` makes a directory.
    // memfs, wrapped so a test can make a chosen call fail (a full disk, say).
    fs = new FaultyFileSystem(new MemfsFileSystem({ '/mnt/memory': null }));
    // The store as the session finds it. The client stamps each request with the same clock.
    store = new InMemoryStoreClient({ now: () => now });
    store.seed(STORE_ID, { '/journal.md': SEED });

    mounter = new MemoryMounter({ storeClient: store, fileSystem: fs, now: () => now, memory_sync_interval: 15, ...options });
    const [journal] = await mounter.materialize([
      { type: 'memory_store', memory_store_id: STORE_ID, name: 'Journal', access },
    ]);
    tool = journalToolFor(mounter, journal!, { fileSystem: fs, now: () => now });
  }

  const onDisk = async () => new TextDecoder().decode(await fs.readFile(FILE));
  const inStore = () => store.snapshot(STORE_ID)['/journal.md'];

  beforeEach(() => startSession());

  it('materialize downloads the seeded store into the in-memory folder', async () => {
    expect(await onDisk()).toBe(SEED);
    expect(mounter.mounts).toMatchObject([{ memoryStoreId: STORE_ID, path: FOLDER, mountPath: FOLDER }]);
  });

  it('a call appends at once; the store gets it with the first call after the interval', async () => {
    await expect(tool.run({ entry: 'Kick-off' })).resolves.toBe('added to journal.md');
    expect(await onDisk()).toBe(`${SEED}- 2026-01-05 Kick-off\n`);
    // 0 s since the download: the sync after the call was skipped, the store has not moved.
    expect(inStore()).toBe(SEED);

    now += 15 * SECONDS;
    await tool.run({ entry: 'Wrote the plan' });

    expect(inStore()).toBe(`${SEED}- 2026-01-05 Kick-off\n- 2026-01-05 Wrote the plan\n`);
    // One update, sent exactly when the interval ran out.
    expect(store.requests.filter((r) => r.op === 'update')).toMatchObject([{ storeId: STORE_ID, at: START + 15 * SECONDS }]);
  });

  it('a 503 on a push is retried inside the same sync', async () => {
    // The service answers the next update with a 503. It changes nothing.
    store.failNext('update', 'unavailable');

    now += 15 * SECONDS;
    await expect(tool.run({ entry: 'During a blip' })).resolves.toBe('added to journal.md');
    // The update carries the content's expected sha, so sending it again is safe: it was.
    expect(store.count('update')).toBe(2);
    expect(inStore()).toBe(`${SEED}- 2026-01-05 During a blip\n`);
  });

  it('an outage longer than syncTimeout never fails the call; the next due sync delivers it', async () => {
    // Retries stop at syncTimeout, so the tool call is never held longer (plus about 1 s).
    await startSession('read_write', { syncTimeout: 0.3 });
    let down = true;
    const update = store.update.bind(store);
    store.update = (...args) => (down ? Promise.reject(new StoreError('unavailable', 'HTTP 503')) : update(...args));

    now += 15 * SECONDS;
    await expect(tool.run({ entry: 'During the outage' })).resolves.toBe('added to journal.md');
    expect(inStore()).toBe(SEED); // the push did not land

    down = false;
    now += 15 * SECONDS;
    await tool.run({ entry: 'After it' });

    expect(inStore()).toBe(`${SEED}- 2026-01-05 During the outage\n- 2026-01-05 After it\n`);
  });

  it('a full disk fails the call with an error result the agent can read; memory is unharmed', async () => {
    fs.failNext('writeFile', 'ENOSPC');

    const call = tool.run({ entry: 'Lost to the disk' });

    await expect(call).rejects.toBeInstanceOf(ToolError);
    await expect(call).rejects.toThrow(/append_journal: .*ENOSPC/);
    expect(await onDisk()).toBe(SEED);
  });

  it('a read-only store refuses the call before the tool runs', async () => {
    await startSession('read_only');

    const call = tool.run({ entry: 'Not allowed' });

    await expect(call).rejects.toBeInstanceOf(ToolError);
    await expect(call).rejects.toThrow(/append_journal: refused: .*read-only/);
    expect(await onDisk()).toBe(SEED);
    expect(store.count('update') + store.count('create')).toBe(0);
  });

  it('finalize pushes what the interval held back, then removes the folder', async () => {
    await tool.run({ entry: 'Last words' }); // within the interval: not pushed yet

    const report = await mounter.finalize();

    expect(report).toMatchObject({
      outcome: 'completed',
      timedOut: { sync: false, flush: false },
      removed: [FOLDER],
      leftInPlace: [],
    });
    expect(report.sync?.stores).toMatchObject([{ memoryStoreId: STORE_ID, status: 'synced', pushed: ['/journal.md'], errors: [] }]);
    expect(inStore()).toBe(`${SEED}- 2026-01-05 Last words\n`);
    expect(await fs.lstat(FOLDER)).toBeNull();
  });

  it('runSessionWithMemory: a session that throws is still finalized (aborted), and keeps its entries', async () => {
    let report: FinalizeReport | undefined;

    const session = runSessionWithMemory(
      mounter,
      async () => {
        await tool.run({ entry: 'Before the crash' });
        throw new Error('the agent crashed');
      },
      { onFinalize: (r) => (report = r) },
    );

    await expect(session).rejects.toThrow('the agent crashed'); // the body's error, unchanged
    // `aborted`: no final full sync, only a push-only flush of what changed.
    expect(report).toMatchObject({ outcome: 'aborted', sync: null, removed: [FOLDER] });
    expect(report!.flush.stores).toMatchObject([{ pushed: ['/journal.md'] }]);
    expect(inStore()).toBe(`${SEED}- 2026-01-05 Before the crash\n`);
  });
});
