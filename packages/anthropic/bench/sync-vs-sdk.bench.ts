/**
 * memory-mounter against the SDK's built-in memory sync (`SessionMemoryStores`), both driving
 * the real SDK client over loopback HTTP against the emulator, on the real disk, both engines in
 * this process and the emulator in one of its own (emulator-remote.ts), as a store service is.
 * Run: `pnpm bench` (from the repository root; it builds the packages first, which the emulator's
 * process runs on). Takes a few minutes.
 *
 * The workload of issue 9: a store of 2,000 memories of about 1 kB in 40 folders, every request
 * answered after 20 ms (the emulator's `latencyMs`), and
 * - materialize: the download of the whole store;
 * - steady idle sync: a pass with nothing changed, once both engines have settled, each engine
 *   alone in a process of its own (idle-process.mjs), so that neither pays for the other's garbage;
 * - 20 remote + 20 local changes carried across by one pass;
 * - finalize with 500 local changes (the SDK's `finish()` + `dispose()`);
 * - finalize with all 2,000 memories changed, 50 ms a request (memory-mounter only by default:
 *   the SDK takes about two minutes a run; `BENCH_SDK_SLOW=1` runs it once);
 * - steady idle sync of a 10,000-memory store (in processes of their own, as above);
 * - eight stores of 2,000 (the session's maximum) materialized at once, each engine alone in a
 *   process of its own (eight-stores-process.mjs): wall, requests, peak RSS, open descriptors;
 * - a fleet: N = 1, 4, 8 workers (memory-mounters) on one store, each editing 5 memories a pass:
 *   the requests of each worker's pass against what it pulled (ours only).
 * Beside each materialize run, the disk's floor for it: the same files (1 kB each, in the same
 * folders) created as fast as this process can (32 in flight, folders in turn), in that run; and
 * the store's: every memory's content read through the SDK client, nothing written, with the
 * main thread's busy time of each floor and of ours (the download's bound on two cores).
 * Each engine has its own copy of the store, so neither sees the other's writes. Each figure is
 * the median of RUNS runs (the engines alternate); request counts are the emulator's. CPU is
 * the user + system time of the engine's process over the pass (this one, or its own for the
 * idle and eight-store phases): the engine and the SDK client it drives,
 * never the emulator serving them.
 *
 * `BENCH_ONLY=materialize,idle,finalize,slow,big,eight,fleet` runs only the phases named.
 *
 * The table is printed at the end (and the figures in docs/performance.md come from it).
 */
import { closeSync, constants as fsConstants, openSync } from 'node:fs';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { SessionMemoryStores } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { afterAll, beforeAll, bench, describe } from 'vitest';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { MemoryMounter, NodeFileSystem } from '@memory-mounter/core';
import { RemoteEmulator } from './emulator-remote.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const LATENCY_MS = 20;
// Overridable for a quick smoke run (BENCH_SIZE=200 BENCH_BIG=400 BENCH_RUNS=1).
const SIZE = Number(process.env.BENCH_SIZE ?? 2_000);
const FOLDERS = 40;
const BIG = Number(process.env.BENCH_BIG ?? 10_000);
const EIGHT = 8;
const FLEET = [1, 4, 8];
/** Memories each fleet worker edits a pass. */
const FLEET_EDITS = 5;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

let server: RemoteEmulator;
let client: Anthropic;
let base: string;
let dirs = 0;

const pathOf = (i: number) => `/f${String(i % FOLDERS).padStart(2, '0')}/n${String(i).padStart(5, '0')}.md`;
const content = (i: number, version: number) => `# note ${i} v${version}\n${'lorem ipsum dolor sit amet '.repeat(37)}\n`; // ~1 kB
const seedStore = (storeId: string, n: number) =>
  server.seed(storeId, Object.fromEntries(Array.from({ length: n }, (_, i) => [pathOf(i), content(i, 0)])));
const resource = (storeId: string) => ({ type: 'memory_store', memory_store_id: storeId, name: storeId, access: 'read_write' }) as const;
const sessionWith = (storeId: string) => ({ id: 'sesn_bench', resources: [resource(storeId)] }) as never;
const freshDir = () => join(base, `run-${dirs++}`);

async function mounter(storeId: string): Promise<MemoryMounter> {
  const dir = freshDir();
  const fileSystem = new NodeFileSystem();
  await fileSystem.mkdir(dir, { recursive: true });
  const m = new MemoryMounter({ storeClient: new AnthropicStoreClient({ client }), fileSystem, memoryRoot: dir, logger: silent, deleteGracePeriod: 0 });
  await m.materialize([resource(storeId)]);
  return m;
}

async function sdkStores(storeId: string): Promise<SessionMemoryStores> {
  const stores = new SessionMemoryStores(client, { workdir: freshDir() });
  await stores.download(sessionWith(storeId));
  return stores;
}

/** One pass of the SDK's engine, now (`syncIfDue` waits out an interval; `finish` is the final sync). */
const sdkSync = (stores: SessionMemoryStores) => (stores as unknown as { syncAll(final: boolean): Promise<void> }).syncAll(false);

interface Sample {
  ms: number;
  requests: number;
  cpuMs: number;
}

/** Times `run` (only it), with the requests it sent and the CPU the process spent. */
async function sample(run: () => Promise<unknown>): Promise<Sample> {
  const requests = await server.requestCount();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms, requests: (await server.requestCount()) - requests, cpuMs: (used.user + used.system) / 1000 };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface Row {
  phase: string;
  sdk?: Sample[];
  ours: Sample[];
  note?: string;
}
const rows: Row[] = [];
/** Lines printed after the table: per-run figures, the eight stores, the fleet. */
const extra: string[] = [];

function summary(samples: Sample[] | undefined): Sample | undefined {
  if (!samples || samples.length === 0) return undefined;
  return { ms: median(samples.map((s) => s.ms)), requests: median(samples.map((s) => s.requests)), cpuMs: median(samples.map((s) => s.cpuMs)) };
}

/**
 * What creating one file costs on the disk under `base`, in µs (the median of 5 rounds of 200
 * empty files made with O_CREAT | O_EXCL on one thread). A download creates a file per memory
 * whichever engine runs it, so this is a floor under both engines' materialize, and it differs
 * by orders of magnitude between disks: printed beside the table to read its first row by.
 */
function fileCreateMicros(): number {
  const rounds: number[] = [];
  for (let round = 0; round < 5; round++) {
    const started = performance.now();
    for (let i = 0; i < 200; i++) {
      closeSync(openSync(join(base, `create-probe-${round}-${i}`), fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600));
    }
    rounds.push(((performance.now() - started) * 1000) / 200);
  }
  return median(rounds);
}
let createMicros = 0;
let startLoad = '';

/**
 * The disk's floor under one materialize, in ms: the store's files (~1 kB each, in its folders)
 * created in a fresh folder as fast as this process can: the folders made, then each file
 * created exclusively and written, 32 in flight, folders in turn. No engine can download the
 * store faster than the disk takes these; measured beside each run, since this disk's cost of
 * creating a file moves by a factor of five within minutes.
 */
async function creationFloor(): Promise<number> {
  const dir = freshDir();
  await mkdir(dir, { recursive: true });
  const started = performance.now();
  await Promise.all(range(0, FOLDERS).map((f) => mkdir(join(dir, `f${String(f).padStart(2, '0')}`))));
  let next = 0;
  // pathOf(i) is in folder i % FOLDERS: taking the files in index order takes the folders in turn.
  await Promise.all(
    range(0, 32).map(async () => {
      while (next < SIZE) {
        const i = next++;
        await writeFile(join(dir, pathOf(i)), content(i, 0), { flag: 'wx' });
      }
    }),
  );
  // Kept until the bench ends (afterAll removes `base`): see `atTheEnd`.
  return performance.now() - started;
}

/**
 * The store's floor under one materialize, in ms: every memory's content read through the SDK
 * client as the service allows (`view=full`, 20 a page), each of the store's folders listed at
 * once, nothing written. Whichever engine downloads the store makes these requests (100 at
 * least for 2,000 memories), and the client's own work for each (the request, undici, the JSON)
 * runs on the main thread, which the disk's calls are dispatched from too: `mainMs` is that
 * thread's busy time (event-loop utilisation) over the read. With the creation floor's, it is a
 * floor on the main thread's time for the download.
 */
async function readFloor(storeId: string): Promise<{ ms: number; mainMs: number }> {
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  let read = 0;
  await Promise.all(
    range(0, FOLDERS).map(async (f) => {
      const pages = client.beta.memoryStores.memories.list(storeId, { view: 'full', limit: 20, path_prefix: `/f${String(f).padStart(2, '0')}/` });
      for await (const item of pages) if (item.type === 'memory') read++;
    }),
  );
  if (read !== SIZE) throw new Error(`the read floor listed ${read} memories, not ${SIZE}`);
  return { ms: performance.now() - started, mainMs: performance.eventLoopUtilization(elu).active };
}

/** `creationFloor`, with the main thread's busy time over it. */
async function creationFloorWithMain(): Promise<{ ms: number; mainMs: number }> {
  const elu = performance.eventLoopUtilization();
  const ms = await creationFloor();
  return { ms, mainMs: performance.eventLoopUtilization(elu).active };
}

function printTable(): void {
  const fmt = (ms: number) => (ms >= 1_000 ? `${(ms / 1_000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
  const lines = [
    `issue 9 benchmark: ${RUNS} runs a phase (median), ${LATENCY_MS} ms a request unless said, the emulator in its own process; node ${process.version}, ` +
      `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} at the end; ` +
      `the disk (${base}) creates a file in ${createMicros.toFixed(0)} µs; load average at the start ${startLoad}`,
    '| phase | SDK SessionMemoryStores | memory-mounter | ratio | requests (SDK / ours) | CPU (SDK / ours) |',
    '|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const sdk = summary(row.sdk);
    const ours = summary(row.ours)!;
    lines.push(
      `| ${row.phase} | ${sdk ? fmt(sdk.ms) : '—'} | ${fmt(ours.ms)} | ${sdk ? `${(ours.ms / sdk.ms).toFixed(3)}×` : '—'} | ` +
        `${sdk ? sdk.requests : '—'} / ${ours.requests} | ${sdk ? `${fmt(sdk.cpuMs)} / ${fmt(ours.cpuMs)}` : fmt(ours.cpuMs)}${row.note ? ` (${row.note})` : ''} |`,
    );
  }
  console.log(`\n${lines.join('\n')}\n\n${extra.join('\n')}\n`);
}

function idleCpuLine(row: Row): string {
  const cpu = (samples: Sample[]) => samples.map((s) => s.cpuMs.toFixed(1)).join(', ');
  const ours = median(row.ours.map((s) => s.cpuMs));
  const sdk = median(row.sdk!.map((s) => s.cpuMs));
  return `${row.phase}, CPU ms: ours ${cpu(row.ours)} (median ${ours.toFixed(1)}), SDK ${cpu(row.sdk!)} (median ${sdk.toFixed(1)}): ${(ours / sdk).toFixed(3)}×`;
}

/** Edits `paths` in a mounted folder on disk, as the agent would. */
async function editLocally(root: string, indexes: number[], version: number): Promise<void> {
  await Promise.all(indexes.map((i) => writeFile(join(root, pathOf(i)), content(i, version))));
}

/**
 * What removes the folders that the file-creating phases (materialize, eight stores) made, run
 * once the bench ends. On a file system without a journal (this machine's ext4), creating a file
 * skips every inode freed in the last 60 s, or 360 s while its inode table is not yet written
 * back (`recently_deleted` in the kernel's inode allocator: 58% of the system time in a profile
 * of creates after a removal). A run that followed the floor's or the other engine's removal of
 * 2,000 files paid for them, two to six times over, and each run more than the last; so those
 * phases run first and nothing is removed until every one of their runs has created its files.
 */
const atTheEnd: Array<() => Promise<unknown>> = [];

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

beforeAll(async () => {
  server = await RemoteEmulator.start(LATENCY_MS);
  client = new Anthropic({ apiKey: 'bench', baseURL: server.baseURL, maxRetries: 0 });
  base = await realpath(await mkdtemp(join(tmpdir(), 'mm-bench-')));
  startLoad = loadavg().map((l) => l.toFixed(2)).join(' ');
  createMicros = fileCreateMicros();
  for (const id of ['memstore_mm', 'memstore_sdk']) await seedStore(id, SIZE);
}, 120_000);

afterAll(async () => {
  printTable();
  for (const cleanup of atTheEnd) await cleanup();
  await server.close();
  await rm(base, { recursive: true, force: true });
  // Removing some 100,000 files takes minutes on a disk still paying for earlier removals.
}, 600_000);

async function materialize(): Promise<void> {
  const row: Row = { phase: `materialize (${SIZE.toLocaleString('en')} memories, ${FOLDERS} folders)`, sdk: [], ours: [] };
  const floors: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const creation = await creationFloorWithMain();
    floors.push(creation.ms);
    const reading = await readFloor('memstore_mm');
    let m!: MemoryMounter;
    const elu = performance.eventLoopUtilization();
    row.ours.push(await sample(async () => (m = await mounter('memstore_mm'))));
    const oursMain = performance.eventLoopUtilization(elu).active;
    atTheEnd.push(() => m.finalize({ outcome: 'aborted' }));
    let stores!: SessionMemoryStores;
    row.sdk!.push(await sample(async () => (stores = await sdkStores('memstore_sdk'))));
    atTheEnd.push(() => stores.dispose());
    const ours = row.ours[run]!.ms;
    extra.push(
      `materialize run ${run + 1}: ours ${ours.toFixed(0)} ms, SDK ${row.sdk![run]!.ms.toFixed(0)} ms (${(ours / row.sdk![run]!.ms).toFixed(3)}×), ` +
        `creation floor ${floors[run]!.toFixed(0)} ms (ours ${(ours / floors[run]!).toFixed(2)}× the floor), load ${loadavg()[0]!.toFixed(2)}`,
    );
    extra.push(
      `  read floor ${reading.ms.toFixed(0)} ms (every memory's content through the SDK client, nothing written; ` +
        `${(reading.ms / floors[run]!).toFixed(2)}× the creation floor); main thread busy: ` +
        `ours ${oursMain.toFixed(0)} ms, the read floor ${reading.mainMs.toFixed(0)} ms + the creation floor ${creation.mainMs.toFixed(0)} ms = ` +
        `${(reading.mainMs + creation.mainMs).toFixed(0)} ms (ours ${(oursMain / (reading.mainMs + creation.mainMs)).toFixed(2)}× that)`,
    );
  }
  row.note = `creation floor ${median(floors).toFixed(0)} ms`;
  rows.push(row);
}

interface ProcessFigures {
  ms: number;
  cpuMs: number;
  baseRssMb: number;
  peakRssMb: number;
  peakFds: number;
  baseFds: number;
}

/** One engine materializing `storeIds` in a process of its own (eight-stores-process.mjs), with the requests it sent. */
async function inOwnProcess(engine: 'ours' | 'sdk', storeIds: string[]): Promise<ProcessFigures & { requests: number }> {
  const before = await server.requestCount();
  const config = JSON.stringify({ engine, baseURL: server.baseURL, storeIds, dir: freshDir() });
  const child = fork(fileURLToPath(new URL('./eight-stores-process.mjs', import.meta.url)), [config], { stdio: 'inherit' });
  const figures = await new Promise<ProcessFigures>((resolve, reject) => {
    child.once('message', (message) => resolve(message as ProcessFigures));
    child.once('exit', (code) => reject(new Error(`${engine} process exited (${code}) without its figures`)));
  });
  await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
  return { ...figures, requests: (await server.requestCount()) - before };
}

async function eightStores(): Promise<void> {
  const ids = (engine: string) => range(0, EIGHT).map((i) => `memstore_${engine}_eight_${i}`);
  for (const id of [...ids('mm'), ...ids('sdk')]) await seedStore(id, SIZE);
  const row: Row = { phase: `materialize ${EIGHT} stores × ${SIZE.toLocaleString('en')} (each engine in its own process)`, sdk: [], ours: [] };
  for (let run = 0; run < RUNS; run++) {
    const ours = await inOwnProcess('ours', ids('mm'));
    const sdk = await inOwnProcess('sdk', ids('sdk'));
    row.ours.push({ ms: ours.ms, requests: ours.requests, cpuMs: ours.cpuMs });
    row.sdk!.push({ ms: sdk.ms, requests: sdk.requests, cpuMs: sdk.cpuMs });
    extra.push(
      `${EIGHT} stores run ${run + 1}: wall ours ${ours.ms.toFixed(0)} ms / SDK ${sdk.ms.toFixed(0)} ms (${(ours.ms / sdk.ms).toFixed(3)}×); ` +
        `requests ${ours.requests} / ${sdk.requests}; peak RSS ours ${ours.peakRssMb.toFixed(0)} MB (from ${ours.baseRssMb.toFixed(0)}) / ` +
        `SDK ${sdk.peakRssMb.toFixed(0)} MB (from ${sdk.baseRssMb.toFixed(0)}); open descriptors at most ours ${ours.peakFds} (from ${ours.baseFds}) / ` +
        `SDK ${sdk.peakFds} (from ${sdk.baseFds}); load ${loadavg()[0]!.toFixed(2)}`,
    );
  }
  rows.push(row);
}

/**
 * N workers on one store, passes in turn: each edits FLEET_EDITS memories of its own, then syncs,
 * so each pulls what the other N - 1 wrote since its last pass. Requests are counted per pass.
 */
async function fleet(): Promise<void> {
  const store = 'memstore_fleet';
  await seedStore(store, SIZE);
  const workers: MemoryMounter[] = [];
  for (let w = 0; w < Math.max(...FLEET); w++) workers.push(await mounter(store));
  await sleep(2_500);
  let version = 10_000;
  const round = async (n: number, record?: { requests: number[]; reads: number[]; pulled: number[] }) => {
    for (let w = 0; w < n; w++) {
      const mine = range(w * FLEET_EDITS, FLEET_EDITS);
      await editLocally(workers[w]!.roots[0]!, mine, version++);
      const before = await server.requestCount();
      const report = (await workers[w]!.reconcile({ force: true }))!.stores[0]!;
      const requests = (await server.requestCount()) - before;
      record?.requests.push(requests);
      record?.reads.push(requests - report.pushed.length);
      record?.pulled.push(report.pulled.length);
    }
  };
  for (const n of FLEET) {
    // Every worker of this size caught up first: what the larger fleet did before is not counted.
    await round(n);
    await round(n);
    const record = { requests: [] as number[], reads: [] as number[], pulled: [] as number[] };
    for (let r = 0; r < RUNS; r++) await round(n, record);
    extra.push(
      `fleet N = ${n}: per pass per worker (median of ${record.requests.length}) ${median(record.requests)} requests, of which ` +
        `${median(record.reads)} reads (the rest its ${FLEET_EDITS} writes), pulling ${median(record.pulled)} memories; ` +
        `most ${Math.max(...record.requests)} requests; a fetch per pull would be ${1 + median(record.pulled) + FLEET_EDITS}`,
    );
  }
  for (const m of workers) await m.finalize({ outcome: 'aborted' });
}

/** One engine mounted on one store and settled in a process of its own (idle-process.mjs), one pass at a time. */
class EngineProcess {
  readonly #child: ChildProcess;
  #reply: ((message: { ms?: number; cpuMs?: number }) => void) | undefined;

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.on('message', (message: { ms?: number; cpuMs?: number }) => this.#reply?.(message));
  }

  static async start(engine: 'ours' | 'sdk', storeId: string): Promise<EngineProcess> {
    const config = JSON.stringify({ engine, baseURL: server.baseURL, storeId, dir: freshDir() });
    const child = fork(fileURLToPath(new URL('./idle-process.mjs', import.meta.url)), [config], { stdio: 'inherit' });
    await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`${engine} idle process exited (${code}) before it was settled`)));
    });
    return new EngineProcess(child);
  }

  #ask(op: 'pass' | 'end'): Promise<{ ms?: number; cpuMs?: number }> {
    return new Promise((resolve) => {
      this.#reply = resolve;
      this.#child.send({ op });
    });
  }

  /** One pass, timed in its process: its wall and that process's CPU, with the requests it sent. */
  async sample(): Promise<Sample> {
    const requests = await server.requestCount();
    const { ms, cpuMs } = await this.#ask('pass');
    return { ms: ms!, cpuMs: cpuMs!, requests: (await server.requestCount()) - requests };
  }

  async end(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    await this.#ask('end');
    await exited;
  }
}

/** Both engines settled on their stores, each in a process of its own, passes in turn. */
async function idleRow(phase: string, mmStore: string, sdkStore: string, runs: number): Promise<Row> {
  const [ours, sdk] = await Promise.all([EngineProcess.start('ours', mmStore), EngineProcess.start('sdk', sdkStore)]);
  const row: Row = { phase, sdk: [], ours: [] };
  for (let run = 0; run < runs; run++) {
    row.ours.push(await ours.sample());
    row.sdk!.push(await sdk.sample());
  }
  await Promise.all([ours.end(), sdk.end()]);
  rows.push(row);
  extra.push(idleCpuLine(row));
  return row;
}

/** Both engines mounted on their stores and settled: one pass each, then the feed's overlap let pass. */
async function settledPair(mmStore: string, sdkStore: string): Promise<{ m: MemoryMounter; stores: SessionMemoryStores }> {
  const m = await mounter(mmStore);
  const stores = await sdkStores(sdkStore);
  // Files written a moment ago are hashed again on purpose; and the first feed read after a
  // download re-reads what was written within the overlap of the store's newest write.
  await sleep(2_500);
  await m.reconcile({ force: true });
  await sdkSync(stores);
  await sleep(2_500);
  return { m, stores };
}

async function idleAndChanges(): Promise<void> {
  await idleRow('steady idle sync', 'memstore_mm', 'memstore_sdk', Math.max(RUNS, 5));
  const { m, stores } = await settledPair('memstore_mm', 'memstore_sdk');
  const busy: Row = { phase: '20 remote + 20 local changes', sdk: [], ours: [] };
  for (let run = 1; run <= RUNS; run++) {
    await editLocally(m.roots[0]!, range(0, 20), run);
    for (const i of range(20, 20)) await server.writeMemory('memstore_mm', pathOf(i), content(i, run));
    busy.ours.push(await sample(() => m.reconcile({ force: true })));
    await editLocally(stores.roots[0]!, range(0, 20), run);
    for (const i of range(20, 20)) await server.writeMemory('memstore_sdk', pathOf(i), content(i, run));
    busy.sdk!.push(await sample(() => sdkSync(stores)));
  }
  rows.push(busy);
  await m.finalize();
  await stores.dispose();
}

async function finalizeWith500(): Promise<void> {
  const row: Row = { phase: 'finalize with 500 local changes (SDK: finish + dispose)', sdk: [], ours: [] };
  for (let run = 1; run <= RUNS; run++) {
    const m = await mounter('memstore_mm');
    await editLocally(m.roots[0]!, range(100, Math.min(500, SIZE - 100)), 100 + run);
    let unpushed = 0;
    row.ours.push(await sample(async () => (unpushed = (await m.finalize()).unpushed.length)));
    if (unpushed !== 0) throw new Error(`memory-mounter left ${unpushed} changes unpushed`);
    const stores = await sdkStores('memstore_sdk');
    await editLocally(stores.roots[0]!, range(100, Math.min(500, SIZE - 100)), 100 + run);
    row.sdk!.push(
      await sample(async () => {
        await stores.finish();
        await stores.dispose();
      }),
    );
  }
  rows.push(row);
}

async function finalizeAllChangedSlow(): Promise<void> {
  const row: Row = { phase: `finalize, all ${SIZE.toLocaleString('en')} changed, 50 ms a request`, ours: [], note: '0 unpushed in every run' };
  await server.setLatency(50);
  try {
    for (let run = 1; run <= RUNS; run++) {
      const m = await mounter('memstore_mm');
      await editLocally(m.roots[0]!, range(0, SIZE), 1_000 + run);
      let unpushed = 0;
      row.ours.push(await sample(async () => (unpushed = (await m.finalize()).unpushed.length)));
      if (unpushed !== 0) row.note = `${unpushed} unpushed in a run`;
    }
    if (process.env.BENCH_SDK_SLOW === '1') {
      const stores = await sdkStores('memstore_sdk');
      await editLocally(stores.roots[0]!, range(0, SIZE), 2_000);
      row.sdk = [
        await sample(async () => {
          await stores.finish();
          await stores.dispose();
        }),
      ];
      row.note = `${row.note}; SDK: one run`;
    }
  } finally {
    await server.setLatency(LATENCY_MS);
  }
  rows.push(row);
}

async function idleBig(): Promise<void> {
  for (const id of ['memstore_mm_big', 'memstore_sdk_big']) await seedStore(id, BIG);
  await idleRow(`steady idle sync, ${BIG.toLocaleString('en')} memories`, 'memstore_mm_big', 'memstore_sdk_big', RUNS);
}

describe('issue 9: memory-mounter against SessionMemoryStores', () => {
  // One task that runs the whole table once: each phase takes its own medians, and the SDK's
  // slow phases make repeated tinybench iterations impractical.
  bench(
    'the table (printed at the end)',
    async () => {
      const only = process.env.BENCH_ONLY?.split(',');
      const phases: [string, () => Promise<void>][] = [
        // The phases that create thousands of files first (see `atTheEnd`).
        ['materialize', materialize],
        ['eight', eightStores],
        ['idle', idleAndChanges],
        ['finalize', finalizeWith500],
        ['slow', finalizeAllChangedSlow],
        ['big', idleBig],
        ['fleet', fleet],
      ];
      for (const [name, phase] of phases) if (!only || only.includes(name)) await phase();
    },
    { iterations: 1, time: 0, warmupIterations: 0, warmupTime: 0 },
  );
});
