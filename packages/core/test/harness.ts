import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import {
  MARKER_FILE,
  NodeFileSystem,
  MemoryMounter,
  type FileSystem,
  type Logger,
  type MemoryMounterOptions,
  type StoreMemory,
  type StoreMemoryVersion,
} from '@memory-mounter/core';

/**
 * A mounter wired to an in-memory store, a test clock and a recording logger, on either an
 * in-memory filesystem or a real temp dir, so each behaviour can be checked on both.
 */
export type DiskKind = 'memfs' | 'node';
export const DISKS: DiskKind[] = ['memfs', 'node'];

export interface LogLine {
  level: keyof Logger;
  msg: string;
  fields: Record<string, unknown>;
}

export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];
  debug = (msg: string, fields: Record<string, unknown> = {}) => void this.lines.push({ level: 'debug', msg, fields });
  info = (msg: string, fields: Record<string, unknown> = {}) => void this.lines.push({ level: 'info', msg, fields });
  warn = (msg: string, fields: Record<string, unknown> = {}) => void this.lines.push({ level: 'warn', msg, fields });
  error = (msg: string, fields: Record<string, unknown> = {}) => void this.lines.push({ level: 'error', msg, fields });
  warnings(): LogLine[] {
    return this.lines.filter((l) => l.level === 'warn');
  }
}

export interface Harness {
  fs: FileSystem;
  /** Host path standing for /mnt/memory. */
  memoryRoot: string;
  client: InMemoryStoreClient;
  logger: RecordingLogger;
  clock: { now: number; advance(seconds: number): void };
  mounter(options?: Partial<MemoryMounterOptions>): MemoryMounter;
  /** Host path of the Notes store's folder, where notesResource() mounts by default. */
  notesDir: string;
  /** Host path of the marker in notesDir. */
  markerPath: string;
  /**
   * Seeds STORE with `seed`, then returns a mounter made with `options` that has materialized
   * notesResource(`resource`).
   */
  mountNotes(
    options?: Partial<MemoryMounterOptions>,
    seed?: Record<string, string>,
    resource?: Record<string, unknown>,
  ): Promise<MemoryMounter>;
  write(path: string, content: string | Uint8Array): Promise<void>;
  read(path: string): Promise<string | null>;
  exists(path: string): Promise<boolean>;
  remove(path: string): Promise<void>;
  cleanup(): Promise<void>;
}

export async function makeHarness(kind: DiskKind): Promise<Harness> {
  let fs: FileSystem;
  let memoryRoot: string;
  let base: string | undefined;
  if (kind === 'memfs') {
    fs = new MemfsFileSystem({ '/host/mnt/memory': null });
    memoryRoot = '/host/mnt/memory';
  } else {
    base = await realpath(await mkdtemp(join(tmpdir(), 'mm-test-')));
    memoryRoot = join(base, 'mnt-memory');
    fs = new NodeFileSystem();
    await fs.mkdir(memoryRoot, { recursive: true });
  }
  const client = new InMemoryStoreClient();
  const logger = new RecordingLogger();
  const clock = {
    now: 1_000_000,
    advance(seconds: number) {
      clock.now += seconds * 1000;
    },
  };
  const encoder = new TextEncoder();
  const mounter = (options: Partial<MemoryMounterOptions> = {}) =>
    // newFileSettle 0: files written by a test are pushed by the very next pass (its own tests set it).
    new MemoryMounter({ storeClient: client, fileSystem: fs, memoryRoot, now: () => clock.now, logger, newFileSettle: 0, ...options });
  const notesDir = `${memoryRoot}/notes`;
  return {
    fs,
    memoryRoot,
    client,
    logger,
    clock,
    mounter,
    notesDir,
    markerPath: `${notesDir}/${MARKER_FILE}`,
    mountNotes: async (options = {}, seed = SEED, resource = {}) => {
      client.seed(STORE, seed);
      const m = mounter(options);
      await m.materialize([notesResource(resource)]);
      return m;
    },
    write: async (path, content) => {
      const data = typeof content === 'string' ? encoder.encode(content) : content;
      const dir = path.slice(0, path.lastIndexOf('/'));
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(path, data);
    },
    read: async (path) => {
      try {
        return new TextDecoder().decode(await fs.readFile(path));
      } catch {
        return null;
      }
    },
    exists: async (path) => (await fs.lstat(path)) !== null,
    remove: (path) => fs.rm(path, { recursive: true }),
    cleanup: async () => {
      if (base) await rm(base, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh harness on `kind` for every test of the enclosing describe, cleaned up after it. The
 * object returned is the same one throughout, refilled before each test: keep it, not its fields.
 */
export function useHarness(kind: DiskKind): Harness {
  const h = {} as Harness;
  beforeEach(async () => {
    Object.assign(h, await makeHarness(kind));
  });
  afterEach(() => h.cleanup());
  return h;
}

export const STORE = 'memstore_notes';
/** What mountNotes() seeds STORE with unless told otherwise. */
export const SEED: Record<string, string> = { '/a.md': 'alpha', '/b.md': 'beta', '/d/c.md': 'gamma' };
export const notesResource = (over: Record<string, unknown> = {}) => ({
  type: 'memory_store',
  memory_store_id: STORE,
  name: 'Notes',
  ...over,
});

/** For `client.list`: a store that never answers, and ignores the abort signal. */
export const neverAnsweringList = (): AsyncIterable<StoreMemory> => ({
  [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<StoreMemory>>(() => {}) }),
});

/**
 * Makes `client` one without the change feed (no `listVersions`), like a host's client that
 * never implemented it: every pass then lists the store in full. For tests whose subject is the
 * listing itself (how it is bounded, retried, interleaved).
 */
export function withoutChangeFeed(client: InMemoryStoreClient): void {
  Object.assign(client, { listVersions: undefined });
}

/** For `client.listVersions`: a change feed that never answers, and ignores the abort signal. */
export const neverAnsweringFeed = (): AsyncIterable<StoreMemoryVersion> => ({
  [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<StoreMemoryVersion>>(() => {}) }),
});

/**
 * `fs` with its `createFile` (a materialize's in-place create) run through `around`, which is
 * handed the real one; every other call as it is. For tests that plant something at the moment
 * of a create, or cut one short.
 */
export function aroundCreateFile(
  fs: FileSystem,
  around: (create: NonNullable<FileSystem['createFile']>, path: string, data: Uint8Array, opts?: { mode?: number }) => Promise<void>,
): FileSystem {
  const create = fs.createFile?.bind(fs);
  if (!create) throw new Error('aroundCreateFile: this filesystem has no createFile');
  return new Proxy(fs, {
    get(target, prop, receiver) {
      if (prop === 'createFile') return (path: string, data: Uint8Array, opts?: { mode?: number }) => around(create, path, data, opts);
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
