import { mkdtemp, realpath, rm, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { InMemoryStoreClient } from '@memory-mounter/testing';
import { MemoryMounter, NodeFileSystem } from '@memory-mounter/core';
it('prof', async () => {
  const client = new InMemoryStoreClient();
  client.seed('s', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`/notes/n${i}.md`, 'x'.repeat(1600)])));
  for (let r = 0; r < 4; r++) {
    const base = await realpath(await mkdtemp(join(tmpdir(), 'prof-')));
    const root = join(base, 'm'); await mkdir(root);
    const m = new MemoryMounter({ storeClient: client, fileSystem: new NodeFileSystem(), memoryRoot: root, logger: { debug() {}, info() {}, warn() {}, error() {} } });
    let t = performance.now();
    await m.materialize([{ type: 'memory_store', memory_store_id: 's', name: 'n' }]);
    const mat = performance.now() - t; t = performance.now();
    await m.finalize();
    console.log('materialize', mat.toFixed(0), 'finalize', (performance.now() - t).toFixed(0));
    await rm(base, { recursive: true, force: true });
  }
});
