import { mkdir, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryMountError, type Logger } from '@memory-mounter/core';
import { ScriptedControlPlane, sessionWorkItem, workSecretFor, type AgentScript } from '@memory-mounter/testing/anthropic';
import { MemoryApiServer } from '@memory-mounter/testing';
import { handleWorkItem, runWorker, type WorkerOptions } from '../src/worker.js';

const TOKEN = 'sessions-token-of-work-1';
const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' };
const STYLE = { type: 'memory_store', memory_store_id: 'memstore_style', name: 'House Style', access: 'read_only' };

/** A logger that keeps what it is told, so tests can read the worker's error lines. */
function recordingLogger() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

describe('custom worker (offline: scripted control plane, memory through the SDK against the emulator)', () => {
  let base: string;
  let memoryRoot: string;
  let workdir: string;
  let server: MemoryApiServer;
  let now: number;

  beforeEach(async () => {
    // realpath: the SDK's file tools canonicalize paths, so the roots must be canonical too.
    base = await realpath(await mkdtemp(join(tmpdir(), 'mm-custom-worker-')));
    memoryRoot = join(base, 'mnt-memory');
    workdir = join(base, 'work');
    await mkdir(memoryRoot);
    await mkdir(workdir);
    now = 0;
  });
  afterEach(async () => {
    await server.close();
    await rm(base, { recursive: true, force: true });
  });

  async function options(controlPlane: ScriptedControlPlane, over: Partial<WorkerOptions> = {}): Promise<WorkerOptions> {
    const client = new Anthropic({ apiKey: 'environment-key', baseURL: await server.start(), maxRetries: 0 });
    // The scripted agent writes whole files between calls: nothing is mid-write, so no settle time.
    return { client, controlPlane, workdir, memoryRoot, now: () => now, newFileSettle: 0, ...over };
  }

  it('serves a work item end to end: the agent edits memory, the store gets the edits, the folders go', async () => {
    // The emulator takes only the item's sessions token: the environment key would be refused,
    // as the memory endpoints refuse it.
    server = new MemoryApiServer({ apiKey: TOKEN });
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seed('memstore_style', { '/style.md': 'Be brief.\n' });
    server.seedSession('sesn_1', { resources: [NOTES, STYLE, { type: 'file', file_id: 'file_1' }] });
    const notes = join(memoryRoot, 'notes');
    const style = join(memoryRoot, 'house-style');
    const seen: Record<string, Record<string, string>> = {};

    const agent: AgentScript = async (agent) => {
      const read = await agent.call('read', { file_path: join(notes, 'todo.md') });
      expect(read).toMatchObject({ isError: false, content: '- buy milk\n' });
      await agent.call('edit', { file_path: join(notes, 'todo.md'), old_string: 'milk', new_string: 'oat milk' });
      seen['before the interval'] = server.snapshot('memstore_notes');

      now += 15_000;
      await agent.call('write', { file_path: join(notes, 'journal/day-1.md'), content: 'Met the team.\n' });
      seen['after the next call'] = server.snapshot('memstore_notes');

      await agent.call('write', { file_path: join(style, 'style.md'), content: 'Be verbose.\n' });
      // Left for finalize: the interval has not passed again.
      await agent.call('edit', { file_path: join(notes, 'todo.md'), old_string: 'oat milk\n', new_string: 'oat milk\n- call mum\n' });
    };
    const controlPlane = new ScriptedControlPlane([sessionWorkItem('work_1', 'sesn_1', workSecretFor(TOKEN))], { sesn_1: agent });
    const { logger, lines } = recordingLogger();

    await runWorker(await options(controlPlane, { logger }), new AbortController().signal);

    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(controlPlane.sessionsRun).toEqual(['sesn_1']);
    // Reconcile after a tool call: nothing was pushed while the interval ran, and the first call
    // after it pushed the edit and the new file while the session was still going.
    expect(seen['before the interval']).toEqual({ '/todo.md': '- buy milk\n' });
    expect(seen['after the next call']).toEqual({ '/todo.md': '- buy oat milk\n', '/journal/day-1.md': 'Met the team.\n' });
    // Only the write into the read-only store failed, as an error result the agent can read; the
    // store never moved.
    const failed = controlPlane.calls.filter((c) => c.isError);
    expect(failed).toMatchObject([{ name: 'write', input: { file_path: join(style, 'style.md') } }]);
    expect(String(failed[0]!.content)).toMatch(/read-only/);
    expect(server.snapshot('memstore_style')).toEqual({ '/style.md': 'Be brief.\n' });
    // Finalize pushed the last edit, then removed the folders it created.
    expect(server.snapshot('memstore_notes')).toEqual({
      '/todo.md': '- buy oat milk\n- call mum\n',
      '/journal/day-1.md': 'Met the team.\n',
    });
    expect(await readdir(memoryRoot)).toEqual([]);
  });

  it('the refused write left the read-only file untouched on disk', async () => {
    server = new MemoryApiServer({ apiKey: TOKEN });
    server.seed('memstore_style', { '/style.md': 'Be brief.\n' });
    server.seedSession('sesn_1', { resources: [STYLE] });
    const styleFile = join(memoryRoot, 'house-style', 'style.md');
    let onDisk: string | undefined;
    const controlPlane = new ScriptedControlPlane([sessionWorkItem('work_1', 'sesn_1', workSecretFor(TOKEN))], {
      sesn_1: async (agent) => {
        await agent.call('edit', { file_path: styleFile, old_string: 'brief', new_string: 'verbose' });
        onDisk = await readFile(styleFile, 'utf8');
      },
    });

    const report = await handleWorkItem(sessionWorkItem('work_1', 'sesn_1', workSecretFor(TOKEN)), await options(controlPlane), new AbortController().signal);

    expect(controlPlane.calls[0]).toMatchObject({ name: 'edit', isError: true });
    expect(onDisk).toBe('Be brief.\n');
    expect(report).toMatchObject({ outcome: 'completed', removed: [join(memoryRoot, 'house-style')], leftInPlace: [] });
  });

  it('an item whose session has stores but whose secret has no sessions token fails with missing_secret', async () => {
    // Any credential here: the emulator's `apiKey` guards every route, while the real sessions
    // endpoint also takes the environment key, which is what fetches the session without a token.
    server = new MemoryApiServer();
    server.seedSession('sesn_1', { resources: [NOTES] });
    const controlPlane = new ScriptedControlPlane([], {});

    const failure = handleWorkItem(sessionWorkItem('work_1', 'sesn_1', null), await options(controlPlane), new AbortController().signal);

    await expect(failure).rejects.toBeInstanceOf(MemoryMountError);
    await expect(failure).rejects.toMatchObject({ code: 'missing_secret' });
    expect(controlPlane.sessionsRun).toEqual([]);
    expect(server.requestCount()).toBe(0);
    expect(await readdir(memoryRoot)).toEqual([]);
  });

  it('the poll loop logs a failed item and serves the next one', async () => {
    server = new MemoryApiServer();
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seedSession('sesn_1', { resources: [NOTES] });
    server.seedSession('sesn_2', { resources: [NOTES] });
    const controlPlane = new ScriptedControlPlane(
      [sessionWorkItem('work_1', 'sesn_1', 'not base64 json'), sessionWorkItem('work_2', 'sesn_2', workSecretFor(TOKEN))],
      { sesn_2: async (agent) => void (await agent.call('write', { file_path: join(memoryRoot, 'notes', 'b.md'), content: 'b' })) },
    );
    const { logger, lines } = recordingLogger();

    await runWorker(await options(controlPlane, { logger }), new AbortController().signal);

    expect(lines.filter((l) => l.level === 'error')).toEqual([
      { level: 'error', msg: 'work item failed', fields: expect.objectContaining({ work_id: 'work_1', code: 'missing_secret' }) },
    ]);
    expect(controlPlane.sessionsRun).toEqual(['sesn_2']);
    expect(server.snapshot('memstore_notes')).toEqual({ '/todo.md': '- buy milk\n', '/b.md': 'b' });
  });

  it('memory_sync_interval: null runs the session without memory, and touches no store', async () => {
    server = new MemoryApiServer({ apiKey: TOKEN });
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seedSession('sesn_1', { resources: [NOTES] });
    const controlPlane = new ScriptedControlPlane([sessionWorkItem('work_1', 'sesn_1', null)], {
      sesn_1: async (agent) => void (await agent.call('write', { file_path: 'scratch.md', content: 'x' })),
    });

    const report = await handleWorkItem(
      sessionWorkItem('work_1', 'sesn_1', null),
      await options(controlPlane, { memory_sync_interval: null }),
      new AbortController().signal,
    );

    expect(report).toBeNull();
    expect(controlPlane.calls).toMatchObject([{ name: 'write', isError: false }]);
    expect(server.requestCount()).toBe(0);
    expect(server.sessionRequests).toBe(0);
    expect(await readdir(memoryRoot)).toEqual([]);
  });
});
