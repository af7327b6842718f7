import * as nodeFs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { StoreError, type DirEntry, type FileSystem, type FinalizeReport, type StoreClient } from '@memory-mounter/core';
import { AgentEdit, AgentLinkOutside, AgentWrite, Crash, Finalize, Reconcile, Recover, RemoteWrite, SkipInListing } from './commands.js';
import { runCase } from './run-case.js';
import { sha256 } from './tree.js';
import { Case, CANARY_TEXT, type Scenario } from './world.js';

/**
 * The oracle has teeth: each test plants one defect between the engine and the world, or hands
 * the oracle one bad request, and expects the invariant that covers it to fire. A checker that
 * never fails proves nothing.
 */
const scenario: Scenario = {
  disk: 'node',
  deletionMode: 'enabled',
  graceSeconds: 0,
  syncIntervalSeconds: 15,
  finalSyncTimeoutSeconds: 30,
  seedRw: ['/a.md', '/b.md'],
  seedRo: ['/a.md'],
  bulk: false,
};

/** A store client that acknowledges every update without applying it. */
const swallowUpdates = (client: StoreClient): StoreClient => ({
  list: (...args) => client.list(...args),
  get: (...args) => client.get(...args),
  create: (...args) => client.create(...args),
  delete: (...args) => client.delete(...args),
  update: async (_storeId, memoryId, input) => ({ id: memoryId, path: '?', content_sha256: sha256(input.content ?? '') }),
});

describe('the oracle catches a planted defect', () => {
  it('I2: a store client that acknowledges updates without applying them loses the write', async () => {
    await expect(runCase(scenario, [new AgentEdit('rw', '/a.md'), new Reconcile(true)], { client: swallowUpdates })).rejects.toThrow(
      /I2: the agent's write to \/a\.md in memstore_rw is lost/,
    );
  });

  it("I2: a false conflict: the engine's own earlier push taken for a remote edit overwrites the agent's later write", async () => {
    // A store client that applies an update and then answers precondition_failed, at the first
    // try: nothing tells the engine the store holds its own write (the engine defends only a
    // repeat after an attempt of unknown outcome, SPEC 6.6), so it settles the push as lost.
    const lyingUpdates = (client: StoreClient): StoreClient => ({
      list: (...args) => client.list(...args),
      get: (...args) => client.get(...args),
      create: (...args) => client.create(...args),
      delete: (...args) => client.delete(...args),
      update: async (storeId, memoryId, input, opts) => {
        await client.update(storeId, memoryId, input, opts);
        throw new StoreError('precondition_failed', 'content_sha256 does not match');
      },
    });
    await expect(
      runCase(scenario, [new AgentEdit('rw', '/a.md'), new Reconcile(true), new AgentEdit('rw', '/a.md'), new Reconcile(true)], {
        client: lyingUpdates,
      }),
    ).rejects.toThrow(/I2: a conflict at \/a\.md in memstore_rw, where no other writer wrote since the engine's last sync of it/);
  });

  it('I10: a client whose listings always leave one memory out gets its file deleted locally, uncorroborated', async () => {
    // Every listing (so a second one too) hides /b.md, and a get of it answers not_found (the
    // engine asks before it deletes on one listing's word); no other writer ever removed it.
    const hideB = (client: StoreClient): StoreClient => ({
      list: async function* (...args) {
        for await (const memory of client.list(...args)) if (memory.path !== '/b.md') yield memory;
      },
      get: async (...args) => {
        const memory = await client.get(...args);
        if (memory.path === '/b.md') throw new StoreError('not_found', 'planted: /b.md denied', { status: 404 });
        return memory;
      },
      create: (...args) => client.create(...args),
      delete: (...args) => client.delete(...args),
      update: (...args) => client.update(...args),
    });
    // The agent's /b.md is pushed by the first pass; from then on the store holds it unseen.
    await expect(runCase({ ...scenario, seedRw: ['/a.md'] }, [new AgentWrite('rw', '/b.md'), new Reconcile(true), new Reconcile(true)], { client: hideB })).rejects.toThrow(
      /I10: \/b\.md in memstore_rw was deleted locally/,
    );
  });

  it('I2: with conflictCopies, a filesystem that acknowledges the copy without writing it loses the conflict\'s loser', async () => {
    const dropCopies = (fs: FileSystem): FileSystem =>
      new Proxy(fs, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver) as unknown;
          if (key === 'writeFile' || key === 'writeFileExclusive') {
            return async (path: string, ...rest: unknown[]) => {
              if (/\.conflict-\d{8}T\d{9}Z/.test(path)) return;
              return (value as (...a: unknown[]) => Promise<void>).call(target, path, ...rest);
            };
          }
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    await expect(
      runCase({ ...scenario, conflictCopies: true }, [new AgentEdit('rw', '/a.md'), new RemoteWrite('rw', '/a.md'), new Reconcile(true)], { fileSystem: dropCopies }),
    ).rejects.toThrow(/I2: the conflict at \/a\.md in memstore_rw replaced the agent's write, and no conflict copy holds it/);
  });

  it('I2: finalize names an unpushed path in its report but not in its warning', async () => {
    const c = await Case.open(scenario);
    try {
      c.oracle.beginPass('finalize_completed', c.trees());
      const empty = { startedAt: new Date(0).toISOString(), finishedAt: new Date(0).toISOString(), forced: true, stores: [] };
      const report: FinalizeReport = {
        outcome: 'completed',
        sync: empty,
        flush: empty,
        timedOut: { sync: false, flush: false },
        unpushed: [{ memoryStoreId: 'memstore_rw', path: '/a.md', code: 'push_failed', reason: 'push failed (unavailable)' }],
        removed: [],
        leftInPlace: [],
      };
      c.oracle.endFinalize(report, c.trees(), [{ memory_store_id: 'memstore_rw', paths: [] }]);
      expect(c.oracle.violations.join('\n')).toMatch(/I2: finalize's warning does not name \/a\.md of memstore_rw/);
    } finally {
      await c.close();
    }
  });

  it('T1: a finalize slower than finalSyncTimeout + 2 s', { timeout: 20_000 }, async () => {
    // The first removal finalize makes takes 2.5 s: past the 0.02 s + 2 s bound, though no
    // store call is slow.
    let slowed = false;
    const slowRemoval = (fs: FileSystem): FileSystem => ({
      ...bound(fs),
      rm: async (p, o) => {
        if (!slowed) {
          slowed = true;
          await new Promise((resolve) => setTimeout(resolve, 2_500));
        }
        return fs.rm(p, o);
      },
    });
    await expect(runCase({ ...scenario, finalSyncTimeoutSeconds: 0.02 }, [new Finalize('completed')], { fileSystem: slowRemoval })).rejects.toThrow(
      /T1: finalize took \d+ ms; its bound is 2020 ms/,
    );
  });

  it('I9: a store client that renames a memory the agent never moved is caught', async () => {
    const inventRenames = (client: StoreClient): StoreClient => ({
      list: (...args) => client.list(...args),
      get: (...args) => client.get(...args),
      create: (...args) => client.create(...args),
      delete: (...args) => client.delete(...args),
      update: (storeId, memoryId, input, opts) => client.update(storeId, memoryId, { path: '/invented.md', expected_content_sha256: input.expected_content_sha256 }, opts),
    });
    await expect(runCase(scenario, [new AgentEdit('rw', '/a.md'), new Reconcile(true)], { client: inventRenames })).rejects.toThrow(
      /I9: rename of \/a\.md to \/invented\.md in memstore_rw: the folder never held the memory's content at the new path/,
    );
  });

  it('R2: a recovery whose creates are acknowledged but never applied removes the folder with the write', async () => {
    const swallowCreates = (client: StoreClient): StoreClient => ({
      list: (...args) => client.list(...args),
      get: (...args) => client.get(...args),
      update: (...args) => client.update(...args),
      delete: (...args) => client.delete(...args),
      create: async (_storeId, input) => ({ id: 'mem_swallowed', path: input.path, content_sha256: sha256(input.content) }),
    });
    await expect(runCase(scenario, [new AgentWrite('rw', '/g/h.md'), new Crash(), new Recover()], { client: swallowCreates })).rejects.toThrow(
      /R2: recover, .*\/rw: removed with the agent's write to \/g\/h\.md neither in the store nor named by the report/,
    );
  });

  it("R2: a write the store never held is lost though the other writer wrote that path during the recover's listing", async () => {
    // The other writer's act inside a step settles only what the store held just before it: an
    // update acknowledged but never applied was never there, so its overwrite excuses nothing.
    await expect(
      runCase(scenario, [new AgentEdit('rw', '/a.md'), new Crash(), new SkipInListing('rw', 1, '/a.md'), new Recover()], { client: swallowUpdates }),
    ).rejects.toThrow(/R2: recover, .*\/rw: removed with the agent's write to \/a\.md neither in the store nor named by the report/);
  });

  it('I3: a filesystem that follows a symlink uploads the host secret', async () => {
    const followLinks = (fs: FileSystem): FileSystem => ({
      ...bound(fs),
      readdir: async (path) => (await fs.readdir(path)).map((e): DirEntry => (e.type === 'symlink' ? { ...e, type: 'file' } : e)),
      openFile: async (path) => {
        const bytes = new Uint8Array(nodeFs.readFileSync(path));
        const { mtimeMs, ctimeMs, dev, ino } = nodeFs.statSync(path);
        const stat = { type: 'file' as const, size: bytes.byteLength, mtimeMs, ctimeMs, dev, ino, nlink: 1 };
        return { stat, read: async (max: number) => bytes.subarray(0, max), close: async () => {} };
      },
    });
    await expect(
      runCase(scenario, [new AgentLinkOutside('rw', '/a2.md', 'file'), new Reconcile(true)], { fileSystem: followLinks }),
    ).rejects.toThrow(/I3: create of \/a2\.md carries the canary text/);
  });

  it('I1: a delete sent while the file is still on disk and never went missing', async () => {
    const c = await Case.open(scenario);
    try {
      const memory = c.fake.memories('memstore_rw').find((m) => m.path === '/a.md')!;
      c.oracle.checkRequest({
        op: 'delete',
        storeId: 'memstore_rw',
        memoryId: memory.id,
        path: '/a.md',
        expectedSha: memory.content_sha256,
        previousContent: memory.content!,
      });
      const found = c.oracle.violations.join('\n');
      expect(found).toMatch(/I1: delete of \/a\.md in memstore_rw while a file is at/);
      expect(found).toMatch(/never went missing/);
    } finally {
      await c.close();
    }
  });

  it('I5: a write sent to a read-only store', async () => {
    const c = await Case.open(scenario);
    try {
      c.oracle.checkRequest({ op: 'create', storeId: 'memstore_ro', path: '/new.md', content: 'x' });
      expect(c.oracle.violations.join('\n')).toMatch(/I5: create of \/new\.md sent to the read-only store memstore_ro/);
    } finally {
      await c.close();
    }
  });

  it('I3: any change to the canary folder fails the next step', async () => {
    const c = await Case.open(scenario);
    try {
      c.disk.writeFile(`${c.disk.base}/outside/canary.txt`, `${CANARY_TEXT} overwritten`);
      await expect(c.step('noop', () => {})).rejects.toThrow(/I3: the canary folder changed: ~\/canary\.txt/);
    } finally {
      await c.close();
    }
  });

  it("I7: a change feed that never shows the other writer's versions leaves the folder behind the store", async () => {
    // Outside what a feed may do (feed-faults.ts): the engine's only defence is its periodic full
    // listing, which fullListingEvery 100 and a 600 s interval keep out of the case.
    const blindFeed = (client: StoreClient): StoreClient => ({
      list: (...args) => client.list(...args),
      get: (...args) => client.get(...args),
      create: (...args) => client.create(...args),
      update: (...args) => client.update(...args),
      delete: (...args) => client.delete(...args),
      listVersions: async function* () {},
    });
    const feed: Scenario['feed'] = { versions: true, folders: false, clock: 'exact', fullListingEvery: 100, fullListingInterval: 600 };
    await expect(runCase({ ...scenario, feed }, [new RemoteWrite('rw', '/a.md'), new Reconcile(true)], { client: blindFeed })).rejects.toThrow(
      /I7: not converged in memstore_rw: \/a\.md/,
    );
  });

  it('F2: a feed read where the cadence calls for a full listing', async () => {
    // The mounter runs with fullListingEvery 100; the oracle is then told 2, as if the engine
    // ignored its option: the second pass in a row that reads the feed alone must fire F2.
    const feed: Scenario['feed'] = { versions: true, folders: false, clock: 'exact', fullListingEvery: 100, fullListingInterval: 600 };
    const c = await Case.open({ ...scenario, feed });
    try {
      (c.scenario as { feed: NonNullable<Scenario['feed']> }).feed = { ...feed, fullListingEvery: 2 };
      await c.reconcile(true);
      await expect(c.reconcile(true)).rejects.toThrow(/F2: 2 passes over memstore_rw read the feed alone; fullListingEvery is 2/);
    } finally {
      await c.close();
    }
  });
});

/** Every method of `fs`, bound, to spread into a sabotaged copy. */
function bound(fs: FileSystem): FileSystem {
  return {
    lstat: (p) => fs.lstat(p),
    readdir: (p) => fs.readdir(p),
    readFile: (p) => fs.readFile(p),
    writeFile: (p, d, o) => fs.writeFile(p, d, o),
    mkdir: (p, o) => fs.mkdir(p, o),
    rm: (p, o) => fs.rm(p, o),
    rename: (a, b) => fs.rename(a, b),
    openDir: (p) => fs.openDir(p),
    openFile: (p) => fs.openFile(p),
  };
}
