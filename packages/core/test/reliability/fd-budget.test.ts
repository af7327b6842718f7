import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryApiServer } from '@memory-mounter/testing';
import { bundleChild } from './child-bundle.js';
import type { FdBudgetArgs } from './fd-budget-child.js';

/**
 * Issue 19 item 7 at a real limit: 8 stores of 300 folders each, a chain of 1,100 folders in one,
 * through the real SDK on the emulator, in a child under `ulimit -n 256` (fd-budget-child.ts):
 * materialize, a pass and finalize succeed and leave nothing; a worker killed after its pass
 * leaves folders that the next one's recover, under the same limit, pushes and removes. Before
 * the budget, eight stores' caches alone (256 handles each) were past the limit, and the removal
 * held one descriptor per level of the chain.
 */
const LIMIT = 256;
const STORES = Array.from({ length: 8 }, (_, i) => `memstore_fd${i}`);
const EDITS = 30;
const CHAIN = 1_100;
/** A store's 300 memories: 10 folders of 30 folders of one file each. */
const PATHS = Array.from({ length: 300 }, (_, i) => `/g${i % 10}/f${i}/m.md`);

interface Result {
  error?: string;
  peak: number;
  mounted?: number;
  pass?: { status: string; pushed: number; errors: number }[];
  finalize?: { removed: number; leftInPlace: unknown[]; unpushed: number };
  recovery?: { path: string; outcome: string; pushed: number; unpushed: number; left?: string }[];
}

describe(`8 stores x 300 folders and a ${CHAIN}-deep chain under ulimit -n ${LIMIT}`, () => {
  let work: string;
  let bundle: string;
  beforeAll(async () => {
    work = await realpath(await mkdtemp(join(tmpdir(), 'mm-fd-budget-')));
    bundle = join(work, 'fd-budget-child.cjs');
    await bundleChild(fileURLToPath(new URL('./fd-budget-child.ts', import.meta.url)), bundle);
  }, 60_000);
  afterAll(() => rm(work, { recursive: true, force: true }));

  const setUp = async (name: string) => {
    const server = new MemoryApiServer();
    await server.start();
    for (const id of STORES) server.seed(id, Object.fromEntries(PATHS.map((path) => [path, `${path}\n`])));
    const base = join(work, name);
    const args = { baseURL: server.baseURL, memoryRoot: join(base, 'mnt-memory'), stateDir: join(base, 'state'), storeIds: STORES, paths: PATHS, edits: EDITS, chain: CHAIN };
    await mkdir(args.memoryRoot, { recursive: true });
    await mkdir(args.stateDir, { recursive: true });
    return { server, args };
  };
  const child = (args: FdBudgetArgs, limit = LIMIT) =>
    new Promise<Result>((resolve, reject) => {
      execFile('bash', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, bundle, JSON.stringify(args)], { timeout: 90_000 }, (err, stdout) => {
        const line = stdout.split('\n').find((l) => l.startsWith('result '));
        if (line) resolve(JSON.parse(line.slice('result '.length)) as Result);
        else reject(err ?? new Error(`no result: ${stdout}`));
      });
    });
  const editedEverywhere = (server: MemoryApiServer, round: number) => {
    for (const id of STORES) {
      const store = server.snapshot(id);
      for (let i = 0; i < EDITS; i++) {
        const path = PATHS[i * Math.floor(PATHS.length / EDITS)]!;
        expect(store[path], `${id} ${path}`).toBe(`${path}, edited (round ${round})\n`);
      }
    }
  };

  it('materialize, a pass and finalize succeed, every edit is pushed, and nothing is left', { timeout: 120_000 }, async () => {
    const { server, args } = await setUp('session');
    try {
      const r = await child({ ...args, mode: 'session' });
      expect(r.error).toBeUndefined();
      expect(r.mounted).toBe(STORES.length);
      expect(r.pass).toEqual(STORES.map(() => ({ status: 'synced', pushed: EDITS, errors: 0 })));
      expect(r.finalize).toMatchObject({ removed: STORES.length, leftInPlace: [], unpushed: 0 });
      expect(r.peak).toBeLessThan(LIMIT);
      editedEverywhere(server, 1);
      expect(await readdir(args.memoryRoot)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('under ulimit -n 64 materialize runs out of descriptors: it fails, and leaves no folder and no record behind', { timeout: 120_000 }, async () => {
    const { server, args } = await setUp('starved');
    try {
      const r = await child({ ...args, mode: 'session' }, 64);
      expect(r.error).toMatch(/EMFILE/);
      expect(r.error).not.toMatch(/left on disk/);
      expect(await readdir(args.memoryRoot)).toEqual([]);
      expect(await readdir(args.stateDir)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('a worker killed after its pass: the next one recovers every folder under the same limit', { timeout: 120_000 }, async () => {
    const { server, args } = await setUp('crash');
    try {
      const crashed = await child({ ...args, mode: 'crash' });
      expect(crashed.error).toBeUndefined();
      expect(crashed.pass).toEqual(STORES.map(() => ({ status: 'synced', pushed: EDITS, errors: 0 })));
      expect(await readdir(args.memoryRoot)).toHaveLength(STORES.length);
      const r = await child({ ...args, mode: 'recover' });
      expect(r.error).toBeUndefined();
      expect(r.recovery).toHaveLength(STORES.length);
      for (const s of r.recovery!) expect(s).toMatchObject({ outcome: 'recovered', pushed: EDITS, unpushed: 0 });
      expect(Math.max(crashed.peak, r.peak)).toBeLessThan(LIMIT);
      editedEverywhere(server, 2);
      expect(await readdir(args.memoryRoot)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
