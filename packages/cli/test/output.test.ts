import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FinalizeReport, StoreSyncReport, SyncReport } from '@memory-mounter/core';
import { Output } from '../src/output.js';
import type { FolderDiff } from '../src/local-diff.js';

/**
 * Issue 20 item 3: no human line the CLI prints holds a control character that came from a file
 * name (status, push --dry-run, a pass's line, the finalize summary, errors). --json is JSON.
 */
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/u;
const HOSTILE = ['/t\u001b]0;pwned\u0007.md', '/e\u001b[2K\r.md', '/f.md\ndeleted /a.md', '/r\u202eexe.md', '/s\u2028x.md'];

let written: string[];
let restore: () => void;
beforeEach(() => {
  written = [];
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof process.stderr.write;
  restore = () => {
    process.stdout.write = out;
    process.stderr.write = err;
  };
});
afterEach(() => restore());

const store = (): StoreSyncReport =>
  ({
    memoryStoreId: 'memstore_x',
    name: 'x',
    path: '/mnt/x',
    access: 'read_write',
    status: 'synced',
    pulled: HOSTILE,
    pushed: HOSTILE,
    deletedLocal: HOSTILE,
    deletedRemote: [],
    renamed: [{ from: HOSTILE[0]!, to: HOSTILE[2]! }],
    conflicts: HOSTILE,
    refused: [],
    pendingDeletions: [],
    skippedPaths: [],
    errors: HOSTILE.map((path) => ({ path, operation: 'pull', kind: 'filesystem', message: `EIO ${path}` })),
    cutOff: [],
  }) as unknown as StoreSyncReport;

/** What the human output printed, line by line (each ends in a newline): none with a raw control. */
function printedLines(): string[] {
  const text = written.join('');
  expect(text).not.toMatch(RAW);
  expect(text.endsWith('\n')).toBe(true);
  return text.slice(0, -1).split('\n');
}

describe('the CLI text output and hostile file names', () => {
  it('a pass line, the finalize summary, status, push --dry-run and an error: every name escaped, no forged line', () => {
    const out = new Output(false);
    const sync: SyncReport = { startedAt: 0, finishedAt: 0, forced: true, stores: [store()] };
    out.pass(sync);
    expect(printedLines()).toHaveLength(1);

    written = [];
    const report = {
      outcome: 'completed',
      sync,
      flush: sync,
      unpushed: HOSTILE.map((path) => ({ memoryStoreId: 'memstore_x', path, code: 'push_failed', reason: `push failed for ${path}` })),
      removed: HOSTILE,
      leftInPlace: HOSTILE.map((path) => ({ path, reason: `left: ${path}` })),
      timedOut: { sync: false, flush: false },
    } as unknown as FinalizeReport;
    out.finalized(report);
    // The summary, then one line per folder left and per change not pushed.
    expect(printedLines()).toHaveLength(1 + 2 * HOSTILE.length);

    const diff: FolderDiff = {
      dir: '/mnt/x\u001b[1A',
      memoryStoreId: 'memstore_x',
      new: HOSTILE,
      modified: HOSTILE,
      deleted: HOSTILE,
      remoteChanged: HOSTILE,
      conflicts: [HOSTILE[1]!],
      blocked: HOSTILE,
    } as unknown as FolderDiff;
    written = [];
    out.diff(diff);
    // The folder, five lists of every name, and the one conflict.
    expect(printedLines()).toHaveLength(1 + 5 * HOSTILE.length + 1);
    written = [];
    out.dryRun(diff);
    expect(printedLines().filter((l) => l.startsWith('  '))).toHaveLength(3 * (HOSTILE.length - 1) + 1);

    written = [];
    out.error(`cannot read ${HOSTILE[2]}`, 'io');
    expect(printedLines()).toHaveLength(1);
  });

  it('--json stays JSON: the names exactly, one object per line', () => {
    const out = new Output(true);
    out.pass({ startedAt: 0, finishedAt: 0, forced: true, stores: [store()] });
    const lines = written.join('').split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).pushed).toEqual(HOSTILE);
  });
});
