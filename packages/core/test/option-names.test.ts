import { describe, expect, it } from 'vitest';
import { MemoryMounter, type MemoryMounterOptions } from '@memory-mounter/core';
import { DISKS, STORE, useHarness } from './harness.js';
import { configError, validOptions as valid } from './config-error.js';

/**
 * The SDK's option names beside the design's, and no key dropped silently: a typo is a
 * MemoryConfigError naming it and the option it was closest to.
 */

const FILES = { '/a.md': 'alpha', '/b.md': 'beta' };

for (const kind of DISKS) {
  describe(`the SDK's names do what the design's do (${kind})`, () => {
    const h = useHarness(kind);

    it("memorySyncDeletions: 'disabled' disables remote deletes", async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0, memorySyncDeletions: 'disabled' }, FILES);
      await h.remove(`${h.notesDir}/a.md`);
      await m.reconcile({ force: true });
      h.clock.advance(60);
      await m.reconcile({ force: true });
      expect(h.client.count('delete')).toBe(0);
      expect(h.client.snapshot(STORE)).toEqual(FILES);
    });

    it("memorySyncDeletions: 'log_only' sends no delete", async () => {
      const m = await h.mountNotes({ deleteGracePeriod: 0, memorySyncDeletions: 'log_only' }, FILES);
      await h.remove(`${h.notesDir}/a.md`);
      await m.reconcile({ force: true });
      await m.reconcile({ force: true });
      expect(h.client.count('delete')).toBe(0);
    });

    it('memorySyncIntervalMs is in milliseconds', async () => {
      const m = await h.mountNotes({ memorySyncIntervalMs: 2_500 }, FILES);
      h.clock.advance(2.499);
      expect(await m.reconcile()).toBeNull();
      h.clock.advance(0.001);
      expect(await m.reconcile()).not.toBeNull();
    });

    it('both names given and agreeing are taken', async () => {
      const m = await h.mountNotes({ memorySyncIntervalMs: 1_100, memory_sync_interval: 1.1, memorySyncDeletions: 'disabled', memory_sync_deletions: 'disabled' }, FILES);
      h.clock.advance(1.099);
      expect(await m.reconcile()).toBeNull();
      h.clock.advance(0.001);
      expect(await m.reconcile()).not.toBeNull();
    });
  });
}

describe('two names of one option that disagree', () => {
  it('memory_sync_deletions and memorySyncDeletions', () => {
    const err = configError({ ...valid(), memory_sync_deletions: 'enabled', memorySyncDeletions: 'disabled' });
    expect(err.option).toBe('memorySyncDeletions');
    expect(err.message).toContain('memory_sync_deletions');
    expect(err.message).toContain('disagree');
  });

  it('memory_sync_interval and memorySyncIntervalMs', () => {
    const err = configError({ ...valid(), memory_sync_interval: 15, memorySyncIntervalMs: 15 });
    expect(err.option).toBe('memorySyncIntervalMs');
    expect(err.message).toContain('memory_sync_interval (15 s) and memorySyncIntervalMs (15 ms) disagree');
  });

  it("each name is checked by its own rules, and the refusal names the key written", () => {
    for (const value of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '15000', null, 3_600_001]) {
      expect(configError({ ...valid(), memorySyncIntervalMs: value }).option).toBe('memorySyncIntervalMs');
    }
    expect(() => new MemoryMounter({ ...valid(), memorySyncIntervalMs: 3_600_000 })).not.toThrow();
    for (const value of ['on', 'ENABLED', null, 1]) {
      const err = configError({ ...valid(), memorySyncDeletions: value });
      expect(err.option).toBe('memorySyncDeletions');
      expect(err.message).toContain('memorySyncDeletions must be one of enabled, log_only, disabled');
    }
  });
});

describe('an unknown key', () => {
  it("memorySyncDeletion: 'disabled' is refused, naming memorySyncDeletions", () => {
    const err = configError({ ...valid(), memorySyncDeletion: 'disabled' });
    expect(err.option).toBe('memorySyncDeletion');
    expect(err.suggestion).toBe('memorySyncDeletions');
    expect(err.message).toContain('unknown option "memorySyncDeletion"; did you mean memorySyncDeletions?');
  });

  it.each([
    ['memory_sync_deletion', 'memory_sync_deletions'],
    ['MemorySyncDeletions', 'memorySyncDeletions'],
    ['memorySyncInterval', 'memory_sync_interval'],
    ['memorySyncIntervalMS', 'memorySyncIntervalMs'],
    ['syncIntervalMs', 'memorySyncIntervalMs'],
    ['deleteGracePeriodMs', 'deleteGracePeriod'],
    ['requestTimout', 'requestTimeout'],
    ['root', 'memoryRoot'],
    ['log', 'logger'],
    ['statedir', 'stateDir'],
    ['newFileSettleMs', 'newFileSettle'],
  ])('%s -> %s', (key, closest) => {
    const err = configError({ ...valid(), [key]: 1 });
    expect(err.option).toBe(key);
    expect(err.suggestion).toBe(closest);
  });

  it('names the unit where two names of one option differ in it', () => {
    expect(configError({ ...valid(), memorySyncInterval: 15 }).message).toContain('did you mean memory_sync_interval (seconds)?');
    expect(configError({ ...valid(), memorySyncIntervalMS: 15 }).message).toContain('did you mean memorySyncIntervalMs (milliseconds)?');
  });

  it('is refused even when its value is undefined, and before any other option is checked', () => {
    expect(configError({ ...valid(), memorySyncDeletion: undefined }).option).toBe('memorySyncDeletion');
    expect(configError({ storeClient: null, typo: 1 }).option).toBe('typo');
  });

  it('every documented option is accepted', () => {
    const all: Required<MemoryMounterOptions> = {
      ...(valid() as Required<Pick<MemoryMounterOptions, 'storeClient' | 'fileSystem' | 'logger' | 'now'>>),
      memoryRoot: '/mnt/memory',
      memory_sync_interval: 15,
      memorySyncIntervalMs: 15_000,
      memory_sync_deletions: 'enabled',
      memorySyncDeletions: 'enabled',
      deleteGracePeriod: 30,
      newFileSettle: 1,
      finalSyncTimeout: 30,
      requestTimeout: 30,
      syncTimeout: 60,
      syncWait: 2,
      retryBudget: 5,
      stateDir: '/var/lib/memory-mounter',
      keepUnpushed: false,
      conflictCopies: false,
      transferConcurrency: 32,
      fullListingEvery: 100,
      fullListingInterval: 600,
    };
    expect(() => new MemoryMounter(all)).not.toThrow();
  });
});
