import { createHash } from 'node:crypto';
import { MemoryMounter, NodeFileSystem, type Logger, type StoreClient, type StoreMemory } from '@memory-mounter/core';
import { InMemoryStoreClient } from '@memory-mounter/testing';

/**
 * The engine in a process of its own, for the exhaustion class (race.test.ts runs it as a bundle,
 * see ../reliability/child-bundle.ts). The parent measures this process's memory from outside
 * (/proc/<pid>/status), and can kill it when an operation runs past its time bound: a vulnerable
 * engine reading gigabytes cannot be interrupted in-process.
 *
 * Protocol, over the IPC channel: the parent sends { op } with op one of 'materialize',
 * 'reconcile', 'finalize'; the child answers { done: op, threw? }. 'materialize' makes a fresh
 * MemoryMounter first. The store is this process's own InMemoryStoreClient, seeded from the
 * arguments, behind HugeMemoryClient.
 */
export interface EngineChildArgs {
  memoryRoot: string;
  storeId: string;
  mountPath: string;
  seed: Record<string, string>;
  /** The memory the store answers with `hugeBytes` of content. */
  hugePath: string;
  hugeBytes: number;
}

export type EngineOp = 'materialize' | 'reconcile' | 'finalize';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * A store that answers one memory with a huge content, in listings and gets alike, with a
 * matching sha256 and size: a broken or hostile server. Everything else is the fake store's.
 */
export class HugeMemoryClient implements StoreClient {
  readonly #content: string;
  readonly #sha: string;

  constructor(
    private readonly inner: StoreClient,
    private readonly hugePath: string,
    private readonly hugeBytes: number,
  ) {
    this.#content = 'x'.repeat(hugeBytes - 1) + '\n';
    this.#sha = createHash('sha256').update(this.#content).digest('hex');
  }

  #swell(m: StoreMemory): StoreMemory {
    if (m.path !== this.hugePath) return m;
    const swollen: StoreMemory = { ...m, content_sha256: this.#sha, content_size_bytes: this.hugeBytes };
    if (typeof m.content === 'string') swollen.content = this.#content;
    return swollen;
  }

  async *list(storeId: string, opts?: Parameters<StoreClient['list']>[1]): AsyncIterable<StoreMemory> {
    for await (const m of this.inner.list(storeId, opts)) yield this.#swell(m);
  }
  async get(storeId: string, memoryId: string, opts?: { signal?: AbortSignal }): Promise<StoreMemory> {
    return this.#swell(await this.inner.get(storeId, memoryId, opts));
  }
  create(...args: Parameters<StoreClient['create']>): Promise<StoreMemory> {
    return this.inner.create(...args);
  }
  update(...args: Parameters<StoreClient['update']>): Promise<StoreMemory> {
    return this.inner.update(...args);
  }
  delete(...args: Parameters<StoreClient['delete']>): Promise<void> {
    return this.inner.delete(...args);
  }
}

function main(): void {
  const args = JSON.parse(process.argv[2]!) as EngineChildArgs;
  const store = new InMemoryStoreClient();
  store.seed(args.storeId, args.seed);
  const client = new HugeMemoryClient(store, args.hugePath, args.hugeBytes);
  let mounter: MemoryMounter | undefined;
  const run = async (op: EngineOp): Promise<unknown> => {
    if (op === 'materialize') {
      mounter = new MemoryMounter({ storeClient: client, fileSystem: new NodeFileSystem(), memoryRoot: args.memoryRoot, logger: silent });
      return mounter.materialize([{ type: 'memory_store', memory_store_id: args.storeId, mount_path: args.mountPath }]);
    }
    if (!mounter) throw new Error(`${op} before materialize`);
    return op === 'reconcile' ? mounter.reconcile({ force: true }) : mounter.finalize();
  };
  process.on('message', (msg: { op: EngineOp }) => {
    run(msg.op).then(
      () => process.send!({ done: msg.op }),
      (err: unknown) => process.send!({ done: msg.op, threw: err instanceof Error ? err.message : String(err) }),
    );
  });
  process.send!({ ready: true });
}

main();
