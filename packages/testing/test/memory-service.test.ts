import { sha256Hex } from '@memory-mounter/core';
import { InMemoryStoreClient, MemoryApiServer, ServiceRefusal, type MemoryService } from '@memory-mounter/testing';
import { describe, expect, it } from 'vitest';

// The helpers both fakes inherit from the one service model: same names, same rules. Each case
// runs on both, so a helper that behaved differently on one would fail here.
const STORE = 'memstore_helpers';
const FAKES: [string, () => MemoryService][] = [
  ['InMemoryStoreClient', () => new InMemoryStoreClient()],
  ['MemoryApiServer', () => new MemoryApiServer()],
];

describe.each(FAKES)('service helpers on %s', (_name, make) => {
  it('writeMemory creates, then updates in place keeping the id; renameMemory keeps id and content', () => {
    const fake = make();
    const created = fake.writeMemory(STORE, '/a.md', 'one');
    const updated = fake.writeMemory(STORE, '/a.md', 'two');
    expect(updated).toMatchObject({ id: created.id, content_sha256: sha256Hex('two') });
    const renamed = fake.renameMemory(STORE, '/a.md', '/n/b.md');
    expect(renamed).toMatchObject({ id: created.id, path: '/n/b.md', content: 'two' });
    expect(fake.snapshot(STORE)).toEqual({ '/n/b.md': 'two' });
    expect(fake.versions(STORE).map((v) => [v.operation, v.path])).toEqual([
      ['modified', '/n/b.md'],
      ['modified', '/a.md'],
      ['created', '/a.md'],
    ]);
  });

  it('deleteMemory removes and records a deletion; it throws for a path with no memory', () => {
    const fake = make();
    const [memory] = fake.seed(STORE, { '/a.md': 'a' });
    expect(fake.deleteMemory(STORE, '/a.md').id).toBe(memory!.id);
    expect(fake.snapshot(STORE)).toEqual({});
    expect(fake.versions(STORE)[0]).toMatchObject({ operation: 'deleted', memory_id: memory!.id });
    expect(() => fake.deleteMemory(STORE, '/a.md')).toThrow(/no memory at \/a\.md/);
    expect(() => fake.renameMemory(STORE, '/a.md', '/b.md')).toThrow(/no memory at \/a\.md/);
  });

  it.each([
    ['a path taken', { '/a.md': 'a', '/b.md': 'b' }, '/b.md'],
    ['a path below a memory', { '/a.md': 'a', '/b': 'b' }, '/b/a.md'],
    ['a path above a memory', { '/a.md': 'a', '/d/x.md': 'x' }, '/d'],
  ])('renameMemory onto %s is the service\'s path_conflict, and changes nothing', (_why, files, to) => {
    const fake = make();
    fake.seed(STORE, files);
    const err = catchError(() => fake.renameMemory(STORE, '/a.md', to));
    expect(err).toBeInstanceOf(ServiceRefusal);
    expect(err).toMatchObject({ code: 'path_conflict' });
    expect(fake.snapshot(STORE)).toEqual(files);
  });

  it.each([
    ['a dot-dot segment', '/../escape.md'],
    ['a lone surrogate', '/a\ud800.md'],
    ['no leading slash', 'a.md'],
  ])('seed and writeMemory refuse %s, as the service would', (_why, path) => {
    const fake = make();
    expect(catchError(() => fake.seed(STORE, { [path]: 'x' }))).toMatchObject({ code: 'invalid_request' });
    expect(catchError(() => fake.writeMemory(STORE, path, 'x'))).toMatchObject({ code: 'invalid_request' });
    expect(fake.snapshot(STORE)).toEqual({});
  });

  it('plantMemory puts what the service would refuse: a bad path, an overlap, oversized content', () => {
    const fake = make();
    fake.seed(STORE, { '/d/x.md': 'x' });
    fake.plantMemory(STORE, '/../escape.md', 'e');
    fake.plantMemory(STORE, '/d', 'a memory where a folder is');
    fake.plantMemory(STORE, '/big.md', 'a'.repeat(200_000));
    expect(Object.keys(fake.snapshot(STORE))).toEqual(['/../escape.md', '/big.md', '/d', '/d/x.md']);
  });

  it('returns snapshots: mutating one changes nothing, and a later write does not show in it', () => {
    const fake = make();
    const written = fake.writeMemory(STORE, '/a.md', 'one');
    written.content = 'hacked';
    fake.memories(STORE)[0]!.path = '/hacked';
    fake.writeMemory(STORE, '/a.md', 'two');
    expect(written.content_sha256).toBe(sha256Hex('one'));
    expect(fake.snapshot(STORE)).toEqual({ '/a.md': 'two' });
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  return expect.fail('expected a throw');
}
