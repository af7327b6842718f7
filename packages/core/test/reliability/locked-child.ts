import { chmodSync, lstatSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryMounter, type Logger } from '@memory-mounter/core';
import { InMemoryStoreClient } from '@memory-mounter/testing';

/**
 * One session whose agent locks part of its store folder, run as an unprivileged user (root
 * reads and removes through any permission bits): locked-folders.test.ts runs it bundled (see
 * child-bundle.ts) with argv[2] = JSON `{ memoryRoot, stateDir, lock, end }`, and reads one JSON
 * line from stdout.
 *
 * lock: `sub0` chmod 0 on /sub; `deep0` chmod 0 on /sub/deep; `root0` chmod 0 on the store
 * folder; `a-w` what `chmod -R a-w` leaves (folders 0555, files 0444, the store folder too);
 * `sub500` chmod 0500 on /sub.
 * end: `finalize`, or `crash` (the session dies; MemoryMounter.recover runs after it).
 * Then a second session mounts the same store at the same mount path.
 */
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const STORE = 'memstore_locked';
const resource = { type: 'memory_store', memory_store_id: STORE, name: 'notes', access: 'read_write' as const };

interface Args {
  memoryRoot: string;
  stateDir: string;
  lock: 'sub0' | 'deep0' | 'root0' | 'a-w' | 'sub500';
  end: 'finalize' | 'crash';
}

function readOnlyTree(path: string): void {
  if (lstatSync(path).isDirectory()) {
    for (const name of readdirSync(path)) readOnlyTree(join(path, name));
    chmodSync(path, 0o555);
  } else chmodSync(path, 0o444);
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as Args;
  const client = new InMemoryStoreClient();
  client.seed(STORE, { '/a.md': 'a\n', '/sub/b.md': 'b\n', '/sub/deep/c.md': 'c\n' });
  const options = { storeClient: client, memoryRoot: args.memoryRoot, stateDir: args.stateDir, logger: silent };
  const first = new MemoryMounter(options);
  await first.materialize([resource]);
  const dir = join(args.memoryRoot, 'notes');
  // The agent's last words: a new note in the folder it then locks.
  writeFileSync(join(dir, 'sub', 'deep', 'new.md'), "the agent's new note\n");
  if (args.lock === 'sub0') chmodSync(join(dir, 'sub'), 0);
  if (args.lock === 'deep0') chmodSync(join(dir, 'sub', 'deep'), 0);
  if (args.lock === 'root0') chmodSync(dir, 0);
  if (args.lock === 'sub500') chmodSync(join(dir, 'sub'), 0o500);
  if (args.lock === 'a-w') readOnlyTree(dir);
  const out: Record<string, unknown> = {};
  if (args.end === 'finalize') {
    const report = await first.finalize();
    out.finalize = { removed: report.removed, leftInPlace: report.leftInPlace };
  } else {
    const report = await MemoryMounter.recover({ storeClient: client, stateDir: args.stateDir, memoryRoot: args.memoryRoot, logger: silent });
    out.recover = report.stores.map((s) => ({ outcome: s.outcome, left: s.left, pushed: s.pushed }));
  }
  // A finalize that left the folder leaves it with its record: recover finishes it.
  if (args.end === 'finalize' && exists(dir)) {
    const report = await MemoryMounter.recover({ storeClient: client, stateDir: args.stateDir, memoryRoot: args.memoryRoot, logger: silent });
    out.recover = report.stores.map((s) => ({ outcome: s.outcome, left: s.left, pushed: s.pushed }));
  }
  out.left = exists(dir);
  const pushed = client.memories(STORE).find((m) => m.path === '/sub/deep/new.md');
  out.pushed = pushed?.content ?? null;
  const next = new MemoryMounter(options);
  try {
    await next.materialize([resource]);
    out.next = 'mounted';
    await next.finalize();
  } catch (err) {
    out.next = (err as { code?: string }).code ?? String(err);
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

void main().catch((err: unknown) => {
  process.stdout.write(`${JSON.stringify({ crashed: String(err instanceof Error ? err.stack : err) })}\n`);
});
