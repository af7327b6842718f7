import { readlinkSync } from 'node:fs';
import { posix } from 'node:path';
import type { DirEntry, DirHandle, DirWatch, FileStat, FileSystem, OpenFile } from '@memory-mounter/core';
import { coverage } from './coverage.js';
import { optionalCalls, type OptionalCalls } from './optional-calls.js';
import type { EntryKind } from './host-disk.js';

/** Which optional calls the fuzz counts, and where. */
const COUNTED = { createFile: 'createdInPlace', writeFileExclusive: 'exclusiveWrites', link: 'links', lstatAll: 'lstatAlls' } as const;

// The optional calls `optionalCalls` gives it, when the inner filesystem has them.
export interface ConfinedFileSystem extends OptionalCalls {}

/**
 * The engine's FileSystem with a witness: every path it is handed must lie under memoryRoot and
 * reach there through real folders only. A path outside, or one with a symlink among its folders
 * (where even O_NOFOLLOW would follow the link), is recorded as a violation, and the call still
 * goes ahead so that the rest of the case shows what it did.
 *
 * The mounter's crash-recovery records live outside memoryRoot, in `stateDir`: paths in it
 * are allowed too (when one is given), and nothing beyond.
 *
 * A path through a pinned handle (`/proc/self/fd/<fd>/name`) is judged where the kernel will
 * take it: the folder the descriptor holds, wherever that folder is now.
 */
export class ConfinedFileSystem implements FileSystem {
  /** Present when the inner filesystem can watch: the folder watched must lie under memoryRoot too. */
  readonly watchDir?: (path: string, onEvent: (kind: 'change' | 'error') => void) => DirWatch;

  constructor(
    private readonly inner: FileSystem,
    private readonly memoryRoot: string,
    private readonly kindOf: (path: string) => EntryKind | null,
    private readonly report: (violation: string) => void,
    private readonly stateDir?: string,
  ) {
    // The seam's other optional calls, checked like the rest (and counted, for the figures).
    Object.assign(
      this,
      optionalCalls(inner, (op, paths) => {
        for (const path of paths) this.check(op, path);
        if (op in COUNTED) coverage[COUNTED[op as keyof typeof COUNTED]]++;
      }),
    );
    const watchDir = inner.watchDir?.bind(inner);
    if (watchDir) {
      this.watchDir = (path, onEvent) => {
        this.check('watchDir', path);
        const watch = watchDir(path, (kind) => {
          coverage.watchEvents++;
          onEvent(kind);
        });
        coverage.watchesStarted++;
        return watch;
      };
    }
  }

  lstat(path: string): Promise<FileStat | null> {
    this.check('lstat', path);
    return this.inner.lstat(path);
  }

  readdir(path: string): Promise<DirEntry[]> {
    this.check('readdir', path);
    return this.inner.readdir(path);
  }

  readFile(path: string): Promise<Uint8Array> {
    this.check('readFile', path);
    return this.inner.readFile(path);
  }

  writeFile(path: string, data: Uint8Array, opts?: { mode?: number }): Promise<void> {
    this.check('writeFile', path);
    return this.inner.writeFile(path, data, opts);
  }

  mkdir(path: string, opts?: { mode?: number; recursive?: boolean }): Promise<void> {
    this.check('mkdir', path);
    return this.inner.mkdir(path, opts);
  }

  rm(path: string, opts?: { recursive?: boolean }): Promise<void> {
    this.check('rm', path);
    return this.inner.rm(path, opts);
  }

  rename(from: string, to: string): Promise<void> {
    this.check('rename', from);
    this.check('rename', to);
    return this.inner.rename(from, to);
  }

  openDir(path: string): Promise<DirHandle> {
    this.check('openDir', path);
    return this.inner.openDir(path);
  }

  openFile(path: string): Promise<OpenFile> {
    this.check('openFile', path);
    return this.inner.openFile(path);
  }

  private check(op: string, path: string): void {
    const normalised = posix.normalize(viaDescriptor(path));
    if (this.stateDir !== undefined && (normalised === this.stateDir || normalised.startsWith(`${this.stateDir}/`))) return;
    if (normalised !== this.memoryRoot && !normalised.startsWith(`${this.memoryRoot}/`)) {
      this.report(`filesystem ${op} outside memoryRoot: ${path}`);
      return;
    }
    // Every folder between memoryRoot and the entry must be a real folder (or absent).
    const rest = normalised.slice(this.memoryRoot.length).split('/').filter(Boolean);
    let dir = this.memoryRoot;
    for (const segment of rest.slice(0, -1)) {
      dir = posix.join(dir, segment);
      const kind = this.kindOf(dir);
      if (kind === 'symlink') {
        this.report(`filesystem ${op} through the symlinked folder ${dir}: ${path}`);
        return;
      }
      if (kind !== 'directory') return;
    }
  }
}

/** `/proc/self/fd/<fd>/rest` as the path of the folder held by `fd` now, plus `rest`. */
export function viaDescriptor(path: string): string {
  const match = /^\/proc\/self\/fd\/(\d+)(\/.*)?$/.exec(path);
  if (!match) return path;
  const folder = readlinkSync(`/proc/self/fd/${match[1]}`);
  return `${folder}${match[2] ?? ''}`;
}
