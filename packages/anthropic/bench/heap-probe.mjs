/**
 * Where eight stores' peak resident set goes: each engine materializes eight stores of 2,000
 * memories (1 kB, 40 folders) in a process of its own, as the bench's eight-store phase does,
 * while this samples the heap every 2 ms. It prints, per run, the kernel's peak RSS and the
 * peaks of V8's spaces, and the garbage collections by kind (a PerformanceObserver on `gc`).
 * `HEAP_PROF=1` adds, for our engine, the allocation sites of what survived the scavenger
 * (V8's sampling heap profiler, objects later collected by a full GC included): what the old
 * space grows with. Plain JavaScript on the built packages: `pnpm build` first.
 *
 *   node packages/anthropic/bench/heap-probe.mjs            # RUNS=3 ENGINES=ours,sdk LATENCY=20
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);
const mb = (bytes) => (bytes / 2 ** 20).toFixed(1);

if (process.argv[2] === '--child') await child(JSON.parse(process.argv[3]));
else await driver();

async function driver() {
  const emulator = fork(fileURLToPath(new URL('./emulator-process.mjs', import.meta.url)), [process.env.LATENCY ?? '20'], { stdio: 'inherit' });
  const baseURL = await new Promise((resolve) => emulator.once('message', (m) => resolve(m.ready)));
  let next = 0;
  const waiting = new Map();
  emulator.on('message', (m) => m.id !== undefined && waiting.get(m.id)?.(m.result));
  const call = (op, ...args) => new Promise((resolve) => (waiting.set(next, resolve), emulator.send({ id: next++, op, args })));
  const pathOf = (i) => `/f${String(i % 40).padStart(2, '0')}/n${String(i).padStart(5, '0')}.md`;
  const content = (i) => `# note ${i} v0\n${'lorem ipsum dolor sit amet '.repeat(37)}\n`;
  const files = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [pathOf(i), content(i)]));
  const storeIds = Array.from({ length: Number(process.env.STORES ?? 8) }, (_, i) => `memstore_probe_${i}`);
  for (const id of storeIds) await call('seed', id, files);
  const base = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), 'heap-probe-'));
  try {
    for (let run = 0; run < Number(process.env.RUNS ?? 3); run++) {
      for (const engine of (process.env.ENGINES ?? 'ours,sdk').split(',')) {
        const config = { engine, baseURL, storeIds, dir: join(base, `${engine}-${run}`), profile: engine === 'ours' && process.env.HEAP_PROF };
        const c = fork(self, ['--child', JSON.stringify(config)], { stdio: 'inherit', execArgv: (process.env.HEAP_NODE_FLAGS ?? '').split(' ').filter(Boolean) });
        await new Promise((resolve) => c.once('exit', resolve));
      }
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
    emulator.disconnect();
  }
}

async function child({ engine, baseURL, storeIds, dir, profile }) {
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const { SessionMemoryStores } = await import('@anthropic-ai/sdk/tools/agent-toolset/node');
  const { MemoryMounter, NodeFileSystem } = await import('@memory-mounter/core');
  const { AnthropicStoreClient } = await import('../dist/index.js');
  const v8 = await import('node:v8');
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  const { Session } = await import('node:inspector/promises');

  const client = new Anthropic({ apiKey: 'bench', baseURL, maxRetries: 0 });
  const resources = storeIds.map((id) => ({ type: 'memory_store', memory_store_id: id, name: id, access: 'read_write' }));
  const session = new Session();
  if (profile) {
    session.connect();
    await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: profile === 'all' });
  }
  const gcs = { minor: 0, major: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR ? gcs.major++ : gcs.minor++;
  });
  observer.observe({ entryTypes: ['gc'] });
  const peak = { heapUsed: 0, old: 0, young: 0 };
  const sample = () => {
    peak.heapUsed = Math.max(peak.heapUsed, process.memoryUsage().heapUsed);
    for (const space of v8.getHeapSpaceStatistics()) {
      if (space.space_name === 'old_space') peak.old = Math.max(peak.old, space.space_size);
      if (space.space_name === 'new_space') peak.young = Math.max(peak.young, space.space_size);
    }
  };
  const timer = setInterval(sample, 2);
  // HEAP_LIVE_AT=ms,ms (with HEAP_NODE_FLAGS=--expose-gc): the live heap at those moments, a full GC forced there.
  if (process.env.HEAP_SNAPSHOT_AT) {
    setTimeout(() => {
      const file = v8.writeHeapSnapshot(join(process.env.HEAP_SNAPSHOT_DIR ?? tmpdir(), `heap-${engine}-${process.pid}.heapsnapshot`));
      console.log(`  heap snapshot: ${file}`);
    }, Number(process.env.HEAP_SNAPSHOT_AT)).unref();
  }
  for (const at of (process.env.HEAP_LIVE_AT ?? '').split(',').filter(Boolean).map(Number)) {
    setTimeout(() => {
      globalThis.gc();
      console.log(`  live at ${at} ms: ${mb(process.memoryUsage().heapUsed)} MB`);
    }, at).unref();
  }
  const baseRss = process.memoryUsage.rss();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const eluBefore = performance.eventLoopUtilization();
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  // Kept to the end: what the engine holds once mounted is part of what a session costs.
  let engineObject;
  if (engine === 'ours') {
    const fileSystem = new NodeFileSystem();
    await fileSystem.mkdir(dir, { recursive: true });
    engineObject = new MemoryMounter({ storeClient: new AnthropicStoreClient({ client }), fileSystem, memoryRoot: dir, logger: silent });
    await engineObject.materialize(resources);
  } else {
    engineObject = new SessionMemoryStores(client, { workdir: dir });
    await engineObject.download({ id: 'sesn_probe', resources });
  }
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const mainThreadBusy = performance.eventLoopUtilization(eluBefore).active;
  // With HEAP_NODE_FLAGS=--expose-gc: the live heap once mounted (a full GC forced), the engine still held.
  let liveAfter = '';
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    liveAfter = `  live once mounted ${mb(process.memoryUsage().heapUsed)} MB (${engineObject ? 'engine held' : ''})`;
  }
  sample();
  clearInterval(timer);
  await new Promise((resolve) => setImmediate(resolve));
  observer.disconnect();
  console.log(
    `${engine.padEnd(4)} ${ms.toFixed(0).padStart(6)} ms  peak RSS ${mb(process.resourceUsage().maxRSS * 1024)} MB (from ${mb(baseRss)})  ` +
      `CPU ${(cpu.user / 1000).toFixed(0)} user + ${(cpu.system / 1000).toFixed(0)} system ms (main thread busy ${mainThreadBusy.toFixed(0)} ms)  heap used ${mb(peak.heapUsed)}  old space ${mb(peak.old)}  new space ${mb(peak.young)} MB  GCs: ${gcs.minor} scavenges, ${gcs.major} full${liveAfter}`,
  );
  if (profile) {
    const { profile: sampled } = await session.post('HeapProfiler.stopSampling');
    const bySite = new Map();
    const walk = (node) => {
      const f = node.callFrame;
      const site = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      if (node.selfSize) bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      for (const c of node.children) walk(c);
    };
    walk(sampled.head);
    const total = [...bySite.values()].reduce((a, b) => a + b, 0);
    console.log(`  ${profile === 'all' ? 'allocated' : 'survived the scavenger'} (sampled): ${mb(total)} MB; the top sites:`);
    for (const [site, size] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.HEAP_SITES ?? 20))) console.log(`  ${mb(size).padStart(7)} MB  ${site}`);
  }
  process.exit(0);
}
