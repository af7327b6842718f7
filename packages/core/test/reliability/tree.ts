import { posix } from 'node:path';
import { isConflictCopyName, isUnsyncedName, MARKER_FILE } from '@memory-mounter/core';
import type { InMemoryStoreClient } from '@memory-mounter/testing';
import { sha256, type Tree } from './host-disk.js';

/** Readings of a store folder's tree and of a store, in the terms the invariants use. */

/** The memory files of a store folder: regular files but the marker, atomic-write temp files and conflict copies. */
export function memoryFiles(tree: Tree): Map<string, string> {
  const files = new Map<string, string>();
  for (const [path, entry] of tree) {
    if (entry.kind !== 'file' || path === `/${MARKER_FILE}` || isUnsyncedName(posix.basename(path))) continue;
    files.set(path, entry.sha!);
  }
  return files;
}

/** path -> sha of every conflict copy in a store folder (`conflictCopies`: the losers of conflicts, never synced). */
export function conflictCopies(tree: Tree): Map<string, string> {
  const copies = new Map<string, string>();
  for (const [path, entry] of tree) if (entry.kind === 'file' && isConflictCopyName(posix.basename(path))) copies.set(path, entry.sha!);
  return copies;
}

/** Entries the engine must leave alone: symlinks, FIFOs, sockets. */
export function blockedEntries(tree: Tree): string[] {
  return [...tree].filter(([, entry]) => entry.kind === 'symlink' || entry.kind === 'other').map(([path]) => path);
}

/** Anything in the folder the scan counts as present: memory files and blocked entries. */
export function hasEntries(tree: Tree): boolean {
  return memoryFiles(tree).size > 0 || blockedEntries(tree).length > 0;
}

/** path -> sha256 of every memory in a store of the fake. */
export function storeShas(fake: InMemoryStoreClient, storeId: string): Map<string, string> {
  return new Map(fake.memories(storeId).map((m) => [m.path, m.content_sha256]));
}

export function sameTree(a: Tree, b: Tree): boolean {
  if (a.size !== b.size) return false;
  for (const [path, entry] of a) {
    const other = b.get(path);
    if (!other || other.kind !== entry.kind || other.sha !== entry.sha || other.target !== entry.target) return false;
  }
  return true;
}

export function describeTreeDiff(before: Tree, after: Tree): string {
  const changes: string[] = [];
  for (const [path, entry] of after) {
    const was = before.get(path);
    if (!was) changes.push(`+${path}`);
    else if (was.kind !== entry.kind || was.sha !== entry.sha || was.target !== entry.target) changes.push(`~${path}`);
  }
  for (const path of before.keys()) if (!after.has(path)) changes.push(`-${path}`);
  return changes.join(' ');
}

/** A marker that the engine reads as intact: a regular file whose JSON names this store. */
export function markerIntact(bytes: Uint8Array | null, storeId: string): boolean {
  if (!bytes) return false;
  try {
    return (JSON.parse(new TextDecoder().decode(bytes)) as { memory_store_id?: unknown }).memory_store_id === storeId;
  } catch {
    return false;
  }
}

export { sha256 };
