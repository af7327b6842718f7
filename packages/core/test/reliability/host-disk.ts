import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { MemfsFileSystem } from '@memory-mounter/testing';
import { NodeFileSystem, type FileSystem } from '@memory-mounter/core';

/**
 * The host as the agent and the test's observer see it, beside the engine's own FileSystem.
 *
 * Every call is synchronous: an agent action run while the engine waits on a store request is
 * then one indivisible step from the engine's point of view, and a snapshot is never torn by the
 * engine's own I/O. Nothing here follows a symlink except `writeFile` on a plain path, which the
 * agent only calls after checking that no link is on the way (see agent.ts).
 */
export type EntryKind = 'file' | 'directory' | 'symlink' | 'other';

export interface TreeEntry {
  kind: EntryKind;
  /** sha256 hex of the bytes, for regular files. */
  sha?: string;
  /** Where a symlink points. */
  target?: string;
}

/** Everything under a folder, keyed by `/relative/path`, links listed but never entered. */
export type Tree = Map<string, TreeEntry>;

export type DiskKind = 'node' | 'memfs';

export interface HostDisk {
  readonly kind: DiskKind;
  /** The FileSystem the engine is given. */
  readonly fs: FileSystem;
  /** The folder that holds everything this case may touch: memoryRoot and the canary folder. */
  readonly base: string;
  kindOf(path: string): EntryKind | null;
  /** Names in a folder (empty when it is not one). */
  names(dir: string): string[];
  /** Bytes of a regular file, or null (absent, a link, a folder). */
  readFile(path: string): Uint8Array | null;
  writeFile(path: string, data: Uint8Array | string): void;
  appendFile(path: string, data: string): void;
  mkdir(path: string): void;
  /** rm -rf, removing links rather than what they point at. */
  remove(path: string): void;
  rename(from: string, to: string): void;
  symlink(target: string, path: string): void;
  tree(dir: string): Tree;
  dispose(): Promise<void>;
}

export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A case's host in a fresh real temp dir. */
export async function nodeHostDisk(): Promise<HostDisk> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-rel-')));
  const ops: SyncOps = {
    lstat: (p) => nodeFs.lstatSync(p),
    readdir: (p) => nodeFs.readdirSync(p),
    readFile: (p) => new Uint8Array(nodeFs.readFileSync(p)),
    writeFile: (p, d) => nodeFs.writeFileSync(p, d),
    appendFile: (p, d) => nodeFs.appendFileSync(p, d),
    mkdir: (p) => void nodeFs.mkdirSync(p, { recursive: true }),
    remove: (p) => nodeFs.rmSync(p, { recursive: true, force: true }),
    rename: (a, b) => nodeFs.renameSync(a, b),
    symlink: (t, p) => nodeFs.symlinkSync(t, p),
    readlink: (p) => nodeFs.readlinkSync(p),
  };
  return syncHostDisk('node', new NodeFileSystem(), base, ops, () => rm(base, { recursive: true, force: true }));
}

/** A case's host in memory: the same layout on a memfs volume. */
export function memfsHostDisk(): HostDisk {
  const fs = new MemfsFileSystem({ '/host': null });
  const vol = fs.vol;
  const ops: SyncOps = {
    lstat: (p) => vol.lstatSync(p),
    readdir: (p) => (vol.readdirSync(p) as unknown[]).map(String),
    readFile: (p) => new Uint8Array(vol.readFileSync(p) as Buffer),
    writeFile: (p, d) => vol.writeFileSync(p, d),
    appendFile: (p, d) => vol.appendFileSync(p, d),
    mkdir: (p) => void vol.mkdirSync(p, { recursive: true }),
    // memfs's rm would act on a link's target: unlink links and files ourselves.
    remove: (p) => {
      const stat = tryLstat(ops, p);
      if (!stat) return;
      if (stat.isDirectory()) vol.rmSync(p, { recursive: true, force: true });
      else vol.unlinkSync(p);
    },
    // The agent renames only regular files and folders, onto absent names (agent.ts).
    rename: (a, b) => vol.renameSync(a, b),
    symlink: (t, p) => vol.symlinkSync(t, p),
    readlink: (p) => String(vol.readlinkSync(p)),
  };
  return syncHostDisk('memfs', fs, '/host', ops, async () => {});
}

interface StatLike {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

interface SyncOps {
  lstat(path: string): StatLike;
  readdir(path: string): string[];
  readFile(path: string): Uint8Array;
  writeFile(path: string, data: Uint8Array | string): void;
  appendFile(path: string, data: string): void;
  mkdir(path: string): void;
  remove(path: string): void;
  rename(from: string, to: string): void;
  symlink(target: string, path: string): void;
  readlink(path: string): string;
}

function tryLstat(ops: SyncOps, path: string): StatLike | null {
  try {
    return ops.lstat(path);
  } catch {
    return null;
  }
}

function kindOfStat(stat: StatLike): EntryKind {
  if (stat.isSymbolicLink()) return 'symlink';
  if (stat.isFile()) return 'file';
  if (stat.isDirectory()) return 'directory';
  return 'other';
}

function syncHostDisk(kind: DiskKind, fs: FileSystem, base: string, ops: SyncOps, dispose: () => Promise<void>): HostDisk {
  const kindOf = (path: string): EntryKind | null => {
    const stat = tryLstat(ops, path);
    return stat ? kindOfStat(stat) : null;
  };
  const tree = (dir: string): Tree => {
    const out: Tree = new Map();
    const walk = (hostDir: string, rel: string) => {
      let names: string[];
      try {
        names = ops.readdir(hostDir);
      } catch {
        return;
      }
      for (const name of names.sort()) {
        const hostPath = posix.join(hostDir, name);
        const relPath = `${rel}/${name}`;
        const entryKind = kindOf(hostPath);
        if (entryKind === null) continue;
        if (entryKind === 'file') out.set(relPath, { kind: 'file', sha: sha256(ops.readFile(hostPath)) });
        else if (entryKind === 'symlink') out.set(relPath, { kind: 'symlink', target: ops.readlink(hostPath) });
        else out.set(relPath, { kind: entryKind });
        if (entryKind === 'directory') walk(hostPath, relPath);
      }
    };
    walk(dir, '');
    return out;
  };
  return {
    kind,
    fs,
    base,
    kindOf,
    names: (dir) => {
      try {
        return ops.readdir(dir).sort();
      } catch {
        return [];
      }
    },
    readFile: (path) => (kindOf(path) === 'file' ? ops.readFile(path) : null),
    writeFile: ops.writeFile,
    appendFile: ops.appendFile,
    mkdir: ops.mkdir,
    remove: ops.remove,
    rename: ops.rename,
    symlink: ops.symlink,
    tree,
    dispose,
  };
}
