// The packed packages as an outside CommonJS project sees them: require() reaches the `.cjs`
// builds and their `.d.cts` types.
import core = require('@memory-mounter/core');
import engine = require('@memory-mounter/core/engine');
import anthropic = require('@memory-mounter/anthropic');
import testing = require('@memory-mounter/testing');
import testingAnthropic = require('@memory-mounter/testing/anthropic');
import sdkToolError = require('@anthropic-ai/sdk/lib/tools/ToolError');
import sdkRunnable = require('@anthropic-ai/sdk/lib/tools/BetaRunnableTool');

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`smoke (cjs): ${what}`);
  console.log(`ok   ${what}`);
}

check(require.resolve('@memory-mounter/core').endsWith('index.cjs'), 'require() loads the CommonJS build');
check(core.mountPathSlug('Demo Memory') === 'demo-memory', 'core works through require()');
check(typeof anthropic.AnthropicStoreClient === 'function' && typeof anthropic.withMemorySync === 'function', 'anthropic exports its classes');
check(typeof testing.MemoryApiServer === 'function' && typeof testing.InMemoryStoreClient === 'function', 'testing exports its classes');
check(require.resolve('@memory-mounter/core/engine').endsWith('engine.cjs') && engine.classify('a', { sha: 'b' }, { sha: 'a' }).row === 'local_changed', 'the engine subpath works through require()');
check(typeof testingAnthropic.ScriptedControlPlane === 'function', 'the testing/anthropic subpath works through require()');

async function main(): Promise<void> {
  const store = new testing.InMemoryStoreClient();
  store.seed('memstore_a', { '/a.md': 'a\n' });
  const fileSystem = new testing.MemfsFileSystem({ '/mnt/memory': null });
  const mounter = new core.MemoryMounter({ storeClient: store, fileSystem });
  await mounter.materialize([{ type: 'memory_store', memory_store_id: 'memstore_a', name: 'A', access: 'read_only' }]);
  const tool = { type: 'custom' as const, name: 'write', input_schema: { type: 'object' as const }, parse: (input: unknown) => input, run: async (_input: unknown) => 'x' };
  const [guarded] = anthropic.withMemorySync([tool], mounter, { realPath: false });
  const refusal = await guarded!.run({ file_path: '/mnt/memory/a/a.md' }).then(() => undefined, (err: unknown) => err);
  check(refusal instanceof sdkToolError.ToolError, "a refused write is the host's ToolError (CommonJS)");
  check(/refused/.test(String(sdkRunnable.toolErrorContent(refusal))), 'the SDK posts the refusal text, not its generic one (CommonJS)');
  await mounter.finalize();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
