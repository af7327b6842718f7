import { describe, expect, it } from 'vitest';
import { StoreError, type StoreClient, type StoreMemoryVersion } from '@memory-mounter/core';
import type { InMemoryStoreClient } from '@memory-mounter/testing';
import { sentThenDeleted } from '../src/decide/push-history.js';
import { DISKS, STORE, useHarness } from './harness.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 12, 0, s)).toISOString();
const v = (op: StoreMemoryVersion['operation'], sha: string | null, s: number): StoreMemoryVersion => ({
  id: `memver_${op}_${s}`,
  memory_id: 'mem_1',
  operation: op,
  path: '/a.md',
  content_sha256: sha,
  created_at: at(s),
  redacted_at: null,
});

describe('sentThenDeleted, row by row', () => {
  const sha = { sent: 'L', base: 'B' };
  it('sent after every base version, then deleted: true', () => {
    expect(sentThenDeleted([v('created', 'B', 1), v('modified', 'L', 2), v('deleted', null, 3)], sha)).toBe(true);
    // In any order: the API promises none.
    expect(sentThenDeleted([v('deleted', null, 3), v('created', 'B', 1), v('modified', 'L', 2)], sha)).toBe(true);
  });
  it('no version holding the base (retention dropped it): false', () => {
    expect(sentThenDeleted([v('modified', 'L', 2), v('deleted', null, 3)], sha)).toBe(false);
  });
  it('never sent: false', () => {
    expect(sentThenDeleted([v('created', 'B', 1), v('deleted', null, 3)], sha)).toBe(false);
  });
  it('the sent content only before the base (an old content the agent went back to): false', () => {
    expect(sentThenDeleted([v('created', 'L', 1), v('modified', 'B', 2), v('deleted', null, 3)], sha)).toBe(false);
  });
  it('a tie between sent and base, or a timestamp that does not parse: false', () => {
    expect(sentThenDeleted([v('created', 'B', 2), v('modified', 'L', 2), v('deleted', null, 3)], sha)).toBe(false);
    expect(sentThenDeleted([v('created', 'B', 1), { ...v('modified', 'L', 2), created_at: 'yesterday' }, v('deleted', null, 3)], sha)).toBe(false);
  });
  it('no deletion at or after the sent version: false', () => {
    expect(sentThenDeleted([v('created', 'B', 1), v('modified', 'L', 2)], sha)).toBe(false);
  });
});

/**
 * `inner`, whose first update is applied, then the memory is deleted by another writer (who
 * read that content), then the update is answered 503: the engine's retry meets `not_found`.
 */
function appliedThenDeletedByAnother(inner: InMemoryStoreClient): StoreClient {
  let first = true;
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key !== 'update') {
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return async (...args: Parameters<StoreClient['update']>) => {
        const written = await target.update(...args);
        if (!first) return written;
        first = false;
        await target.delete(args[0], args[1], { expected_content_sha256: written.content_sha256 });
        throw new StoreError('unavailable', 'injected 503 after the update was applied', { status: 503 });
      };
    },
  });
}

describe.each(DISKS)('an update that landed, was deleted by another writer, then met not_found on its retry, on %s', (disk) => {
  const h = useHarness(disk);

  it('is not re-created: the deletion made after the content was seen stands, and the file follows it', async () => {
    const m = await h.mountNotes({ storeClient: appliedThenDeletedByAnother(h.client), syncTimeout: 10 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    // The content reached the store: pushed, and not brought back after its deletion.
    expect(first.pushed).toEqual(['/a.md']);
    expect(h.client.snapshot(STORE)['/a.md']).toBeUndefined();
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.deletedLocal).toEqual(['/a.md']);
    expect(await h.exists(`${h.notesDir}/a.md`)).toBe(false);
    expect(h.client.snapshot(STORE)['/a.md']).toBeUndefined();
    await m.finalize();
    expect(h.client.snapshot(STORE)['/a.md']).toBeUndefined();
  });

  it('without a change feed the history is unknown: the memory is re-created from the file (the only copy, as far as the engine knows)', async () => {
    const inner = appliedThenDeletedByAnother(h.client);
    const noFeed: StoreClient = { list: inner.list, get: inner.get, create: inner.create, update: inner.update, delete: inner.delete };
    const m = await h.mountNotes({ storeClient: noFeed, syncTimeout: 10 });
    await h.write(`${h.notesDir}/a.md`, 'alpha, edited');
    await m.reconcile({ force: true });
    expect(h.client.snapshot(STORE)['/a.md']).toBe('alpha, edited');
    expect(await h.read(`${h.notesDir}/a.md`)).toBe('alpha, edited');
    await m.finalize();
  });
});
