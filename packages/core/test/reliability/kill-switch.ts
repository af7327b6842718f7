import type { DirHandle, FileStat, FileSystem, OpenFile, StoreClient } from '@memory-mounter/core';
import { optionalCalls } from './optional-calls.js';

/**
 * A SIGKILL, in process: once `kill()` is called, everything the dead mounter still tries
 * through the FileSystem and the StoreClient it was given never returns and does nothing, as if
 * the process were gone. A call already under way (it passed the switch before the kill) does
 * reach the disk or the store, but its answer never comes back; `landed` waits for such calls,
 * so that what the dead process's last system calls did is done before the next step looks (a
 * real kill leaves nothing landing later). The mounter object is then abandoned; the next worker
 * (`MemoryMounter.recover`, then a fresh mounter) gets its own.
 */
export class KillSwitch {
  #dead = false;
  /** Folder watches the mounter started: the process's death ends them, as it closes its inotify descriptor. */
  readonly #watches = new Set<{ close(): void }>();
  /** Disk calls that passed the switch and have not ended yet. */
  readonly #underWay = new Set<Promise<unknown>>();

  get dead(): boolean {
    return this.#dead;
  }

  /** Resolves once every disk call under way has ended, or after `ms`. */
  async landed(ms = 2_000): Promise<void> {
    if (this.#underWay.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.#underWay]), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  kill(): void {
    this.#dead = true;
    for (const watch of this.#watches) watch.close();
    this.#watches.clear();
  }

  fileSystem(inner: FileSystem): FileSystem {
    const k = this;
    return {
      lstat: (p) => k.disk(() => inner.lstat(p)),
      readdir: (p) => k.disk(() => inner.readdir(p)),
      readFile: (p) => k.disk(() => inner.readFile(p)),
      writeFile: (p, d, o) => k.disk(() => inner.writeFile(p, d, o)),
      mkdir: (p, o) => k.disk(() => inner.mkdir(p, o)),
      rm: (p, o) => k.disk(() => inner.rm(p, o)),
      rename: (a, b) => k.disk(() => inner.rename(a, b)),
      openDir: async (p) => k.dirHandle(await k.disk(() => inner.openDir(p))),
      openFile: async (p) => k.openFile(await k.disk(() => inner.openFile(p))),
      // The seam's optional calls, as production has them, through the switch like the rest.
      ...optionalCalls(inner, () => undefined, (call) => k.disk(call)),
      // A dead worker starts no watch, and hears from none it started.
      ...(inner.watchDir && {
        watchDir: (p: string, onEvent: (kind: 'change' | 'error') => void) => {
          if (k.#dead) throw Object.assign(new Error('killed'), { code: 'EBADF' });
          const watch = inner.watchDir!(p, (kind) => {
            if (!k.#dead) onEvent(kind);
          });
          k.#watches.add(watch);
          return {
            close: () => {
              k.#watches.delete(watch);
              watch.close();
            },
          };
        },
      }),
    };
  }

  storeClient(inner: StoreClient): StoreClient {
    const k = this;
    // Every listing walks through the switch, item by item.
    async function* gated<T>(open: () => AsyncIterable<T>): AsyncIterable<T> {
      const iterator = (await k.gate(async () => open()))[Symbol.asyncIterator]();
      for (;;) {
        const step = await k.gate(() => iterator.next());
        if (step.done) return;
        yield step.value;
      }
    }
    return {
      list: (storeId, opts) => gated(() => inner.list(storeId, opts)),
      // The optional methods only where the inner client has them: their absence means something.
      ...(inner.listVersions && { listVersions: (storeId: string, opts?: Parameters<NonNullable<StoreClient['listVersions']>>[1]) => gated(() => inner.listVersions!(storeId, opts)) }),
      ...(inner.listFolder && { listFolder: (storeId: string, opts?: Parameters<NonNullable<StoreClient['listFolder']>>[1]) => gated(() => inner.listFolder!(storeId, opts)) }),
      get: (storeId, memoryId, opts) => k.gate(() => inner.get(storeId, memoryId, opts)),
      create: (storeId, input, opts) => k.gate(() => inner.create(storeId, input, opts)),
      update: (storeId, memoryId, input, opts) => k.gate(() => inner.update(storeId, memoryId, input, opts)),
      delete: (storeId, memoryId, opts) => k.gate(() => inner.delete(storeId, memoryId, opts)),
    };
  }

  /** Runs `call` while alive; its answer (or failure) is dropped if the kill came meanwhile. */
  /**
   * `gate` for a disk call, which is kept while under way (`landed`). Store calls are not: one
   * the store never answers (a stall, the crash's own unsent request) would hold every case.
   */
  private disk<T>(call: () => Promise<T>): Promise<T> {
    return this.gate(() => {
      const underWay = new Promise<T>((resolve) => resolve(call()));
      this.#underWay.add(underWay);
      const ended = () => this.#underWay.delete(underWay);
      underWay.then(ended, ended);
      return underWay;
    });
  }

  private async gate<T>(call: () => Promise<T>): Promise<T> {
    if (this.#dead) return never();
    let result: T;
    try {
      result = await call();
    } catch (err) {
      if (this.#dead) return never();
      throw err;
    }
    if (this.#dead) return never();
    return result;
  }

  private dirHandle(handle: DirHandle): DirHandle {
    return {
      path: handle.path,
      pinned: handle.pinned,
      dev: handle.dev,
      ino: handle.ino,
      close: () => this.gate(() => handle.close()),
    };
  }

  private openFile(file: OpenFile): OpenFile {
    const stat: FileStat = file.stat;
    return {
      stat,
      read: (max) => this.gate(() => file.read(max)),
      close: () => this.gate(() => file.close()),
    };
  }
}

function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}
