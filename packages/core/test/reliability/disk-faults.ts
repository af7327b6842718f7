import { posix } from 'node:path';
import { fsError, isConflictCopyName } from '@memory-mounter/core';
import type { DirEntry, DirHandle, FileStat, FileSystem, OpenFile, WriteOptions } from '@memory-mounter/core';
import { viaDescriptor } from './confined-file-system.js';
import { optionalCalls, type OptionalCalls } from './optional-calls.js';

/**
 * Disk faults of the model: files the engine cannot open (`EACCES` for a file made unreadable,
 * `EIO` for a bad sector, `EMFILE` for a process out of descriptors), and conflict copies that
 * cannot be written (`ENOSPC`). Queued by the steps, played by `DiskFaultFileSystem` on the
 * engine's own FileSystem (inside the confinement witness), called off by `drain` at quiescence.
 * The agent's and the oracle's reads go to the disk directly and never meet them.
 */
export type UnreadableCode = 'EACCES' | 'EIO' | 'EMFILE';

export class DiskFaults {
  /** host path -> the error its next opens meet, and how many (Infinity: until drained). */
  readonly #unreadable = new Map<string, { code: UnreadableCode; left: number }>();
  #copyFailures = 0;
  /** Opens refused, and conflict-copy writes refused, so far. */
  opensFailed = 0;
  copiesFailed = 0;

  /** The next `times` opens (reads) of the file at `hostPath` by the engine fail with `code`. */
  unreadable(hostPath: string, code: UnreadableCode, times: number): void {
    this.#unreadable.set(hostPath, { code, left: times });
  }

  /** The next `times` conflict copies the engine writes fail with ENOSPC. */
  failConflictCopies(times: number): void {
    this.#copyFailures += times;
  }

  get pending(): number {
    return this.#unreadable.size + this.#copyFailures;
  }

  /** Every disk fault is called off (quiescence: the disk is healthy again). */
  drain(): void {
    this.#unreadable.clear();
    this.#copyFailures = 0;
  }

  /** Throws the error an open of `path` meets, if one is queued. */
  checkOpen(path: string, syscall: string): void {
    const host = posix.normalize(viaDescriptor(path));
    const fault = this.#unreadable.get(host);
    if (!fault) return;
    if (--fault.left <= 0) this.#unreadable.delete(host);
    this.opensFailed++;
    throw fsError(fault.code, syscall, path, 'injected (test)');
  }

  /** Throws ENOSPC for a conflict copy's write, if one is queued. */
  checkWrite(path: string): void {
    if (this.#copyFailures === 0 || !isConflictCopyName(posix.basename(path))) return;
    this.#copyFailures--;
    this.copiesFailed++;
    throw fsError('ENOSPC', 'write', path, 'injected (test): no space left on device');
  }

  wrap(inner: FileSystem): FileSystem {
    return new DiskFaultFileSystem(inner, this);
  }
}

// The optional calls `optionalCalls` gives it, when the inner filesystem has them.
interface DiskFaultFileSystem extends OptionalCalls {}

/** The engine's FileSystem with the queued disk faults played on it; everything else passes through. */
class DiskFaultFileSystem implements FileSystem {
  /** The inner filesystem's watch, passed through: without it every fuzz case ran with the watch off. */
  readonly watchDir?: FileSystem['watchDir'];

  constructor(
    private readonly inner: FileSystem,
    private readonly faults: DiskFaults,
  ) {
    if (inner.watchDir) this.watchDir = inner.watchDir.bind(inner);
    // The other optional calls too: a new file is a write like `writeFile`'s, so a conflict
    // copy's ENOSPC meets it as well.
    Object.assign(
      this,
      optionalCalls(inner, (op, [path]) => {
        if (op === 'writeFileExclusive' || op === 'createFile') this.faults.checkWrite(path!);
      }),
    );
  }

  lstat(path: string): Promise<FileStat | null> {
    return this.inner.lstat(path);
  }

  readdir(path: string): Promise<DirEntry[]> {
    return this.inner.readdir(path);
  }

  async readFile(path: string): Promise<Uint8Array> {
    this.faults.checkOpen(path, 'open');
    return this.inner.readFile(path);
  }

  async writeFile(path: string, data: Uint8Array, opts?: WriteOptions): Promise<void> {
    this.faults.checkWrite(path);
    return this.inner.writeFile(path, data, opts);
  }

  mkdir(path: string, opts?: { mode?: number; recursive?: boolean }): Promise<void> {
    return this.inner.mkdir(path, opts);
  }

  rm(path: string, opts?: { recursive?: boolean }): Promise<void> {
    return this.inner.rm(path, opts);
  }

  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
  }

  openDir(path: string): Promise<DirHandle> {
    return this.inner.openDir(path);
  }

  async openFile(path: string): Promise<OpenFile> {
    this.faults.checkOpen(path, 'open');
    return this.inner.openFile(path);
  }
}
