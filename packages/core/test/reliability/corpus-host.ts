import { expect } from 'vitest';
import { MemoryMounter, NodeFileSystem, type FileSystem, type MemoryMounterOptions } from '@memory-mounter/core';
import { InMemoryStoreClient } from '@memory-mounter/testing';
import { RecordingLogger, STORE, type LogLine } from '../harness.js';
import { ConfinedFileSystem } from './confined-file-system.js';
import { nodeHostDisk, type HostDisk, type Tree } from './host-disk.js';
import { describeTreeDiff, sameTree } from './tree.js';

/**
 * A real temp dir for one corpus case: memoryRoot beside a folder of host secrets that nothing
 * may read or write, a fake store, a recording logger, and the engine's filesystem confined to
 * memoryRoot (any call outside it, or through a linked folder, is recorded).
 *
 *   <base>/mnt-memory        memoryRoot
 *   <base>/outside/secret.txt, <base>/outside/dir/{secret.txt,new.md?}
 */
export const SECRET = 'HOST-SECRET-do-not-upload-3c9d';

export class CorpusHost {
  readonly client = new InMemoryStoreClient();
  readonly logger = new RecordingLogger();
  readonly clock = { now: 1_700_000_000_000 };
  /** Calls the engine made outside memoryRoot or through a link. */
  readonly escapes: string[] = [];
  readonly memoryRoot: string;
  readonly outside: string;
  readonly #outsideBefore: Tree;

  private constructor(readonly disk: HostDisk) {
    this.memoryRoot = `${disk.base}/mnt-memory`;
    this.outside = `${disk.base}/outside`;
    disk.mkdir(this.memoryRoot);
    disk.mkdir(`${this.outside}/dir`);
    disk.writeFile(`${this.outside}/secret.txt`, `${SECRET} file\n`);
    disk.writeFile(`${this.outside}/dir/secret.txt`, `${SECRET} in a folder\n`);
    this.#outsideBefore = disk.tree(this.outside);
  }

  static async create(): Promise<CorpusHost> {
    return new CorpusHost(await nodeHostDisk());
  }

  /** The store folder of the `notes` store. */
  get dir(): string {
    return `${this.memoryRoot}/notes`;
  }

  fileSystem(inner: FileSystem = new NodeFileSystem()): FileSystem {
    return new ConfinedFileSystem(inner, this.memoryRoot, (p) => this.disk.kindOf(p), (v) => this.escapes.push(v));
  }

  mounter(options: Partial<MemoryMounterOptions> = {}): MemoryMounter {
    return new MemoryMounter({
      storeClient: this.client,
      fileSystem: this.fileSystem(),
      memoryRoot: this.memoryRoot,
      now: () => this.clock.now,
      logger: this.logger,
      deleteGracePeriod: 0,
      newFileSettle: 0, // a case writes, then syncs: nothing is mid-write
      ...options,
    });
  }

  /** Warnings that name this store and `path` in their fields. */
  warningsFor(path: string): LogLine[] {
    return this.logger.warnings().filter((w) => w.fields.memory_store_id === STORE && w.fields.path === path);
  }

  /** Everything in the store folder, by `/relative/path`. */
  mountTree(): Tree {
    return this.disk.tree(this.dir);
  }

  /**
   * Nothing outside the mounts was read or written: the secrets folder is as it was, nothing
   * new appeared beside memoryRoot, the engine never called the filesystem outside memoryRoot or
   * through a link, and no memory in the store holds a secret.
   */
  expectNothingOutsideTouched(): void {
    const outsideNow = this.disk.tree(this.outside);
    expect(sameTree(this.#outsideBefore, outsideNow), `outside changed: ${describeTreeDiff(this.#outsideBefore, outsideNow)}`).toBe(true);
    expect(this.disk.names(this.disk.base)).toEqual(['mnt-memory', 'outside']);
    expect(this.escapes).toEqual([]);
    for (const memory of this.client.memories(STORE)) expect(memory.content).not.toContain(SECRET);
  }

  dispose(): Promise<void> {
    return this.disk.dispose();
  }
}
