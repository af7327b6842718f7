import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryMounter, type Logger } from '@memory-mounter/core';
import { InMemoryStoreClient } from '@memory-mounter/testing';

/**
 * Issue 18 item 3 at a real descriptor limit: fd-limit.test.ts runs this (bundled, see
 * child-bundle.ts) under `ulimit -n`. It mounts a store of EDITS memories into argv[2], edits
 * every file, then opens /dev/null until the kernel answers EMFILE and holds those descriptors,
 * all but argv[3] of them, so the final scans meet the real limit; argv[4] >= 0 lets go of them
 * that many ms into finalize (a limit that passes), -1 holds them to the end. Prints what
 * finalize reported and what the store and the disk hold, as JSON.
 */
const EDITS = 120;
const STORE = 'memstore_fd';
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

async function main(): Promise<void> {
  const [memoryRoot, spareArg, releaseArg] = process.argv.slice(2);
  const spare = Number(spareArg);
  const releaseMs = Number(releaseArg);
  mkdirSync(memoryRoot!, { recursive: true });
  const client = new InMemoryStoreClient();
  client.seed(STORE, Object.fromEntries(Array.from({ length: EDITS }, (_, i) => [`/n${i}.md`, `note ${i}\n`])));
  const mounter = new MemoryMounter({ storeClient: client, memoryRoot: memoryRoot!, logger: silent });
  const [mount] = await mounter.materialize([{ type: 'memory_store', memory_store_id: STORE, name: 'FD' }]);
  const dir = mount!.path;
  for (let i = 0; i < EDITS; i++) writeFileSync(join(dir, `n${i}.md`), `note ${i}, edited\n`);

  const held: number[] = [];
  try {
    for (;;) held.push(openSync('/dev/null', 'r'));
  } catch (err) {
    if ((err as { code?: string }).code !== 'EMFILE') throw err;
  }
  for (let i = 0; i < spare; i++) closeSync(held.pop()!);
  const release = () => {
    while (held.length > 0) closeSync(held.pop()!);
  };
  const timer = releaseMs >= 0 ? setTimeout(release, releaseMs) : undefined;
  const report = await mounter.finalize();
  clearTimeout(timer);
  release();

  const onDisk: Record<string, string | null> = {};
  for (let i = 0; i < EDITS; i++) {
    try {
      onDisk[`/n${i}.md`] = readFileSync(join(dir, `n${i}.md`), 'utf8');
    } catch {
      onDisk[`/n${i}.md`] = null;
    }
  }
  process.stdout.write(JSON.stringify({ dir, edits: EDITS, held: held.length, report, store: client.snapshot(STORE), onDisk }));
}

main().catch((err: unknown) => {
  process.stdout.write(JSON.stringify({ error: String(err) }));
  process.exitCode = 1;
});
