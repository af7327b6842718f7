import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTempFileName, MARKER_FILE, MemoryMounter, MemoryMountError, type Logger } from '@memory-mounter/core';
import { InMemoryStoreClient, MemoryApiServer } from '@memory-mounter/testing';
import { bundleChild } from './child-bundle.js';
import type { CrashChildArgs } from './crash-child.js';
import { seededRandom, selfCheckingContent, selfCheckProblem, sha256 } from './self-checking-content.js';

/**
 * Crash safety (issue 5, part 3). A child process (crash-child.ts) mounts a store served by this
 * process's MemoryApiServer — the store outlives the worker, as in production — and loops
 * agent-writes and reconciles while another writer here changes the store. It is killed with
 * SIGKILL at a random moment. Then:
 *
 *  C1 no partial memory file: every file in the mount is a complete, self-checking content that
 *     the store or the agent really had (the marker, if present, is complete too);
 *  C2 nothing partial and no temp file or marker was ever uploaded: every memory in the store
 *     is a complete content the store or the agent had, at a path that is neither;
 *  C3 a restart with a fresh MemoryMounter on the same path refuses with `mount_path_exists`,
 *     names the folder and tells the operator what to do, and touches neither folder nor store.
 *
 * CRASH_SEEDS (default 30) sets the number of kills; seeds are 1..N, so a failure names its seed.
 */
const CRASH_SEEDS = Number(process.env.CRASH_SEEDS ?? 30);
const PARALLEL = 3;
const STORE = 'memstore_crash';
const MOUNT_PATH = '/mnt/memory/crash';
const AGENT_PATHS = ['/a.md', '/b.md', '/notes/c.md', '/notes/d.md', '/deep/x/y.md', '/deep/x/z.md'];
const SEED_PATHS = [...AGENT_PATHS, '/e.md', '/notes/f.md', '/deep/g.md', '/h.md', '/i.md', '/j.md'];

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

interface CrashOutcome {
  seed: number;
  /** Where the child was when killed: before its first line, materializing, or syncing. */
  killedWhile: 'starting' | 'materializing' | 'syncing';
  folderExisted: boolean;
  memoryFiles: number;
  tempFilesLeft: number;
  problems: string[];
}

describe('crash safety: SIGKILL at random points', () => {
  let work: string;
  let bundle: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'mm-crash-bundle-'));
    bundle = join(work, 'crash-child.cjs');
    await bundleChild(fileURLToPath(new URL('./crash-child.ts', import.meta.url)), bundle);
  }, 60_000);

  afterAll(() => rm(work, { recursive: true, force: true }));

  it(`${CRASH_SEEDS} kills: no partial file, nothing partial or temporary uploaded, a restart refuses with mount_path_exists`, { timeout: 180_000 }, async () => {
    const seeds = Array.from({ length: CRASH_SEEDS }, (_, i) => i + 1);
    const outcomes = await inBatches(seeds, PARALLEL, (seed) => crashOnce(bundle, seed));
    const count = (f: (o: CrashOutcome) => boolean) => outcomes.filter(f).length;
    console.log(
      `crash: kills=${outcomes.length}`,
      JSON.stringify({
        killedWhile: {
          starting: count((o) => o.killedWhile === 'starting'),
          materializing: count((o) => o.killedWhile === 'materializing'),
          syncing: count((o) => o.killedWhile === 'syncing'),
        },
        restartsRefused: count((o) => o.folderExisted),
        cleanStarts: count((o) => !o.folderExisted),
        tempFilesLeft: outcomes.reduce((n, o) => n + o.tempFilesLeft, 0),
        memoryFilesChecked: outcomes.reduce((n, o) => n + o.memoryFiles, 0),
        violations: outcomes.reduce((n, o) => n + o.problems.length, 0),
      }),
    );
    expect(outcomes.flatMap((o) => o.problems)).toEqual([]);
    // The kills must land where it matters, not only before the child got going.
    expect(count((o) => o.killedWhile === 'syncing')).toBeGreaterThan(0);
  });
});

async function crashOnce(bundle: string, seed: number): Promise<CrashOutcome> {
  const random = seededRandom(seed);
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-crash-')));
  const memoryRoot = join(base, 'mnt-memory');
  const folder = join(memoryRoot, 'crash');
  const journal = join(base, 'agent-journal');
  await mkdir(memoryRoot);
  appendFileSync(journal, '');
  const server = new MemoryApiServer();
  await server.start();
  let running: ReturnType<typeof spawn> | undefined;
  try {
    // Every content the store held from the seed or the other writer, by sha.
    const storeVersions = new Set<string>();
    let id = 0;
    const version = (origin: 'seed' | 'remote') => {
      const content = selfCheckingContent(origin, id++, Math.floor(random() * 60_000), random);
      storeVersions.add(sha256(content));
      return content;
    };
    for (const path of SEED_PATHS) server.seed(STORE, { [path]: version('seed') });

    const args: CrashChildArgs = {
      baseURL: server.baseURL,
      memoryRoot,
      mountPath: MOUNT_PATH,
      storeId: STORE,
      staging: join(base, 'agent-staging'),
      journal,
      seed,
      paths: AGENT_PATHS,
    };
    const child = spawn(process.execPath, [bundle, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    let killedWhile: CrashOutcome['killedWhile'] = 'starting';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const ready = new Promise<void>((resolve) => {
      child.stdout.on('data', (d: Buffer) => {
        const text = d.toString();
        if (text.includes('ready')) {
          killedWhile = 'materializing';
          resolve();
        }
        if (text.includes('materialized')) killedWhile = 'syncing';
      });
    });
    const exited = once(child, 'exit');
    await Promise.race([ready, exited, sleep(15_000)]);

    // The other writer: an edit, a new memory or a delete every few milliseconds.
    const otherWriter = setInterval(() => {
      const path = SEED_PATHS[Math.floor(random() * SEED_PATHS.length)]!;
      try {
        if (random() < 0.15) server.deleteMemory(STORE, path);
        else server.writeMemory(STORE, path, version('remote'));
      } catch {
        // Deleting a memory that is not there: nothing to do.
      }
    }, 4);
    // A third of the kills early (materialize takes ~150-300 ms), the rest while syncing: by then
    // the child runs about 40 reconciles a second, each pulling what the other writer changed.
    await sleep(random() < 0.33 ? random() * 250 : 150 + random() * 1_000);
    const phase = killedWhile;
    const exitedEarly = child.exitCode !== null;
    child.kill('SIGKILL');
    await exited;
    clearInterval(otherWriter);
    await sleep(20); // let the server finish (and drop) requests the child left half-sent

    const problems: string[] = [];
    const say = (p: string) => problems.push(`seed ${seed} (killed while ${phase}): ${p}`);
    if (exitedEarly) say(`the child exited before the kill: ${stderr.trim()}`);

    const agentVersions = new Set(readFileSync(journal, 'utf8').split('\n').filter((l) => /^[0-9a-f]{64}$/.test(l)));
    const existed = (text: string) => storeVersions.has(sha256(text)) || agentVersions.has(sha256(text));

    // C1: the mount holds only complete versions that really existed.
    const tree = walk(folder);
    let memoryFiles = 0;
    let tempFilesLeft = 0;
    for (const [rel, entry] of tree) {
      const name = rel.slice(rel.lastIndexOf('/') + 1);
      if (entry.kind !== 'file') {
        if (entry.kind !== 'directory') say(`${rel} is a ${entry.kind}`);
        continue;
      }
      if (isTempFileName(name)) {
        tempFilesLeft++;
        continue;
      }
      const text = readFileSync(join(folder, rel), 'utf8');
      if (rel === `/${MARKER_FILE}`) {
        if (!markerNames(text, STORE)) say(`the marker is damaged: ${JSON.stringify(text)}`);
        continue;
      }
      memoryFiles++;
      const problem = selfCheckProblem(text);
      if (problem) say(`${rel} is partial: ${problem}`);
      else if (!existed(text)) say(`${rel} holds a version neither the store nor the agent had`);
    }

    // C2: nothing partial, no temp file and no marker in the store.
    for (const [path, content] of Object.entries(server.snapshot(STORE))) {
      const name = path.slice(path.lastIndexOf('/') + 1);
      if (path === `/${MARKER_FILE}` || isTempFileName(name) || name.includes('.mm-tmp-')) say(`${path} was uploaded`);
      const problem = selfCheckProblem(content);
      if (problem) say(`the store's ${path} is partial: ${problem}`);
      else if (!existed(content)) say(`the store's ${path} holds a version nobody wrote`);
    }

    // C3: a restart refuses the folder the dead worker left, says what to do, and touches nothing.
    const folderExisted = tree.size > 0 || exists(folder);
    const restartClient = new InMemoryStoreClient();
    const restart = new MemoryMounter({ storeClient: restartClient, memoryRoot, logger: silent });
    const resource = { type: 'memory_store', memory_store_id: STORE, mount_path: MOUNT_PATH };
    try {
      await restart.materialize([resource]);
      if (folderExisted) say('a restart adopted the folder the killed worker left');
      else await restart.finalize();
    } catch (err) {
      if (!folderExisted) say(`a restart with no folder left failed: ${String(err)}`);
      else if (!(err instanceof MemoryMountError) || err.code !== 'mount_path_exists') say(`restart failed with ${String(err)}`);
      else {
        if (err.path !== folder) say(`mount_path_exists names ${err.path}, not ${folder}`);
        if (!/remove it/.test(err.message) || !err.message.includes(folder)) say(`mount_path_exists does not tell the operator what to do: ${err.message}`);
      }
    }
    if (folderExisted && !sameTree(tree, walk(folder))) say('the refused restart changed the folder');
    if (folderExisted && restartClient.requests.length > 0) say('the refused restart sent requests to the store');

    return { seed, killedWhile: phase, folderExisted, memoryFiles, tempFilesLeft, problems };
  } finally {
    if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
    await server.close();
    await rm(base, { recursive: true, force: true });
  }
}

type Entry = { kind: 'file' | 'directory' | 'symlink' | 'other'; sha?: string; target?: string };

/** Every entry under `dir` by `/relative/path`, links not followed; empty when `dir` is absent. */
function walk(dir: string, rel = '', out = new Map<string, Entry>()): Map<string, Entry> {
  let names: string[];
  try {
    names = readdirSync(join(dir, rel));
  } catch {
    return out;
  }
  for (const name of names.sort()) {
    const path = `${rel}/${name}`;
    const stat = lstatSync(join(dir, path));
    if (stat.isSymbolicLink()) out.set(path, { kind: 'symlink', target: readlinkSync(join(dir, path)) });
    else if (stat.isFile()) out.set(path, { kind: 'file', sha: sha256(readFileSync(join(dir, path))) });
    else if (stat.isDirectory()) {
      out.set(path, { kind: 'directory' });
      walk(dir, path, out);
    } else out.set(path, { kind: 'other' });
  }
  return out;
}

function sameTree(a: Map<string, Entry>, b: Map<string, Entry>): boolean {
  return a.size === b.size && [...a].every(([p, e]) => b.get(p)?.kind === e.kind && b.get(p)?.sha === e.sha && b.get(p)?.target === e.target);
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function markerNames(text: string, storeId: string): boolean {
  try {
    return (JSON.parse(text) as { memory_store_id?: unknown }).memory_store_id === storeId;
  } catch {
    return false;
  }
}

/** Runs `task` over `items`, at most `limit` at a time, keeping the order of results. */
async function inBatches<T, R>(items: T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
