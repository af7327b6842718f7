import { readdir, readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { NodeFileSystem, parseRecord, type StateRecord, type StoreClient } from '@memory-mounter/core';
import { scanStore, StoreFolder } from '@memory-mounter/core/engine';
import { UsageError } from './usage.js';

/** What differs between a mounted (or pulled) folder, its recorded baseline and, when reachable, the store. */
export interface FolderDiff {
  memoryStoreId: string;
  dir: string;
  /** Local files the baseline does not hold. */
  new: string[];
  /** Local files whose content differs from the baseline. */
  modified: string[];
  /** Baseline files missing locally. */
  deleted: string[];
  /** Memories changed, added or deleted in the store since the baseline; null when the store was not asked. */
  remoteChanged: string[] | null;
  /** Changed on both sides, differently: the store wins at the next sync. Null when the store was not asked. */
  conflicts: string[] | null;
  /** Entries the scan could not see into (symlinks, unreadable folders). */
  blocked: string[];
}

/** Every readable state record in `stateDir` (none when it does not exist). */
export async function recordsIn(stateDir: string): Promise<StateRecord[]> {
  const names = await readdir(stateDir).catch(() => [] as string[]);
  const records: StateRecord[] = [];
  for (const name of names.filter((n) => n.startsWith('mm-state-') && n.endsWith('.json')).sort()) {
    const bytes = await readFile(join(stateDir, name)).catch(() => null);
    const parsed = bytes && parseRecord(bytes, name);
    if (parsed?.ok) records.push(parsed.record);
  }
  return records;
}

/** The record of the folder at `hostPath` (a real path), or null. */
export async function recordFor(stateDir: string, hostPath: string): Promise<StateRecord | null> {
  return (await recordsIn(stateDir)).find((r) => r.host_path === hostPath) ?? null;
}

/** The state record `MemoryMounter` wrote for `dir` (stateDir option), or a UsageError saying why there is none. */
export async function findRecord(stateDir: string, dir: string): Promise<StateRecord> {
  const hostPath = await realpath(dir).catch(() => {
    throw new UsageError(`${dir} does not exist: nothing is mounted there`);
  });
  const record = await recordFor(stateDir, hostPath);
  if (record) return record;
  throw new UsageError(`no mount record for ${dir} in ${stateDir}: mount or pull it with memory-mounter (same --state-dir) first`);
}

/**
 * The diff, read-only: the folder is scanned through the library's confined StoreFolder (no
 * link followed, nothing written), the store listed without content.
 */
export async function diffFolder(record: StateRecord, storeClient: StoreClient | null): Promise<FolderDiff> {
  const folder = await StoreFolder.open(new NodeFileSystem(), record.host_path);
  let snapshot;
  try {
    snapshot = await scanStore(folder, record.memory_store_id);
  } finally {
    await folder.close();
  }
  if (snapshot.root !== 'directory') throw new UsageError(`${record.host_path} is not a folder any more`);
  const baseline = new Map(Object.entries(record.baseline));
  const diff: FolderDiff = {
    memoryStoreId: record.memory_store_id,
    dir: record.host_path,
    new: [],
    modified: [],
    deleted: [],
    remoteChanged: null,
    conflicts: null,
    blocked: [...snapshot.blocked.keys()].sort(),
  };
  for (const [path, file] of snapshot.files) {
    const base = baseline.get(path);
    if (base === undefined) diff.new.push(path);
    else if (base !== file.sha) diff.modified.push(path);
  }
  for (const path of baseline.keys()) if (!snapshot.files.has(path) && !snapshot.blocked.has(path)) diff.deleted.push(path);
  if (storeClient) {
    const remote = new Map<string, string>();
    for await (const m of storeClient.list(record.memory_store_id)) remote.set(m.path, m.content_sha256);
    const changed = new Set<string>();
    for (const [path, sha] of remote) if (baseline.get(path) !== sha) changed.add(path);
    for (const path of baseline.keys()) if (!remote.has(path)) changed.add(path);
    diff.remoteChanged = [...changed].sort();
    diff.conflicts = [...diff.new, ...diff.modified, ...diff.deleted]
      .filter((path) => changed.has(path) && snapshot.files.get(path)?.sha !== remote.get(path))
      .sort();
  }
  diff.new.sort();
  diff.modified.sort();
  diff.deleted.sort();
  return diff;
}
