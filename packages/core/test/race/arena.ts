import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryMounter, NodeFileSystem, type Logger, type MemoryMounterOptions, type StoreClient, type StoreMemory } from '@memory-mounter/core';
import { InMemoryStoreClient } from '@memory-mounter/testing';

/**
 * One race class's world, on a real temp dir:
 *
 *   <base>/mnt-memory           memoryRoot; the store is mounted at <base>/mnt-memory/store
 *   <base>/host                 the canary: host files nothing may read, write or remove
 *
 * The canary is built from a template (path -> content, null for a folder). Each file holds a
 * unique random 32-hex secret; files and folders get fixed modes and whole-second mtimes, so a
 * restore is exact and any touch (a write, a chmod, an entry created or removed in a canary
 * folder, which moves the folder's mtime) shows up in the snapshot comparison.
 *
 * Violations are collected, not thrown: a class counts them over all its attempts.
 */

export const STORE = 'memstore_race';
export const MOUNT_PATH = '/mnt/memory/store';
/** SPEC §5: memory content <= 102,400 bytes. */
export const MAX_MEMORY_BYTES = 102_400;

export type CanaryTemplate = Record<string, string | null>;

export interface Violation {
  /** What happened, e.g. 'host entry created'. */
  what: string;
  /** Where: a host path relative to <base>, or a store path. */
  where: string;
  attempt: number;
}

const FILE_MODE = 0o640;
const DIR_MODE = 0o750;
const MTIME_S = 1_600_000_000;

interface Seen {
  type: 'file' | 'directory' | 'symlink' | 'other';
  mode: number;
  size: number;
  mtimeNs: bigint;
  sha?: string;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export class Arena {
  /** Every arena not yet disposed: a class that throws halfway must not leave its temp dir. */
  static readonly #live = new Set<Arena>();
  readonly client = new InMemoryStoreClient();
  /** What the engine is given: the fake store, with every upload inspected for canary secrets. */
  readonly storeClient: StoreClient;
  readonly violations: Violation[] = [];
  /** The attempt now running, for violations' `attempt`. */
  attempt = 0;
  readonly memoryRoot: string;
  readonly host: string;
  readonly storeDir: string;
  /** Canary secret -> the canary file that holds it. */
  readonly secrets = new Map<string, string>();
  #snapshot: Map<string, Seen> = new Map();
  /** Violations already reported by `check`. */
  #checked = 0;

  private constructor(
    readonly base: string,
    private readonly template: CanaryTemplate,
    wrap: (inner: StoreClient) => StoreClient,
  ) {
    this.memoryRoot = join(base, 'mnt-memory');
    this.host = join(base, 'host');
    this.storeDir = join(this.memoryRoot, 'store');
    mkdirSync(this.memoryRoot);
    for (const [path, content] of Object.entries(template)) {
      if (content === null) continue;
      const secret = randomBytes(16).toString('hex');
      this.secrets.set(secret, path);
      this.template[path] = `canary ${path} ${secret}\n${content}`;
    }
    this.buildCanary();
    this.#snapshot = this.readCanary();
    this.storeClient = new UploadInspector(wrap(this.client), (storeId, path, content) => this.inspectUpload(storeId, path, content));
    Arena.#live.add(this);
  }

  /** Disposes of every arena left (afterAll). */
  static async disposeAll(): Promise<void> {
    await Promise.all([...Arena.#live].map((a) => a.dispose()));
  }

  /** `wrap` puts a hostile or instrumented StoreClient between the fake store and the engine. */
  static async create(template: CanaryTemplate, wrap: (inner: StoreClient) => StoreClient = (c) => c): Promise<Arena> {
    const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-race-')));
    return new Arena(base, { ...template }, wrap);
  }

  mounter(options: Partial<MemoryMounterOptions> = {}): MemoryMounter {
    return new MemoryMounter({
      storeClient: this.storeClient,
      fileSystem: new NodeFileSystem(),
      memoryRoot: this.memoryRoot,
      logger: silentLogger,
      ...options,
    });
  }

  async mount(options: Partial<MemoryMounterOptions> = {}): Promise<MemoryMounter> {
    const mounter = this.mounter(options);
    await mounter.materialize([this.resource()]);
    return mounter;
  }

  resource() {
    return { type: 'memory_store', memory_store_id: STORE, name: 'store', mount_path: MOUNT_PATH, access: 'read_write' as const };
  }

  note(what: string, where: string): void {
    this.violations.push({ what, where, attempt: this.attempt });
  }

  /** The canary secrets in `content`, by the canary file that holds each. */
  leakedFrom(content: string): string[] {
    const found: string[] = [];
    for (const [secret, path] of this.secrets) if (content.includes(secret)) found.push(path);
    return found;
  }

  private inspectUpload(storeId: string, path: string, content: string): void {
    for (const from of this.leakedFrom(content)) this.note('canary content uploaded', `${storeId}:${path} <- host/${from}`);
  }

  /**
   * After an attempt, with every racer paused: the canary is exactly as built, nothing new stands
   * beside memoryRoot or in it (except `allowedInRoot`), and no memory holds a canary secret.
   * Each difference is a violation; then the canary and the store are put right (see
   * `cleanStore`), so the next attempt starts clean and a violation is counted once. Returns
   * whether anything was found since the last check, uploads included.
   */
  check(allowedInRoot: readonly string[] = ['store']): boolean {
    const now = this.readCanary();
    const diffs = diffSnapshots(this.#snapshot, now);
    for (const d of diffs) this.note(d.what, `host${d.path}`);
    for (const name of readdirSync(this.base)) if (name !== 'host' && name !== 'mnt-memory') this.note('entry created beside memoryRoot', name);
    for (const name of readdirSync(this.memoryRoot)) if (!allowedInRoot.includes(name)) this.note('entry created in memoryRoot', `mnt-memory/${name}`);
    if (diffs.length > 0) {
      this.buildCanary();
      this.#snapshot = this.readCanary();
    }
    this.cleanStore();
    const found = this.violations.length > this.#checked;
    this.#checked = this.violations.length;
    return found;
  }

  /**
   * Another writer replaces each memory holding canary content with what the agent's own file
   * at that path holds (or deletes it when there is none, or that too holds canary content):
   * after one settling pass the engine's idea of the path is clean again. Without this the
   * engine's baseline would keep the canary's sha, and later attempts would meet a different
   * situation (a pull it refuses instead of a push).
   */
  cleanStore(): void {
    for (const memory of this.client.memories(STORE)) {
      if (this.leakedFrom(memory.content ?? '').length === 0) continue;
      const local = this.agentFile(memory.path);
      if (local !== null && this.leakedFrom(local).length === 0) this.client.writeMemory(STORE, memory.path, local);
      else this.client.deleteMemory(STORE, memory.path);
    }
  }

  /**
   * The agent's file at a memory path: a regular file reached through real folders only, or
   * null. Racers must be paused.
   */
  agentFile(wirePath: string): string | null {
    if (!lstatOrNull(this.storeDir)?.isDirectory()) return null;
    let path = this.storeDir;
    const parts = wirePath.split('/').filter(Boolean);
    for (const [i, part] of parts.entries()) {
      path = join(path, part);
      let stat;
      try {
        stat = lstatSync(path);
      } catch {
        return null;
      }
      const last = i === parts.length - 1;
      if (last ? !stat.isFile() : !stat.isDirectory()) return null;
    }
    return parts.length > 0 ? readFileSync(path, 'utf8') : null;
  }

  /** rm -rf the store folder (never following links), for a fresh mounter. Racers must be paused. */
  removeStoreDir(): void {
    rmSync(this.storeDir, { recursive: true, force: true });
  }

  private buildCanary(): void {
    rmSync(this.host, { recursive: true, force: true });
    mkdirSync(this.host);
    const paths = Object.keys(this.template).sort();
    for (const path of paths) {
      const full = join(this.host, path);
      const content = this.template[path];
      if (content === null || content === undefined) mkdirSync(full, { recursive: true });
      else {
        mkdirSync(join(full, '..'), { recursive: true });
        writeFileSync(full, content);
        chmodSync(full, FILE_MODE);
      }
    }
    // Folders last and deepest first: creating their entries moved their mtimes.
    const dirs = [this.host, ...walk(this.host).filter((p) => lstatSync(p).isDirectory())].sort((a, b) => b.length - a.length);
    for (const path of walk(this.host)) if (lstatSync(path).isFile()) utimesSync(path, MTIME_S, MTIME_S);
    for (const dir of dirs) {
      chmodSync(dir, DIR_MODE);
      utimesSync(dir, MTIME_S, MTIME_S);
    }
  }

  private readCanary(): Map<string, Seen> {
    const out = new Map<string, Seen>();
    for (const full of [this.host, ...walk(this.host)]) {
      const s = lstatSync(full, { bigint: true });
      const type = s.isSymbolicLink() ? 'symlink' : s.isFile() ? 'file' : s.isDirectory() ? 'directory' : 'other';
      const seen: Seen = { type, mode: Number(s.mode & 0o7777n), size: Number(s.size), mtimeNs: s.mtimeNs };
      if (type === 'file') seen.sha = createHash('sha256').update(readFileSync(full)).digest('hex');
      out.set(full.slice(this.host.length) || '/', seen);
    }
    return out;
  }

  dispose(): Promise<void> {
    Arena.#live.delete(this);
    return rm(this.base, { recursive: true, force: true });
  }
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** Every path under `dir`, links listed but never entered. */
export function walk(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const full = join(dir, name);
    out.push(full);
    try {
      if (lstatSync(full).isDirectory()) out.push(...walk(full));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

function diffSnapshots(before: Map<string, Seen>, after: Map<string, Seen>): { what: string; path: string }[] {
  const out: { what: string; path: string }[] = [];
  for (const [path, a] of after) {
    const b = before.get(path);
    if (!b) out.push({ what: `host ${a.type} created`, path });
    else if (b.type !== a.type) out.push({ what: `host ${b.type} replaced by a ${a.type}`, path });
    else if (b.sha !== a.sha || b.size !== a.size) out.push({ what: 'host file content modified', path });
    else if (b.mode !== a.mode) out.push({ what: `host ${a.type} mode changed`, path });
    else if (b.mtimeNs !== a.mtimeNs) {
      out.push({ what: a.type === 'directory' ? 'host folder mtime moved (an entry was created or removed in it)' : 'host file mtime moved', path });
    }
  }
  for (const [path, b] of before) if (!after.has(path)) out.push({ what: `host ${b.type} removed`, path });
  return out;
}

/**
 * A StoreClient in front of another that shows each create/update's path and content to
 * `inspect` before passing it on. Updates name a memory by id: its path is looked up first.
 */
class UploadInspector implements StoreClient {
  readonly #paths = new Map<string, string>();

  constructor(
    private readonly inner: StoreClient,
    private readonly inspect: (storeId: string, path: string, content: string) => void,
  ) {}

  async *list(storeId: string, opts?: Parameters<StoreClient['list']>[1]): AsyncIterable<StoreMemory> {
    for await (const m of this.inner.list(storeId, opts)) {
      this.#paths.set(m.id, m.path);
      yield m;
    }
  }

  async get(storeId: string, memoryId: string, opts?: { signal?: AbortSignal }): Promise<StoreMemory> {
    const m = await this.inner.get(storeId, memoryId, opts);
    this.#paths.set(m.id, m.path);
    return m;
  }

  create(storeId: string, input: { path: string; content: string }, opts?: { signal?: AbortSignal }): Promise<StoreMemory> {
    this.inspect(storeId, input.path, input.content);
    return this.inner.create(storeId, input, opts);
  }

  update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts?: { signal?: AbortSignal },
  ): Promise<StoreMemory> {
    if (input.content !== undefined) this.inspect(storeId, input.path ?? this.#paths.get(memoryId) ?? memoryId, input.content);
    return this.inner.update(storeId, memoryId, input, opts);
  }

  delete(storeId: string, memoryId: string, opts?: { expected_content_sha256?: string; signal?: AbortSignal }): Promise<void> {
    return this.inner.delete(storeId, memoryId, opts);
  }
}

/** Counts violations by what happened, with a few places each, for the failure message. */
export function describeViolations(violations: readonly Violation[], examples = 3): string {
  const byWhat = new Map<string, Violation[]>();
  for (const v of violations) byWhat.set(v.what, [...(byWhat.get(v.what) ?? []), v]);
  return [...byWhat]
    .sort((a, b) => b[1].length - a[1].length)
    .map(([what, vs]) => {
      const wheres = [...new Set(vs.map((v) => v.where))];
      return `${vs.length} x ${what}: ${wheres.slice(0, examples).join(', ')}${wheres.length > examples ? ', …' : ''}`;
    })
    .join('\n');
}
