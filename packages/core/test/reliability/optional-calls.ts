import type { FileSystem } from '@memory-mounter/core';

/** The seam's optional calls a test wrapper must pass through, `watchDir` apart (each wrapper has its own). */
export type OptionalCalls = Pick<FileSystem, 'lstatAll' | 'writeFileExclusive' | 'createFile' | 'link' | 'readLinkSync' | 'grantOwnerAccess'>;
export type OptionalCall = keyof OptionalCalls;

/**
 * The optional calls `inner` has, each told to `before` (with the paths it names) and run
 * through `around` (the async ones): a wrapper that left them out would make the engine take its
 * fallbacks, which production never runs (B39: every fuzz case did, until these were passed).
 */
export function optionalCalls(
  inner: FileSystem,
  before: (op: OptionalCall, paths: readonly string[]) => void,
  around: <T>(call: () => Promise<T>) => Promise<T> = (call) => call(),
): OptionalCalls {
  const { lstatAll, writeFileExclusive, createFile, link, readLinkSync, grantOwnerAccess } = inner;
  const out: OptionalCalls = {};
  if (lstatAll) {
    out.lstatAll = (paths) => {
      before('lstatAll', paths);
      return around(() => lstatAll.call(inner, paths));
    };
  }
  if (writeFileExclusive) {
    out.writeFileExclusive = async (path, data, opts) => {
      before('writeFileExclusive', [path]);
      return around(() => writeFileExclusive.call(inner, path, data, opts));
    };
  }
  if (createFile) {
    out.createFile = async (path, data, opts) => {
      before('createFile', [path]);
      return around(() => createFile.call(inner, path, data, opts));
    };
  }
  if (link) {
    out.link = async (from, to) => {
      before('link', [from, to]);
      return around(() => link.call(inner, from, to));
    };
  }
  if (readLinkSync) {
    out.readLinkSync = (path) => {
      before('readLinkSync', [path]);
      return readLinkSync.call(inner, path);
    };
  }
  if (grantOwnerAccess) {
    out.grantOwnerAccess = async (path, expect) => {
      before('grantOwnerAccess', [path]);
      return around(() => grantOwnerAccess.call(inner, path, expect));
    };
  }
  return out;
}
