import { mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicStoreClient, type WorkerItem } from '@memory-mounter/anthropic';
import { MemoryMounter, type Logger } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';
import { customWorker, type CustomWorkerOptions } from '../src/worker.js';

const ENV_KEY = 'environment-key';
const TOKEN = 'sessions-token-of-work-1';
const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' };
const STYLE = { type: 'memory_store', memory_store_id: 'memstore_style', name: 'House Style', access: 'read_only' };

/** A logger that keeps what it is told, so tests can read the worker's lines. */
function recordingLogger() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, ...(fields && { fields }) });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

describe('custom worker (the emulator standing for the service)', () => {
  let base: string;
  let memoryRoot: string;
  let workdir: string;
  let stateDir: string;
  let server: MemoryApiServer;
  let log: ReturnType<typeof recordingLogger>;

  beforeEach(async () => {
    // realpath: the SDK's file tools canonicalize paths, so the roots must be canonical too.
    base = await realpath(await mkdtemp(join(tmpdir(), 'mm-custom-worker-')));
    memoryRoot = join(base, 'mnt-memory');
    workdir = join(base, 'work');
    stateDir = join(base, 'state');
    for (const dir of [memoryRoot, workdir, stateDir]) await mkdir(dir);
    // The memory endpoints take only an item's sessions token, the queue only the environment key.
    server = new MemoryApiServer({ apiKey: TOKEN, controlPlane: { environmentKey: ENV_KEY } });
    await server.start();
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seed('memstore_style', { '/tone.md': 'Be brief.\n' });
    log = recordingLogger();
  });
  afterEach(async () => {
    await server.close();
    await rm(base, { recursive: true, force: true });
  });

  const client = () => new Anthropic({ apiKey: null, authToken: ENV_KEY, baseURL: server.baseURL, maxRetries: 0 });
  const worker = (over: Partial<CustomWorkerOptions> = {}) =>
    customWorker({
      client: client(),
      environmentId: 'env_emulated',
      environmentKey: ENV_KEY,
      workdir,
      memoryRoot,
      stateDir,
      drain: true,
      maxIdleMs: 50,
      logger: log.logger,
      mounter: { newFileSettle: 0 },
      ...over,
    });

  it('its own save_note tool goes through the write guard: saved into a store by name, refused for a read-only one or no store', async () => {
    server.seedSession('sesn_1', { resources: [NOTES, STYLE] });
    server.controlPlane.playSession('sesn_1', [
      { name: 'save_note', input: { store: 'Notes', title: 'met', text: 'Ana, Bo.\n' } },
      { name: 'save_note', input: { store: 'House Style', title: 'tone', text: 'Shout.\n' } },
      { name: 'save_note', input: { store: 'Scratch', title: 'x', text: 'no such store\n' } },
    ]);
    server.controlPlane.enqueue({ sessionId: 'sesn_1', sessionsToken: TOKEN });
    const pushed: Array<[string, string]> = [];

    await worker({ on: { pushed: (e, item) => pushed.push([item!.sessionId, e.path]) } }).run();

    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => [o.isError, o.text.replace(memoryRoot, '<root>')])).toEqual([
      [false, 'saved <root>/notes/notes/met.md'],
      [true, expect.stringMatching(/^save_note: refused: .*house-style\/notes\/tone\.md.*read-only/)],
      [true, expect.stringMatching(/^save_note: refused: .*scratch\/notes\/x\.md/)],
    ]);
    expect(server.snapshot('memstore_notes')).toEqual({ '/notes/met.md': 'Ana, Bo.\n', '/todo.md': '- buy milk\n' });
    expect(server.snapshot('memstore_style')).toEqual({ '/tone.md': 'Be brief.\n' });
    // The event reached both the worker's own log line and the caller's listener, with its item.
    expect(pushed).toEqual([['sesn_1', '/notes/met.md']]);
    expect(log.lines.filter((l) => l.msg === 'memory pushed').map((l) => l.fields?.['path'])).toEqual(['/notes/met.md']);
  });

  it('a failed item is logged and let go; the next one is served', async () => {
    server.seedSession('sesn_bad', { resources: [NOTES] });
    server.seedSession('sesn_good', { resources: [NOTES] });
    // No sessions token: the stores cannot be reached, so the item fails before any tool runs.
    server.controlPlane.enqueue({ id: 'work_bad', sessionId: 'sesn_bad', secret: null });
    server.controlPlane.enqueue({ id: 'work_good', sessionId: 'sesn_good', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_good', [{ name: 'write', input: { file_path: join(memoryRoot, 'notes', 'b.md'), content: 'b\n' } }]);

    await worker().run();

    expect(log.lines.filter((l) => l.msg === 'work item let go').map((l) => [l.fields?.['work_id'], l.fields?.['code']])).toEqual([['work_bad', 'mount_failed']]);
    expect(server.snapshot('memstore_notes')['/b.md']).toBe('b\n');
  });

  it('stateDir: the edit a killed worker had not pushed reaches the store before the next session at that path mounts', async () => {
    // A worker killed mid-session: its mounter recorded the mount, the agent edited, no finalize.
    const dead = new MemoryMounter({
      storeClient: new AnthropicStoreClient({ client: client().withOptions({ apiKey: null, authToken: TOKEN }) }),
      memoryRoot,
      stateDir,
      logger: recordingLogger().logger,
    });
    await dead.materialize([NOTES]);
    await writeFile(join(memoryRoot, 'notes', 'todo.md'), '- buy oat milk\n');

    server.seedSession('sesn_1', { resources: [NOTES] });
    server.controlPlane.enqueue({ sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', [{ name: 'read', input: { file_path: join(memoryRoot, 'notes', 'todo.md') } }]);
    const recovered: Array<WorkerItem | null> = [];

    await worker({ on: { recovered: (_report, item) => recovered.push(item) } }).run();

    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => o.text)).toEqual(['- buy oat milk\n']);
    expect(server.snapshot('memstore_notes')).toEqual({ '/todo.md': '- buy oat milk\n' });
    // Once at start-up (the environment key reaches no store), once for the item, with its token.
    expect(recovered.map((item) => item?.sessionId ?? null)).toEqual([null, 'sesn_1']);
    expect(await readdir(memoryRoot)).toEqual([]);
  });

  it('memorySyncIntervalMs: null runs the session without memory, and touches no store', async () => {
    server.seedSession('sesn_1', { resources: [NOTES] });
    server.controlPlane.enqueue({ sessionId: 'sesn_1', secret: null });
    server.controlPlane.playSession('sesn_1', [{ name: 'write', input: { file_path: join(workdir, 'scratch.md'), content: 'x\n' } }]);
    server.resetRequests();

    await worker({ memorySyncIntervalMs: null }).run();

    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => o.isError)).toEqual([false]);
    expect(server.requestCount()).toBe(0);
    expect(await readdir(memoryRoot)).toEqual([]);
  });
});
