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
import { MemoryMounter, NodeFileSystem, type FinalizeReport } from '@memory-mounter/core';
import { AnthropicStoreClient, withMemorySync } from '@memory-mounter/anthropic';
import { MemoryApiServer } from '@memory-mounter/testing';

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

  const report: FinalizeReport = await mounter.finalize({ outcome: 'completed' });
  check(report.removed.length === 2, 'finalize removed both folders');
  check(server.snapshot('memstore_notes')['/todo.md'] === 'buy oat milk\n', 'finalize pushed the edit');
  check(server.snapshot('memstore_style')['/tone.md'] === 'Be brief.\n', 'the read-only store is untouched');
  check((await readdir(memoryRoot)).length === 0, 'nothing is left on disk');
} finally {
  await server.close();
  await rm(memoryRoot, { recursive: true, force: true });
}
