/**
 * One engine materializing several stores (the session's maximum is eight), alone in a process
 * of its own (started by sync-vs-sdk.bench.ts), so that its peak resident set and its open
 * descriptors are its own and not the other engine's or the bench's. Plain JavaScript on the
 * built packages (`pnpm bench` builds them first).
 *
 * argv[2]: JSON { engine: 'ours' | 'sdk', baseURL, storeIds, dir }. Sends one message,
 * { ms, cpuMs, baseRssMb, peakRssMb, peakFds, baseFds }, and exits.
 */
import { readdirSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { SessionMemoryStores } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { MemoryMounter, NodeFileSystem } from '@memory-mounter/core';
import { AnthropicStoreClient } from '../dist/index.js';

const { engine, baseURL, storeIds, dir } = JSON.parse(process.argv[2]);
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const client = new Anthropic({ apiKey: 'bench', baseURL, maxRetries: 0 });
const resources = storeIds.map((id) => ({ type: 'memory_store', memory_store_id: id, name: id, access: 'read_write' }));

const fds = () => readdirSync('/proc/self/fd').length;
const baseFds = fds();
let peakFds = baseFds;
// Sampled every 5 ms: while the event loop is held a peak can be missed, so this is a lower bound.
const sampler = setInterval(() => (peakFds = Math.max(peakFds, fds())), 5);
const baseRssMb = process.memoryUsage.rss() / 2 ** 20;

const cpu = process.cpuUsage();
const started = performance.now();
// Neither engine removes its folders here: the bench removes them all once it ends. A removal of
// 16,000 files would make the next process's creates pay for it (see `atTheEnd` in
// sync-vs-sdk.bench.ts), and the engines take turns.
if (engine === 'ours') {
  const fileSystem = new NodeFileSystem();
  await fileSystem.mkdir(dir, { recursive: true });
  const m = new MemoryMounter({ storeClient: new AnthropicStoreClient({ client }), fileSystem, memoryRoot: dir, logger: silent });
  await m.materialize(resources);
} else {
  const stores = new SessionMemoryStores(client, { workdir: dir });
  await stores.download({ id: 'sesn_bench', resources });
}
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
peakFds = Math.max(peakFds, fds());
clearInterval(sampler);
// maxRSS is the kernel's high-water mark of this process, in KiB.
const peakRssMb = process.resourceUsage().maxRSS / 1024;
process.send({ ms, cpuMs: (used.user + used.system) / 1000, baseRssMb, peakRssMb, peakFds, baseFds }, () => process.exit(0));
