// The packed packages as an outside ESM project sees them: every import resolves through the
// tarballs' `exports` (types included: tsc runs with skipLibCheck off), and one session runs
// against the emulator through the real SDK on a temporary folder.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import Anthropic from '@anthropic-ai/sdk';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { toolErrorContent, type BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { MemoryMounter, NodeFileSystem, sha256Hex, type FinalizeReport } from '@memory-mounter/core';
import { classify, planStore, scanStore, StoreFolder } from '@memory-mounter/core/engine';
import { AnthropicStoreClient, sessionsTokenFromSecret, withMemorySync, type ControlPlane } from '@memory-mounter/anthropic';
import { MemoryApiServer } from '@memory-mounter/testing';
import { ScriptedControlPlane, sessionWorkItem, workSecretFor } from '@memory-mounter/testing/anthropic';

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`smoke (esm): ${what}`);
  console.log(`ok   ${what}`);
}

// One copy of the SDK: the one the host installed is the one @memory-mounter/anthropic loads.
const here = createRequire(import.meta.url);
const fromAnthropic = createRequire(here.resolve('@memory-mounter/anthropic'));
check(here.resolve('@anthropic-ai/sdk') === fromAnthropic.resolve('@anthropic-ai/sdk'), 'one @anthropic-ai/sdk in the host');

const server = new MemoryApiServer({ apiKey: 'tok_smoke' });
const memoryRoot = await mkdtemp(join(tmpdir(), 'mm-smoke-esm-'));
try {
  server.seed('memstore_notes', { '/todo.md': 'buy milk\n' });
  server.seed('memstore_style', { '/tone.md': 'Be brief.\n' });
  const client = new Anthropic({ apiKey: 'tok_smoke', baseURL: await server.start(), maxRetries: 0 });
  const mounter = new MemoryMounter({
    storeClient: new AnthropicStoreClient({ client }),
    fileSystem: new NodeFileSystem(),
    memoryRoot,
  });
  const mounts = await mounter.materialize([
    { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' },
    { type: 'memory_store', memory_store_id: 'memstore_style', name: 'Style', access: 'read_only' },
  ]);
  check(mounts.length === 2, 'materialize mounted both stores');
  check((await readFile(join(memoryRoot, 'notes', 'todo.md'), 'utf8')) === 'buy milk\n', 'the store landed on disk');

  // A write tool wrapped by withMemorySync: a refused write throws the host SDK's ToolError.
  const write: BetaRunnableTool = {
    type: 'custom',
    name: 'write',
    input_schema: { type: 'object' },
    parse: (input: unknown) => input,
    run: async (input) => {
      const { file_path, content } = input as { file_path: string; content: string };
      await writeFile(file_path, content);
      return 'written';
    },
  };
  const [guarded] = withMemorySync([write], mounter, { workdir: memoryRoot });
  let refusal: unknown;
  try {
    await guarded!.run({ file_path: join(memoryRoot, 'style', 'tone.md'), content: 'Be verbose.\n' });
  } catch (err) {
    refusal = err;
  }
  check(refusal instanceof ToolError, "a refused write is the host's ToolError");
  check(/refused: .*read-only/.test(String(toolErrorContent(refusal))), 'the SDK posts the refusal text, not its generic one');
  await guarded!.run({ file_path: join(memoryRoot, 'notes', 'todo.md'), content: 'buy oat milk\n' });

  // The engine subpath: scan the mounted folder, and plan it against the store by hand.
  const folder = await StoreFolder.open(new NodeFileSystem(), join(memoryRoot, 'notes'));
  try {
    const snapshot = await scanStore(folder, 'memstore_notes');
    const local = snapshot.files.get('/todo.md');
    check(local?.sha === sha256Hex('buy oat milk\n'), '@memory-mounter/core/engine: scanStore reads the folder');
    const [memory] = server.memories('memstore_notes');
    const base = sha256Hex('buy milk\n');
    check(classify(base, local, { sha: memory!.content_sha256 }).row === 'local_changed', '@memory-mounter/core/engine: classify');
    const plan = planStore({
      access: 'read_write', deletionMode: 'enabled', now: Date.now(), graceMs: 0,
      baseline: new Map([['/todo.md', base]]), localFiles: snapshot.files, localBlocked: snapshot.blocked,
      remote: new Map([['/todo.md', { id: memory!.id, sha: memory!.content_sha256 }]]),
      missingSince: new Map(), refused: new Map(), settleAfter: null,
    });
    // Read as JSON, not field by field: the plan's shape is the engine's, and may grow.
    check(JSON.stringify(plan).includes('"type":"update"') && !JSON.stringify(plan).includes('"type":"pull"'), '@memory-mounter/core/engine: planStore plans the update');
  } finally {
    await folder.close();
  }

  // The control-plane doubles, from @memory-mounter/testing/anthropic, fit @memory-mounter/anthropic.
  const plane: ControlPlane = new ScriptedControlPlane([sessionWorkItem('work_1', 'sesn_1', workSecretFor('tok'))], {});
  const claimed = [];
  for await (const item of plane.claimWork(new AbortController().signal)) claimed.push(sessionsTokenFromSecret(item.secret));
  check(claimed.length === 1 && claimed[0] === 'tok', '@memory-mounter/testing/anthropic: ScriptedControlPlane is a ControlPlane');

  const report: FinalizeReport = await mounter.finalize({ outcome: 'completed' });
  check(report.removed.length === 2, 'finalize removed both folders');
  check(server.snapshot('memstore_notes')['/todo.md'] === 'buy oat milk\n', 'finalize pushed the edit');
  check(server.snapshot('memstore_style')['/tone.md'] === 'Be brief.\n', 'the read-only store is untouched');
  check((await readdir(memoryRoot)).length === 0, 'nothing is left on disk');
} finally {
  await server.close();
  await rm(memoryRoot, { recursive: true, force: true });
}
