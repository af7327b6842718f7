import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The bench's handle on the emulator running in its own process (emulator-process.mjs): the
 * few calls the bench makes, each a message there and back. The process needs the built
 * `@memory-mounter/testing`; `pnpm bench` builds the packages first.
 */
export class RemoteEmulator {
  readonly #child: ChildProcess;
  readonly baseURL: string;
  #next = 0;
  readonly #waiting = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();

  private constructor(child: ChildProcess, baseURL: string) {
    this.#child = child;
    this.baseURL = baseURL;
    child.on('message', (message: { id?: number; result?: unknown; error?: string }) => {
      const waiter = message.id === undefined ? undefined : this.#waiting.get(message.id);
      if (!waiter) return;
      this.#waiting.delete(message.id!);
      if (message.error !== undefined) waiter.reject(new Error(`emulator: ${message.error}`));
      else waiter.resolve(message.result);
    });
    child.on('exit', (code) => {
      for (const waiter of this.#waiting.values()) waiter.reject(new Error(`emulator process exited (${code})`));
      this.#waiting.clear();
    });
  }

  static async start(latencyMs: number): Promise<RemoteEmulator> {
    const built = fileURLToPath(new URL('../../testing/dist/index.js', import.meta.url));
    if (!existsSync(built)) throw new Error('the bench needs the built packages: run `pnpm build` (or `pnpm bench`, which builds first)');
    const child = fork(fileURLToPath(new URL('./emulator-process.mjs', import.meta.url)), [String(latencyMs)], { stdio: 'inherit' });
    const baseURL = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('emulator process did not start within 30 s')), 30_000);
      child.once('message', (message: { ready?: string }) => {
        clearTimeout(timer);
        if (message.ready) resolve(message.ready);
        else reject(new Error('emulator process sent no address'));
      });
      child.once('exit', (code) => reject(new Error(`emulator process exited (${code}) before it started`)));
    });
    return new RemoteEmulator(child, baseURL);
  }

  #call<T>(op: string, ...args: unknown[]): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#child.send({ id, op, args });
    });
  }

  seed(storeId: string, files: Record<string, string>): Promise<void> {
    return this.#call('seed', storeId, files);
  }

  writeMemory(storeId: string, path: string, content: string): Promise<void> {
    return this.#call('writeMemory', storeId, path, content);
  }

  requestCount(): Promise<number> {
    return this.#call('requestCount');
  }

  setLatency(ms: number): Promise<void> {
    return this.#call('setLatency', ms);
  }

  /** Every request for `storeId` fails with `fault` (of `routes` only, when given) until called with null. */
  failStore(storeId: string, fault: number | 'hang' | 'disconnect' | null, routes?: readonly string[]): Promise<void> {
    return this.#call('failStore', storeId, fault, routes);
  }

  /** The `retry-after` (s) the emulator sends with a 429 or 5xx. */
  setRetryAfter(seconds: number): Promise<void> {
    return this.#call('setRetryAfter', seconds);
  }

  requestCountFor(storeId: string): Promise<number> {
    return this.#call('requestCountFor', storeId);
  }

  /** What the store holds at `paths` (null where nothing is). */
  contents(storeId: string, paths: readonly string[]): Promise<Record<string, string | null>> {
    return this.#call('contents', storeId, paths);
  }

  /** The emulator process's own CPU (user + system, ms) so far. */
  async cpuMs(): Promise<number> {
    const used = await this.#call<NodeJS.CpuUsage>('cpuUsage');
    return (used.user + used.system) / 1000;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#child.exitCode !== null) return resolve();
      this.#child.once('exit', () => resolve());
      this.#child.disconnect();
    });
  }
}
