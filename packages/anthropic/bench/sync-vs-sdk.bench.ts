/**
 * memory-mounter against the SDK's built-in memory sync (`SessionMemoryStores`), both driving
 * the same SDK client against the same loopback emulator on the real disk. Run: `pnpm bench`.
 *
 * Three workloads on a store of STORE_SIZE memories:
 * - mount + teardown: full download, then removal;
 * - idle sync: nothing changed (what every sync after a tool call usually is);
 * - busy sync: EDITS local edits and EDITS remote edits to carry across.
 * Request counts per workload are printed once, since round trips dominate on a real network.
 */
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { SessionMemoryStores } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { afterAll, beforeAll, bench, describe } from 'vitest';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MemoryMounter, NodeFileSystem } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';

const STORE_SIZE = 300;
const EDITS = 30;
const STORE = 'memstore_bench';
const silent = { debug() {}, info() {}, warn() {}, error() {} };

const server = new MemoryApiServer();
let client: Anthropic;
let base: string;
let round = 0;

const content = (i: number, version: number) => `# note ${i} v${version}\n${'lorem ipsum dolor sit amet '.repeat(60)}\n`;
const resource = (name: string) => ({ type: 'memory_store', memory_store_id: STORE, name, access: 'read_write' }) as const;
// The SDK wants a whole session object; only its resources matter here.
const sessionWith = (name: string) => ({ id: 'sesn_bench', resources: [resource(name)] }) as never;

beforeAll(async () => {
  client = new Anthropic({ apiKey: 'bench', baseURL: await server.start(), maxRetries: 0 });
  server.seed(STORE, Object.fromEntries(Array.from({ length: STORE_SIZE }, (_, i) => [`/notes/n${i}.md`, content(i, 0)])));
  base = await realpath(await mkdtemp(join(tmpdir(), 'mm-bench-')));
});
afterAll(async () => {
  await server.close();
  await rm(base, { recursive: true, force: true });
});

async function mounterIn(dir: string, name: string): Promise<MemoryMounter> {
  const fileSystem = new NodeFileSystem();
  await fileSystem.mkdir(dir, { recursive: true });
  const mounter = new MemoryMounter({
    storeClient: new AnthropicStoreClient({ client }),
    fileSystem,
    memoryRoot: dir,
    logger: silent,
    deleteGracePeriod: 0,
  });
  await mounter.materialize([resource(name)]);
  return mounter;
}

/**
 * One sync pass of the SDK's engine, now: `syncIfDue` would wait out its interval (5 s at
 * least), and `finish` is the final sync. `syncAll` is public in its source, not in its types.
 */
const sdkSync = (stores: SessionMemoryStores) => (stores as unknown as { syncAll(final: boolean): Promise<void> }).syncAll(false);

async function sdkStoresIn(dir: string, name: string): Promise<SessionMemoryStores> {
  const stores = new SessionMemoryStores(client, { workdir: dir });
  await stores.download(sessionWith(name));
  return stores;
}

/** Local edits through the disk, remote edits as another writer. */
async function churn(root: string, version: number): Promise<void> {
  for (let i = 0; i < EDITS; i++) await writeFile(join(root, 'notes', `n${i}.md`), content(i, version));
  for (let i = EDITS; i < 2 * EDITS; i++) server.writeMemory(STORE, `/notes/n${i}.md`, content(i, version));
}

function countRequests<T>(label: string, run: () => Promise<T>): Promise<T> {
  const before = server.requestCount();
  return run().then((value) => {
    console.log(`${label}: ${server.requestCount() - before} requests`);
    return value;
  });
}

describe(`mount + teardown, ${STORE_SIZE} memories`, () => {
  bench('memory-mounter', async () => {
    const mounter = await mounterIn(join(base, `mm-mount-${round++}`), 'notes');
    await mounter.finalize({ outcome: 'aborted' });
  });
  bench('SDK SessionMemoryStores', async () => {
    const stores = await sdkStoresIn(join(base, `sdk-mount-${round++}`), 'notes');
    await stores.dispose();
  });
});

/** Both engines mounted once in their own folders, created on first use and kept for the file. */
function mountedPair(label: string) {
  let pair: Promise<{ mounter: MemoryMounter; stores: SessionMemoryStores }> | undefined;
  return () =>
    (pair ??= (async () => {
      const mounted = {
        mounter: await mounterIn(join(base, `mm-${label}`), 'notes'),
        stores: await sdkStoresIn(join(base, `sdk-${label}`), 'notes'),
      };
      // Files written a moment ago are re-read on purpose (their timestamps may not move on the
      // next edit); a session's memory is mostly older than that, so measure it settled.
      await sleep(2_100);
      return mounted;
    })());
}

describe(`idle sync, ${STORE_SIZE} memories`, () => {
  const pair = mountedPair('idle');
  let counted = false;
  bench('memory-mounter', async () => {
    const { mounter, stores } = await pair();
    if (!counted) {
      counted = true;
      await countRequests('idle sync, memory-mounter', () => mounter.reconcile({ force: true }));
      await countRequests('idle sync, SDK', () => sdkSync(stores));
    }
    await mounter.reconcile({ force: true });
  });
  bench('SDK SessionMemoryStores', async () => {
    await sdkSync((await pair()).stores);
  });
});

describe(`busy sync, ${EDITS} local + ${EDITS} remote edits`, () => {
  const pair = mountedPair('busy');
  let version = 1;
  bench(
    'memory-mounter',
    async () => {
      const { mounter } = await pair();
      await churn(mounter.roots[0]!, version++);
      await countRequests('busy sync, memory-mounter', () => mounter.reconcile({ force: true }));
    },
    { iterations: 10, time: 0 },
  );
  bench(
    'SDK SessionMemoryStores',
    async () => {
      const { stores } = await pair();
      await churn(stores.roots[0]!, version++);
      await countRequests('busy sync, SDK', () => sdkSync(stores));
    },
    { iterations: 10, time: 0 },
  );
});
