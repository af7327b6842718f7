import { MemoryMounter, MemoryMountError, type Logger } from '@memory-mounter/core';
import { InMemoryStoreClient } from '@memory-mounter/testing';

/**
 * Materializes one store into the memoryRoot given as argv[2] and prints the outcome as JSON.
 * corpus.test.ts runs it (bundled, see child-bundle.ts) as an unprivileged user, because root
 * writes through any permission bits.
 */
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

async function main(): Promise<void> {
  const memoryRoot = process.argv[2]!;
  const mounter = new MemoryMounter({ storeClient: new InMemoryStoreClient(), memoryRoot, logger: silent });
  try {
    await mounter.materialize([{ type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' }]);
    process.stdout.write(JSON.stringify({ ok: true }));
  } catch (err) {
    const e = err as Partial<MemoryMountError> & Error;
    process.stdout.write(
      JSON.stringify({ ok: false, name: e.name, mountError: err instanceof MemoryMountError, code: e.code ?? (err as { code?: string }).code, message: e.message, path: e.path }),
    );
  }
}

void main();
