import { expect } from 'vitest';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { MemoryConfigError, MemoryMounter, type MemoryMounterOptions } from '@memory-mounter/core';
import { RecordingLogger } from './harness.js';

/** The MemoryConfigError `new MemoryMounter(options)` throws; fails the test if it throws none or another. */
export function configError(options: unknown): MemoryConfigError {
  let caught: unknown;
  try {
    new MemoryMounter(options as MemoryMounterOptions);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(MemoryConfigError);
  return caught as MemoryConfigError;
}

/** Options that are valid as they are, for a test to spoil one key of. */
export const validOptions = (): MemoryMounterOptions => ({
  storeClient: new InMemoryStoreClient(),
  fileSystem: new MemfsFileSystem({ '/mnt/memory': null }),
  logger: new RecordingLogger(),
  now: () => 0,
});
