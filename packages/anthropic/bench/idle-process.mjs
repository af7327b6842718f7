/**
 * One engine mounted on one store and settled, alone in a process of its own (started by
 * sync-vs-sdk.bench.ts for the idle phases), so that the CPU of its idle pass is its own. In one
 * process with the other engine, each pass also paid for the other's garbage: a scavenge that
 * copied what the other's pass had just left alive, or a full collection of what it had
 * promoted, landed in whichever pass allocated next (at 10,000 memories two passes in three
 * measured 30–40 ms of CPU where one alone takes 6–8). Plain JavaScript on the built packages
 * (`pnpm bench` builds them first).
 *
 * argv[2]: JSON { engine: 'ours' | 'sdk', baseURL, storeId, dir }. Sends { ready: true } once
 * settled and warmed up; then each { op: 'pass' } is answered with { ms, cpuMs } of one pass, and { op: 'end' }
 * ends the session (finalize, or the SDK's dispose) and exits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { SessionMemoryStores } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { MemoryMounter, NodeFileSystem } from '@memory-mounter/core';
import { AnthropicStoreClient } from '../dist/index.js';

const { engine, baseURL, storeId, dir } = JSON.parse(process.argv[2]);
const WARM_UP_PASSES = 5;
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const client = new Anthropic({ apiKey: 'bench', baseURL, maxRetries: 0 });
const resource = { type: 'memory_store', memory_store_id: storeId, name: storeId, access: 'read_write' };

let pass;
let end;
if (engine === 'ours') {
  const fileSystem = new NodeFileSystem();
  await fileSystem.mkdir(dir, { recursive: true });
  const m = new MemoryMounter({ storeClient: new AnthropicStoreClient({ client }), fileSystem, memoryRoot: dir, logger: silent, deleteGracePeriod: 0 });
  await m.materialize([resource]);
  pass = () => m.reconcile({ force: true });
  end = () => m.finalize({ outcome: 'aborted' });
} else {
  const stores = new SessionMemoryStores(client, { workdir: dir });
  await stores.download({ id: 'sesn_bench', resources: [resource] });
  // One pass now (`syncIfDue` waits out an interval).
  pass = () => stores.syncAll(false);
  end = () => stores.dispose();
}
// Settled as a session would be: files written a moment ago are hashed again on purpose, and the
// first feed read after a download re-reads what was written within the overlap of the store's
// newest write.
await sleep(2_500);
await pass();
await sleep(2_500);
// Then steady: the first passes of a process also pay for compiling its code, on V8's background
// threads, which its CPU counts (at 10,000 memories 10–30 ms of a pass's CPU for ours, the first
// five or so passes).
for (let i = 0; i < WARM_UP_PASSES; i++) await pass();

process.on('message', async ({ op }) => {
  if (op === 'pass') {
    const cpu = process.cpuUsage();
    const started = performance.now();
    await pass();
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    process.send({ ms, cpuMs: (used.user + used.system) / 1000 });
  } else if (op === 'end') {
    await end();
    process.send({ ended: true }, () => process.exit(0));
  }
});
process.send({ ready: true });
