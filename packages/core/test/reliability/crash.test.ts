import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTempFileName, MARKER_FILE, MemoryMounter, MemoryMountError, parseRecord, recordFileName, type Logger, type StateRecord } from '@memory-mounter/core';
import { InMemoryStoreClient, MemoryApiServer } from '@memory-mounter/testing';
import { bundleChild } from './child-bundle.js';
import type { CrashChildArgs, RecoverChildResult } from './crash-child.js';
import { seededRandom, selfCheckingContent, selfCheckProblem, sha256 } from './self-checking-content.js';

/**
 * Crash safety (issue 5, part 3). A child process (crash-child.ts) mounts a store served by this
 * process's MemoryApiServer — the store outlives the worker, as in production — and loops
 * agent-writes and reconciles while another writer here changes the store. It is killed with
 * SIGKILL at a random moment. Then:
 *
 *  C1 no partial memory file: every file in the mount is a complete, self-checking content that
 *     the store or the agent really had (the marker, if present, is complete too). The one
 *     exception is a folder whose record still says `materializing`: never handed to the agent,
 *     its download creates files in place, so one may be part-written, and then recover must
 *     remove that folder whole, pushing nothing from it (checked after C4);
 *  C2 nothing partial and no temp file or marker was ever uploaded: every memory in the store
 *     is a complete content the store or the agent had, at a path that is neither;
 *  C3 a restart with a fresh MemoryMounter on the same path, before any recovery, refuses with
 *     `mount_path_exists`, names the folder and tells the operator what to do, and touches neither
 *     folder, store, nor the dead worker's state record.
 *
 * The child keeps crash-recovery records (`stateDir`). After C1-C3 the next worker starts (the
 * same bundle, `mode: 'recover'`): it runs `MemoryMounter.recover`, then mounts the same store at
 * the same path and finalizes. Then:
 *
 *  C4 0 lost edits: every file the agent had on disk at the kill (one of its journaled versions)
 *     is in the store, or was in it at some point (the store's version history: it was pushed
 *     and then overwritten by the other writer), or lost a real conflict, which recover reported
 *     and which the store's state before recovery confirms (it had moved away from the recorded
 *     baseline);
 *  C5 0 refused restarts: recover left nothing (no folder left, none unvouched, no unreadable
 *     record) and the restart's materialize succeeded;
 *  C6 nothing leaks: after the restart's finalize the folder and every state record are gone
 *     (a temp file of a record write the kill cut short may stay: counted, removed by a later
 *     recover).
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
  /** Files part-written by a download in place, in a folder whose record says it was never mounted. */
  partialWhileMaterializing: number;
  tempFilesLeft: number;
  /** Files the agent had on disk at the kill (its own versions). */
  agentEdits: number;
  /** ...of which recover pushed. */
  pushedByRecover: number;
  /** ...that reached the store and were overwritten by the other writer before the kill. */
  supersededInStore: number;
  /** ...that lost a real conflict (store wins), reported by recover. */
  conflictsStoreWon: number;
  lost: number;
  refusedRestart: boolean;
  foldersRecovered: number;
  /** Temp files of record writes cut short by the kill, still in stateDir (garbage; see C6). */
  stateTempFilesLeft: number;
  recoverMs: number;
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

  it(`${CRASH_SEEDS} kills: no partial file, nothing partial or temporary uploaded; recover loses no edit and a restart succeeds`, { timeout: 60_000 + CRASH_SEEDS * 6_000 }, async () => {
    const seeds = Array.from({ length: CRASH_SEEDS }, (_, i) => i + 1);
    const outcomes = await inBatches(seeds, PARALLEL, (seed) => crashOnce(bundle, seed));
    const count = (f: (o: CrashOutcome) => boolean) => outcomes.filter(f).length;
    const sum = (f: (o: CrashOutcome) => number) => outcomes.reduce((n, o) => n + f(o), 0);
    console.log(
      `crash: kills=${outcomes.length}`,
      JSON.stringify({
        killedWhile: {
          starting: count((o) => o.killedWhile === 'starting'),
          materializing: count((o) => o.killedWhile === 'materializing'),
          syncing: count((o) => o.killedWhile === 'syncing'),
        },
        foldersLeftByKill: count((o) => o.folderExisted),
        cleanStarts: count((o) => !o.folderExisted),
        tempFilesLeft: sum((o) => o.tempFilesLeft),
        partialWhileMaterializing: sum((o) => o.partialWhileMaterializing),
        memoryFilesChecked: sum((o) => o.memoryFiles),
        foldersRecovered: sum((o) => o.foldersRecovered),
        agentEditsOnDisk: sum((o) => o.agentEdits),
        pushedByRecover: sum((o) => o.pushedByRecover),
        supersededInStore: sum((o) => o.supersededInStore),
        conflictsStoreWon: sum((o) => o.conflictsStoreWon),
        lostEdits: sum((o) => o.lost),
        refusedRestarts: count((o) => o.refusedRestart),
        stateTempFilesLeft: sum((o) => o.stateTempFilesLeft),
        recoverMsMax: Math.max(0, ...outcomes.map((o) => o.recoverMs)),
        violations: sum((o) => o.problems.length),
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
  const stateDir = join(base, 'state');
  await mkdir(memoryRoot);
  await mkdir(stateDir);
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
      mode: 'work',
      stateDir,
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
    const neverMounted = readStateRecord(stateDir, folder)?.phase === 'materializing';
    let partialWhileMaterializing = 0;
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
      if (problem && neverMounted) partialWhileMaterializing++;
      else if (problem) say(`${rel} is partial: ${problem}`);
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
    const stateBefore = stateFiles(stateDir);
    const restart = new MemoryMounter({ storeClient: restartClient, memoryRoot, stateDir, logger: silent });
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
    if (folderExisted && JSON.stringify(stateFiles(stateDir)) !== JSON.stringify(stateBefore)) say("the refused restart changed the dead worker's state record");

    // The next worker starts: recover, then mount the same store at the same path.
    const agentOnDisk = new Map<string, string>();
    for (const [rel, entry] of tree) if (entry.kind === 'file' && entry.sha && agentVersions.has(entry.sha)) agentOnDisk.set(rel, entry.sha);
    const record = readStateRecord(stateDir, folder);
    const storeBefore = new Map(Object.entries(server.snapshot(STORE)).map(([p, c]) => [p, sha256(c)]));
    const recoverStarted = Date.now();
    const result = await runRecoverChild(bundle, { ...args, mode: 'recover' });
    const recoverMs = Date.now() - recoverStarted;
    const outcome: CrashOutcome = {
      seed,
      killedWhile: phase,
      folderExisted,
      memoryFiles,
      partialWhileMaterializing: 0,
      tempFilesLeft,
      agentEdits: agentOnDisk.size,
      pushedByRecover: 0,
      supersededInStore: 0,
      conflictsStoreWon: 0,
      lost: 0,
      refusedRestart: false,
      foldersRecovered: 0,
      stateTempFilesLeft: 0,
      recoverMs,
      problems,
    };
    if (typeof result === 'string') {
      say(`the recovering worker failed: ${result}`);
      outcome.refusedRestart = true;
      return outcome;
    }
    const { recovery } = result;
    const recovered = recovery.stores.find((s) => s.path === folder);
    outcome.foldersRecovered = recovery.stores.filter((s) => s.outcome === 'recovered').length;
    for (const s of recovery.stores) if (s.outcome === 'left') say(`recover left ${s.path}: ${s.left?.code} ${s.left?.reason} ${JSON.stringify(s.unpushed)}`);
    for (const u of recovery.unvouched) say(`recover could not vouch for ${u.path}: ${u.reason}`);
    for (const r of recovery.unreadableRecords) say(`state record ${r.file} unreadable: ${r.reason}`);
    if (folderExisted && !recovered) say('the folder the kill left has no state record');

    // C1's exception: a folder that may hold a part-written file goes whole, and nothing of it is pushed.
    outcome.partialWhileMaterializing = partialWhileMaterializing;
    if (partialWhileMaterializing > 0 && !(recovered?.outcome === 'recovered' && recovered.neverMounted && recovered.pushed.length === 0)) {
      say(`a folder never mounted holds ${partialWhileMaterializing} part-written file(s), and recover did not remove it whole: ${JSON.stringify(recovered ?? null)}`);
    }

    // C4: every edit on disk at the kill is in the store, was in it, or lost a real conflict.
    const after = server.snapshot(STORE);
    const history = new Set(server.versions(STORE).map((v) => `${v.path}\0${v.content_sha256}`));
    for (const [path, sha] of agentOnDisk) {
      if (after[path] !== undefined && sha256(after[path]) === sha) {
        if (recovered?.pushed.includes(path)) outcome.pushedByRecover++;
        continue;
      }
      if (history.has(`${path}\0${sha}`)) {
        outcome.supersededInStore++;
        continue;
      }
      if (recovered?.conflicts.includes(path)) {
        const was = storeBefore.get(path);
        const real = was !== record?.baseline[path] && was !== record?.unsettled_writes[path];
        if (real) outcome.conflictsStoreWon++;
        else say(`${path}: a false conflict dropped the agent's edit (store ${was}, recorded ${record?.baseline[path]})`);
        continue;
      }
      outcome.lost++;
      say(`${path}: the agent's edit on disk at the kill is not in the store (recover: ${JSON.stringify(recovered ?? null)})`);
    }

    // C5, C6: the restart mounts the path, and its finalize leaves nothing behind.
    if (result.restart !== 'ok') {
      outcome.refusedRestart = true;
      say(`the restart after recover failed: ${result.restart}`);
    }
    if (result.finalized && result.finalized.leftInPlace.length > 0) say(`the restart's finalize left ${result.finalized.leftInPlace.join('; ')}`);
    if (exists(folder)) say('the folder is still there after the restart finalized');
    // Only records count: a temp file of a record write the kill cut short is garbage a later
    // recover removes (once its writer is provably gone), never read as a record.
    const leftover = stateFiles(stateDir).filter((f) => f.startsWith('mm-state-') && !f.includes('.tmp-'));
    if (leftover.length > 0) say(`state records left: ${leftover.join(', ')}`);
    outcome.stateTempFilesLeft = stateFiles(stateDir).length - leftover.length;
    return outcome;
  } finally {
    if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
    await server.close();
    await rm(base, { recursive: true, force: true });
  }
}

/** The next worker's start-up, in a child: recover, restart, finalize. A string when it failed. */
async function runRecoverChild(bundle: string, args: CrashChildArgs): Promise<RecoverChildResult | string> {
  const child = spawn(process.execPath, [bundle, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = once(child, 'exit');
  const timedOut = await Promise.race([exited.then(() => false), sleep(60_000).then(() => true)]);
  if (timedOut) {
    child.kill('SIGKILL');
    await exited;
    return 'it did not finish within 60 s';
  }
  const line = stdout.split('\n').find((l) => l.startsWith('result '));
  if (!line) return `no result (exit ${child.exitCode}): ${stderr.trim()}`;
  return JSON.parse(line.slice('result '.length)) as RecoverChildResult;
}

/** Names in stateDir, with each file's sha, sorted. */
function stateFiles(stateDir: string): string[] {
  return readdirSync(stateDir)
    .sort()
    .map((name) => `${name}:${sha256(readFileSync(join(stateDir, name)))}`);
}

/** The state record of the store folder at `folder`, if there is a readable one. */
function readStateRecord(stateDir: string, folder: string): StateRecord | null {
  try {
    const parsed = parseRecord(readFileSync(join(stateDir, recordFileName(folder))));
    return parsed.ok ? parsed.record : null;
  } catch {
    return null;
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
