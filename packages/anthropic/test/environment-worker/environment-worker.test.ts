import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryConfigError, MemoryMounter, type FinalizeReport, type RecoveryReport } from '@memory-mounter/core';
import type { MemoryApiServer } from '@memory-mounter/testing';
import { AnthropicStoreClient } from '../../src/anthropic-store-client.js';
import { EnvironmentWorker } from '../../src/environment-worker.js';
import { WorkItemError } from '../../src/work-item-error.js';
import type { EnvironmentWorkerOptions, WorkerItem } from '../../src/worker-options.js';
import { emulator, ENV_ID, ENV_KEY, nextEvent, recordingLogger, tempWorkdir, TOKEN, workerClient, type LogLine } from './harness.js';

const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'notes' };
const STYLE = { type: 'memory_store', memory_store_id: 'memstore_style', name: 'style', access: 'read_only' };

describe('EnvironmentWorker against the emulator', () => {
  let dirs: Awaited<ReturnType<typeof tempWorkdir>>;
  let server: MemoryApiServer;
  let baseURL: string;
  let log: { logger: ReturnType<typeof recordingLogger>['logger']; lines: LogLine[] };

  beforeEach(async () => {
    dirs = await tempWorkdir();
    log = recordingLogger();
  });
  afterEach(async () => {
    await server.close();
    await dirs.cleanup();
  });

  async function start(leaseTtlSeconds?: number) {
    ({ server, baseURL } = await emulator(leaseTtlSeconds));
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seed('memstore_style', { '/tone.md': 'Be brief.\n' });
  }

  function worker(over: Partial<EnvironmentWorkerOptions> = {}): EnvironmentWorker {
    return new EnvironmentWorker({
      client: workerClient(baseURL),
      environmentId: ENV_ID,
      environmentKey: ENV_KEY,
      workdir: dirs.workdir,
      memoryRoot: dirs.memoryRoot,
      maxIdleMs: 50,
      drain: true,
      logger: log.logger,
      mounter: { newFileSettle: 0 },
      ...over,
    });
  }

  const notes = () => join(dirs.memoryRoot, 'notes');
  const errors = () => log.lines.filter((l) => l.level === 'error');

  it('serves a session end to end: skills, memory mounted before the first call, edits pushed, read-only refused, item stopped', async () => {
    await start();
    server.seedSkill('skill_greet', { name: 'greeter', files: { 'SKILL.md': '# Greeter\n' } });
    server.seedSession('sesn_1', { resources: [NOTES, STYLE], skills: [{ type: 'custom', skill_id: 'skill_greet', version: 'latest' }] });
    const skill = join(dirs.workdir, 'skills', 'greeter', 'SKILL.md');
    server.controlPlane.playSession('sesn_1', [
      { name: 'read', input: { file_path: join(notes(), 'todo.md') } },
      { name: 'edit', input: { file_path: join(notes(), 'todo.md'), old_string: 'milk', new_string: 'oat milk' } },
      { name: 'write', input: { file_path: join(notes(), 'journal', 'day-1.md'), content: 'Met the team.\n' } },
      { name: 'write', input: { file_path: join(dirs.memoryRoot, 'style', 'tone.md'), content: 'Be verbose.\n' } },
      { name: 'write', input: { file_path: join(dirs.memoryRoot, 'scratch.md'), content: 'not a store\n' } },
      { name: 'read', input: { file_path: skill } },
    ]);
    const work = server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    const finalized: FinalizeReport[] = [];
    const mounted: string[][] = [];

    await worker({ on: { mounted: (m) => mounted.push(m.map((s) => s.mountPath)), finalized: (r) => finalized.push(r) } }).run();

    const outcomes = server.controlPlane.session('sesn_1')!.outcomes;
    expect(outcomes.map((o) => [o.call.name, o.isError])).toEqual([
      ['read', false],
      ['edit', false],
      ['write', false],
      ['write', true],
      ['write', true],
      ['read', false],
    ]);
    // Mounted before the first tool call: the first read saw the store's content.
    expect(outcomes[0]!.text).toContain('- buy milk');
    expect(outcomes[3]!.text).toMatch(/read-only/);
    expect(outcomes[4]!.text).toMatch(/refused/);
    expect(outcomes[5]!.text).toContain('# Greeter');
    expect(mounted).toEqual([['/mnt/memory/notes', '/mnt/memory/style']]);
    expect(server.snapshot('memstore_notes')).toEqual({ '/journal/day-1.md': 'Met the team.\n', '/todo.md': '- buy oat milk\n' });
    expect(server.snapshot('memstore_style')).toEqual({ '/tone.md': 'Be brief.\n' });
    expect(finalized.map((r) => r.outcome)).toEqual(['completed']);
    expect(server.controlPlane.work(work.id).state).toBe('stopped');
    // The skill and the store folders are gone; nothing was logged as an error.
    expect(await readdir(dirs.memoryRoot)).toEqual([]);
    expect(await readdir(join(dirs.workdir, 'skills'))).toEqual([]);
    expect(errors()).toEqual([]);
  });

  it('a lease lost mid-session: its memory is finalized aborted with the edit pushed, the item is left, the next session is served', async () => {
    await start(1);
    server.seedSession('sesn_1', { resources: [NOTES] });
    server.seedSession('sesn_2', { resources: [NOTES] });
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.enqueue({ id: 'work_2', sessionId: 'sesn_2', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', async (outcomes) => {
      if (outcomes.length === 0) return { name: 'edit', input: { file_path: join(notes(), 'todo.md'), old_string: 'milk', new_string: 'oat milk' } };
      // The edit is on disk, not yet in the store (the sync interval, 15 s, has not passed).
      // Another worker takes the item: the next heartbeat is not extended.
      const lost = nextEvent(server, (e) => e.kind === 'heartbeat' && e.workId === 'work_1' && !e.answer.lease_extended);
      server.controlPlane.expireLease('work_1');
      await lost;
      return null;
    });
    server.controlPlane.playSession('sesn_2', [{ name: 'read', input: { file_path: join(notes(), 'todo.md') } }]);
    const finalized: Array<[string, FinalizeReport]> = [];
    const failed: WorkItemError[] = [];

    await worker({ on: { finalized: (r, item) => finalized.push([item!.sessionId, r]), failed: (e) => failed.push(e) } }).run();

    expect(finalized.map(([session, r]) => [session, r.outcome])).toEqual([
      ['sesn_1', 'aborted'],
      ['sesn_2', 'completed'],
    ]);
    // The aborted finalize's flush pushed the edit, and the next session read it.
    expect(finalized[0]![1].flush.stores.flatMap((s) => s.pushed)).toEqual(['/todo.md']);
    expect(server.controlPlane.session('sesn_2')!.outcomes.map((o) => o.text)).toEqual(['- buy oat milk\n']);
    // A typed error, logged with its code; the lost item is not stopped (it is another worker's), the next one is.
    expect(failed.map((e) => [e instanceof WorkItemError, e.code, e.workId])).toEqual([[true, 'lease_lost', 'work_1']]);
    expect(errors().map((l) => [l.msg, l.fields?.['code']])).toEqual([['work item failed', 'lease_lost']]);
    expect(server.controlPlane.work('work_1').state).not.toBe('stopped');
    expect(server.controlPlane.work('work_2').state).toBe('stopped');
  });

  it('a mount refused fails that item only (typed, logged); the next item is served', async () => {
    await start();
    server.seedSession('sesn_1', { resources: [NOTES] });
    server.seedSession('sesn_2', { resources: [{ ...NOTES, memory_store_id: 'memstore_other', name: 'other' }] });
    server.createStore('memstore_other');
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.enqueue({ id: 'work_2', sessionId: 'sesn_2', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', [{ name: 'read', input: { file_path: join(notes(), 'todo.md') } }]);
    server.controlPlane.playSession('sesn_2', [{ name: 'write', input: { file_path: join(dirs.memoryRoot, 'other', 'a.md'), content: 'a\n' } }]);
    // Someone else's folder at the first session's mount path: never adopted.
    await mkdir(notes());
    await writeFile(join(notes(), 'mine.md'), 'not yours\n');

    const failed: WorkItemError[] = [];
    await worker({ on: { failed: (e) => failed.push(e) } }).run();

    expect(failed.map((e) => [e.code, e.mountCode, e.workId])).toEqual([['mount_failed', 'mount_path_exists', 'work_1']]);
    expect(server.controlPlane.session('sesn_1')!.outcomes).toEqual([]);
    expect(server.snapshot('memstore_other')).toEqual({ '/a.md': 'a\n' });
    expect(server.controlPlane.work('work_1').state).toBe('stopped');
    expect(await readdir(notes())).toEqual(['mine.md']);
  });

  it('a tool of its own that throws fails its call only: the agent reads the error and the session goes on', async () => {
    await start();
    server.seedSession('sesn_1', { resources: [NOTES] });
    server.controlPlane.enqueue({ sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', [
      { name: 'explode', input: {} },
      { name: 'write', input: { file_path: join(notes(), 'after.md'), content: 'still here\n' } },
    ]);
    const explode = { type: 'custom' as const, name: 'explode', input_schema: { type: 'object' as const }, parse: (x: unknown) => x, run: async (): Promise<string> => {
      throw new ToolError('boom');
    } };

    await worker({ tools: (ctx) => [...betaAgentToolset20260401(ctx), explode] }).run();

    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => [o.call.name, o.isError, o.text])).toEqual([
      ['explode', true, 'boom'],
      ['write', false, expect.stringContaining('after.md')],
    ]);
    expect(server.snapshot('memstore_notes')['/after.md']).toBe('still here\n');
    expect(errors()).toEqual([]);
  });

  it('with stateDir: a folder a crashed worker left is recovered at start-up, its edit pushed; and again before an item whose mount path it holds', async () => {
    await start();
    const stateDir = join(dirs.base, 'state');
    await mkdir(stateDir);
    // A worker that died mid-session: its mounter wrote its record, the agent edited, no finalize.
    const crash = async () => {
      const dead = new MemoryMounter({
        storeClient: new AnthropicStoreClient({ client: workerClient(baseURL).withOptions({ apiKey: null, authToken: TOKEN }) }),
        memoryRoot: dirs.memoryRoot,
        stateDir,
        newFileSettle: 0,
        logger: recordingLogger().logger,
      });
      await dead.materialize([NOTES]);
      await writeFile(join(notes(), 'todo.md'), '- buy oat milk\n');
    };
    const recovered: Array<[WorkerItem | null, RecoveryReport]> = [];

    // At start-up, with the worker's own client: here it holds the environment key, which the
    // memory endpoints refuse, so the folder is left for the item that needs it.
    await crash();
    server.seedSession('sesn_1', { resources: [NOTES] });
    server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    server.controlPlane.playSession('sesn_1', [{ name: 'read', input: { file_path: join(notes(), 'todo.md') } }]);

    await worker({ stateDir, on: { recovered: (r, item) => recovered.push([item, r]) } }).run();

    expect(recovered.map(([item, r]) => [item?.workId ?? null, r.stores.map((s) => s.outcome)])).toEqual([
      [null, ['left']],
      ['work_1', ['recovered']],
    ]);
    // The dead worker's edit reached the store before the session mounted, so the agent read it.
    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => o.text)).toEqual(['- buy oat milk\n']);
    expect(server.snapshot('memstore_notes')).toEqual({ '/todo.md': '- buy oat milk\n' });
    expect(errors()).toEqual([]);
  });

  it('handleItem() with only the ANTHROPIC_* variables serves the item end to end, on the sessions token alone', async () => {
    await start();
    server.seedSession('sesn_env', { resources: [NOTES] });
    const queued = server.controlPlane.enqueue({ id: 'work_env', sessionId: 'sesn_env', sessionsToken: TOKEN });
    // What `ant worker poll --on-work` hands the process it starts: the claimed item's ids and secret.
    const secret = Buffer.from(JSON.stringify({ sessions_token: TOKEN })).toString('base64url');
    server.controlPlane.playSession('sesn_env', [{ name: 'write', input: { file_path: join(notes(), 'from-env.md'), content: 'hello\n' } }]);
    const saved = { ...process.env };
    Object.assign(process.env, {
      ANTHROPIC_WORK_ID: queued.id,
      ANTHROPIC_ENVIRONMENT_ID: ENV_ID,
      ANTHROPIC_SESSION_ID: 'sesn_env',
      ANTHROPIC_WORK_SECRET: secret,
    });
    delete process.env['ANTHROPIC_ENVIRONMENT_KEY'];
    try {
      // No key at all in the worker: every call of the item rides the token from the secret.
      const client = workerClient(baseURL).withOptions({ apiKey: null, authToken: 'not-a-credential-the-service-takes' });
      await new EnvironmentWorker({ client, workdir: dirs.workdir, memoryRoot: dirs.memoryRoot, maxIdleMs: 50, logger: log.logger, mounter: { newFileSettle: 0 } }).handleItem();
    } finally {
      process.env = saved;
    }
    expect(server.snapshot('memstore_notes')['/from-env.md']).toBe('hello\n');
    expect(server.controlPlane.work(queued.id).state).toBe('stopped');
    expect(server.controlPlane.heartbeats(queued.id).length).toBeGreaterThan(0);
    expect(errors()).toEqual([]);
  });

  it('handleItem() names the first value missing after the fallbacks', async () => {
    await start();
    const saved = { ...process.env };
    for (const name of ['ANTHROPIC_WORK_ID', 'ANTHROPIC_ENVIRONMENT_ID', 'ANTHROPIC_SESSION_ID', 'ANTHROPIC_WORK_SECRET', 'ANTHROPIC_ENVIRONMENT_KEY']) delete process.env[name];
    try {
      const w = new EnvironmentWorker({ client: workerClient(baseURL) });
      await expect(w.handleItem()).rejects.toMatchObject({ name: 'MemoryConfigError', option: 'workId' });
      await expect(w.handleItem({ workId: 'w', environmentId: 'e' })).rejects.toMatchObject({ option: 'sessionId' });
      await expect(w.handleItem({ workId: 'w', environmentId: 'e', sessionId: 's' })).rejects.toMatchObject({ option: 'environmentKey' });
    } finally {
      process.env = saved;
    }
  });
});

describe('EnvironmentWorker options', () => {
  const client = workerClient('http://127.0.0.1:9');

  it('an unknown key is a MemoryConfigError naming it; the mounter\'s name for a worker option says the worker\'s', () => {
    const attempt = (extra: Record<string, unknown>) => () => new EnvironmentWorker({ client, ...extra } as EnvironmentWorkerOptions);
    expect(attempt({ memoryRut: '/x' })).toThrow(MemoryConfigError);
    expect(attempt({ memoryRut: '/x' })).toThrow(/unknown option "memoryRut"/);
    expect(attempt({ memory_sync_interval: 15 })).toThrow(/memorySyncIntervalMs \(milliseconds\)/);
    expect(attempt({ unrestrictedPaths: true })).toThrow(expect.objectContaining({ option: 'unrestrictedPaths' }));
    expect(attempt({ memorySyncIntervalMs: -1 })).toThrow(expect.objectContaining({ option: 'memorySyncIntervalMs' }));
  });

  it('the mounter\'s options are checked at construction, before any work is claimed', () => {
    const attempt = (extra: Partial<EnvironmentWorkerOptions>) => () => new EnvironmentWorker({ client, ...extra });
    expect(attempt({ memoryRoot: 'relative/path' })).toThrow(expect.objectContaining({ name: 'MemoryConfigError', option: 'memoryRoot' }));
    expect(attempt({ mounter: { finalSyncTimeout: -1 } })).toThrow(expect.objectContaining({ option: 'finalSyncTimeout' }));
    // Milliseconds, at most an hour: 15 s mistyped as 15,000 s is refused, by the worker's name.
    expect(attempt({ memorySyncIntervalMs: 15_000_000 })).toThrow(expect.objectContaining({ option: 'memorySyncIntervalMs' }));
  });

  it('takes every option of the SDK\'s worker, with its defaults', () => {
    const w = new EnvironmentWorker({
      client,
      environmentId: 'env',
      environmentKey: 'key',
      tools: [],
      workdir: '/w',
      maxFileBytes: null,
      maxIdleMs: 1,
      memorySyncIntervalMs: null,
      memorySyncDeletions: 'log_only',
      workerId: 'me',
      signal: new AbortController().signal,
      requestOptions: { headers: { 'x-a': 'b' } },
    });
    expect([w.workdir, w.memorySyncIntervalMs, w.memorySyncDeletions, w.workerId]).toEqual(['/w', null, 'log_only', 'me']);
    expect(new EnvironmentWorker({ client }).workdir).toBe(process.cwd());
    expect(new EnvironmentWorker({ client }).memorySyncDeletions).toBe('enabled');
  });

  it('run() without environmentId or environmentKey is a MemoryConfigError naming it', async () => {
    await expect(new EnvironmentWorker({ client }).run()).rejects.toMatchObject({ option: 'environmentId' });
    await expect(new EnvironmentWorker({ client, environmentId: 'e' }).run()).rejects.toMatchObject({ option: 'environmentKey' });
  });
});
