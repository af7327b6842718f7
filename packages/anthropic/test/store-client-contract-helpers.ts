import { StoreError, type StoreErrorKind } from '@memory-mounter/core';
import { expect } from 'vitest';

// Shared by the StoreClient contract's files.

export async function expectStoreError(promise: Promise<unknown>, kind: StoreErrorKind): Promise<StoreError> {
  const err = await promise.then(
    () => expect.fail(`expected a StoreError of kind ${kind}, but the call succeeded`),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  expect((err as StoreError).kind).toBe(kind);
  return err as StoreError;
}

export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

export function numberedFiles(count: number, content: (i: number) => string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`/bulk/${String(i).padStart(4, '0')}.md`] = content(i);
  return files;
}

export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
