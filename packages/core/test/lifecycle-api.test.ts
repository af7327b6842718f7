import { describe, expect, it } from 'vitest';
import { MemoryLifecycleError, MemoryMountError, MemoryMounter, type StoreClient } from '@memory-mounter/core';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { RecordingLogger } from './harness.js';

/** Symbol.asyncDispose, AbortSignals on the three lifecycle calls, and status(). */

const STORE = 'memstore_notes';
const DIR = '/mnt/memory/notes';
const resource = { type: 'memory_store', memory_store_id: STORE, name: 'Notes' };

function setup(client: StoreClient = seeded(), clock = { t: 0 }) {
  const fs = new MemfsFileSystem({ '/mnt/memory': null });
  const mounter = new MemoryMounter({ storeClient: client, fileSystem: fs, logger: new RecordingLogger(), now: () => clock.t, newFileSettle: 0, deleteGracePeriod: 60 });
  return { fs, mounter, clock };
}

function seeded(): InMemoryStoreClient {
  const client = new InMemoryStoreClient();
  client.seed(STORE, { '/a.md': 'a', '/b.md': 'b' });
  return client;
}

/** A client whose calls hang until their signal aborts. */
function hanging(inner: InMemoryStoreClient, hang: { on: boolean }): StoreClient {
  const wait = <T>(signal: AbortSignal | undefined, go: () => Promise<T>): Promise<T> =>
    hang.on
      ? new Promise<T>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }))
      : go();
  return {
    list: (id, opts) => {
      if (!hang.on) return inner.list(id, opts);
      return (async function* () {
        yield await wait(opts?.signal, async () => undefined as never);
      })();
    },
    get: (id, m, o) => wait(o?.signal, () => inner.get(id, m, o)),
    create: (id, i, o) => wait(o?.signal, () => inner.create(id, i, o)),
    update: (id, m, i, o) => wait(o?.signal, () => inner.update(id, m, i, o)),
    delete: (id, m, o) => wait(o?.signal, () => inner.delete(id, m, o)),
  };
}

describe('Symbol.asyncDispose', () => {
  it('`await using` finalizes a mounter not yet finalized, aborted: pushed, then removed', async () => {
    const client = seeded();
    const { fs, mounter } = setup(client);
    {
      await using m = mounter;
      await m.materialize([resource]);
      fs.vol.writeFileSync(`${DIR}/a.md`, 'edited');
    }
    expect(fs.vol.existsSync(DIR)).toBe(false);
    expect(client.snapshot(STORE)['/a.md']).toBe('edited');
    await expect(mounter.reconcile()).rejects.toBeInstanceOf(MemoryLifecycleError);
  });

  it('leaves a finalized mounter as it is', async () => {
    const { mounter } = setup();
    await mounter.materialize([resource]);
    await mounter.finalize();
    await expect(mounter[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });
});

describe('signal', () => {
  it('materialize: an aborted signal ends the download promptly, all or nothing', async () => {
    const hang = { on: true };
    const { fs, mounter } = setup(hanging(seeded(), hang));
    const controller = new AbortController();
    const run = mounter.materialize([resource], { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('host shutting down')), 20);
    const started = Date.now();
    await expect(run).rejects.toBeInstanceOf(MemoryMountError);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(fs.vol.existsSync(DIR)).toBe(false);
  });

  it('reconcile: an aborted signal cuts the pass it started off; an already aborted one rejects at once', async () => {
    const hang = { on: false };
    const { mounter } = setup(hanging(seeded(), hang));
    await mounter.materialize([resource]);
    hang.on = true;
    const controller = new AbortController();
    const run = mounter.reconcile({ force: true, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    const report = await run;
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(report!.stores[0]!.status).not.toBe('synced');
    await expect(mounter.reconcile({ force: true, signal: AbortSignal.abort() })).rejects.toBeDefined();
    hang.on = false;
    await mounter.finalize();
  });

  it('finalize: an aborted signal cuts to a fast teardown; the folders still go', async () => {
    const hang = { on: false };
    const { fs, mounter } = setup(hanging(seeded(), hang));
    await mounter.materialize([resource]);
    fs.vol.writeFileSync(`${DIR}/a.md`, 'edited');
    hang.on = true;
    const controller = new AbortController();
    const run = mounter.finalize({ signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    const report = await run;
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(report.timedOut.sync).toBe(true);
    expect(report.unpushed.map((u) => u.path)).toEqual(['/a.md']);
    expect(fs.vol.existsSync(DIR)).toBe(false);
  });
});

describe('status()', () => {
  it('per store: last pass, next pass due, pending local changes and deletions, distrust', async () => {
    const client = seeded();
    const { fs, mounter, clock } = setup(client, { t: 1_000 });
    expect(mounter.status()).toEqual([]);
    await mounter.materialize([resource]);
    let [s] = mounter.status();
    expect(s).toMatchObject({ memoryStoreId: STORE, path: DIR, lastPassAt: new Date(1_000).toISOString(), lastOutcome: 'downloaded', nextPassDueAt: new Date(16_000).toISOString(), pendingLocalChanges: 0, pendingDeletions: [], distrusted: null });

    // A pass that pushes what it sees: nothing pending after it.
    fs.vol.writeFileSync(`${DIR}/c.md`, 'c');
    fs.vol.rmSync(`${DIR}/b.md`);
    clock.t = 20_000;
    await mounter.reconcile();
    [s] = mounter.status();
    expect(s).toMatchObject({ lastPassAt: new Date(20_000).toISOString(), lastOutcome: 'synced', nextPassDueAt: new Date(35_000).toISOString(), pendingLocalChanges: 0, pendingDeletions: ['/b.md'] });

    // A push that fails leaves the change pending.
    fs.vol.writeFileSync(`${DIR}/a.md`, 'edited');
    client.failNext('update', 'rejected');
    await mounter.reconcile({ force: true });
    [s] = mounter.status();
    expect(s!.pendingLocalChanges).toBe(0); // refused for good is not pending

    fs.vol.writeFileSync(`${DIR}/a.md`, 'edited again');
    client.failNext('update', 'precondition_failed');
    await mounter.reconcile({ force: true });
    expect(mounter.status()[0]!.pendingLocalChanges).toBe(1);

    // The marker naming another store with files present: distrusted.
    fs.vol.writeFileSync(`${DIR}/.anthropic-memory-store`, 'memstore_other\n');
    await mounter.reconcile({ force: true });
    expect(mounter.status()[0]!.distrusted).toEqual(expect.any(String));
    expect(mounter.status()[0]).toMatchObject({ lastOutcome: 'skipped', lastCode: 'distrusted' });
    await mounter.finalize({ outcome: 'aborted' });
    expect(mounter.status()).toEqual([]);
  });
});
