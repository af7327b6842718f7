import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FinalizeReport } from '@memory-mounter/core';
import { bundleChild } from './child-bundle.js';

/**
 * Issue 18 item 3 at a real descriptor limit (`ulimit -n` in a child, fd-limit-child.ts): every
 * edit the final scans could not read is either pushed after all (the scan is taken again within
 * the final sync) or named in `unpushed`, and then its folder is kept. Never removed unread.
 */
const run = promisify(execFile);

interface ChildResult {
  dir: string;
  edits: number;
  report: FinalizeReport;
  store: Record<string, string>;
  onDisk: Record<string, string | null>;
}

describe('finalize at a real descriptor limit (ulimit -n 256)', () => {
  let work: string;
  let bundle: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'mm-fd-limit-'));
    bundle = join(work, 'fd-limit-child.cjs');
    await bundleChild(fileURLToPath(new URL('./fd-limit-child.ts', import.meta.url)), bundle);
  }, 60_000);
  afterAll(() => rm(work, { recursive: true, force: true }));

  const child = async (name: string, spare: number, releaseMs: number): Promise<ChildResult> => {
    const root = join(work, name);
    const { stdout } = await run('bash', ['-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, bundle, root, String(spare), String(releaseMs)], { timeout: 60_000 });
    return JSON.parse(stdout) as ChildResult;
  };

  /** Each edit is in the store, or named unpushed (itself, or the folder as `/`) and still on disk; anything named keeps the folder. */
  const expectNothingLostUnnamed = (r: ChildResult) => {
    const named = new Set(r.report.unpushed.map((u) => u.path));
    for (let i = 0; i < r.edits; i++) {
      const path = `/n${i}.md`;
      const edited = `note ${i}, edited\n`;
      if (r.store[path] === edited) continue;
      expect(named.has(path) || named.has('/'), `${path} neither pushed nor named`).toBe(true);
      expect(r.onDisk[path]).toBe(edited);
    }
    if (named.size > 0) {
      expect(r.report.removed).toEqual([]);
      expect(r.report.leftInPlace).toMatchObject([{ path: r.dir, code: 'unreadable_kept' }]);
    }
  };

  it('the limit holds to the end, no descriptor spare: nothing is pushed, the folder is named and kept', { timeout: 90_000 }, async () => {
    const r = await child('held', 0, -1);
    expectNothingLostUnnamed(r);
    expect(r.report.unpushed.length).toBeGreaterThan(0);
  });

  it('the limit holds to the end, a few descriptors spare: what was read is pushed, the rest named, the folder kept', { timeout: 90_000 }, async () => {
    const r = await child('partial', 20, -1);
    expectNothingLostUnnamed(r);
  });

  it('the limit passes a moment into finalize: the scan taken again reads every edit, all 120 pushed, the folder removed', { timeout: 90_000 }, async () => {
    const r = await child('passes', 0, 20);
    expectNothingLostUnnamed(r);
    expect(Object.values(r.store).filter((c) => c.endsWith(', edited\n'))).toHaveLength(r.edits);
    expect(r.report.unpushed).toEqual([]);
    expect(r.report.removed).toEqual([r.dir]);
  });
});
