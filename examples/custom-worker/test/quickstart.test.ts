import { mkdir, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { MemoryApiServer } from '@memory-mounter/testing';

// The shortest working worker, as docs/getting-started.md opens with it: the guide's first code
// block is src/quickstart.ts to the byte, at most 15 lines, and it serves a session offline
// (the emulator stands for the service: ANTHROPIC_BASE_URL points the SDK at it).

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

it('the guide opens with src/quickstart.ts, in at most 15 lines', async () => {
  const guide = await readFile(here('../../../docs/getting-started.md'), 'utf8');
  const first = /```ts\n([\s\S]*?)```/.exec(guide)?.[1];
  const file = await readFile(here('../src/quickstart.ts'), 'utf8');
  expect(first).toBe(file);
  expect(file.trimEnd().split('\n').length).toBeLessThanOrEqual(15);
});

it('polls, mounts the session’s memory under the default toolset, serves the session, and pushes the agent’s edits', async () => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-quickstart-')));
  const workdir = join(base, 'work');
  const memoryRoot = join(base, 'mnt-memory');
  await mkdir(workdir);
  await mkdir(memoryRoot);
  // As the service stands: memory takes the item's sessions token, the queue the environment key.
  const server = new MemoryApiServer({ apiKey: 'sessions-token', controlPlane: { environmentKey: 'environment-key' } });
  const saved = { ...process.env };
  try {
    const baseURL = await server.start();
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seedSession('sesn_1', { resources: [{ type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' }] });
    const todo = join(memoryRoot, 'notes', 'todo.md');
    // `terminated`: the runner lets go at once, without waiting out its idle time (60 s).
    server.controlPlane.playSession(
      'sesn_1',
      [
        { name: 'read', input: { file_path: todo } },
        { name: 'edit', input: { file_path: todo, old_string: 'milk', new_string: 'oat milk' } },
      ],
      { end: 'terminated' },
    );
    const work = server.controlPlane.enqueue({ sessionId: 'sesn_1', sessionsToken: 'sessions-token' });
    const stopped = new Promise<void>((resolve) => server.controlPlane.on((e) => e.kind === 'stopped' && resolve()));

    delete process.env['ANTHROPIC_API_KEY'];
    Object.assign(process.env, {
      ANTHROPIC_BASE_URL: baseURL,
      ANTHROPIC_ENVIRONMENT_ID: 'env_emulated',
      ANTHROPIC_ENVIRONMENT_KEY: 'environment-key',
      WORKDIR: workdir,
      MEMORY_ROOT: memoryRoot,
    });
    const running = import('../src/quickstart.js');
    await stopped;
    // What an operator's SIGTERM does, minus the signal: the worker's own listeners run.
    process.emit('SIGTERM');
    await running;
    process.emit('SIGINT'); // the snippet's other listener, so that none is left behind

    expect(server.controlPlane.session('sesn_1')!.outcomes.map((o) => [o.call.name, o.isError, o.text.slice(0, 11)])).toEqual([
      ['read', false, '- buy milk\n'],
      ['edit', false, expect.any(String)],
    ]);
    expect(server.snapshot('memstore_notes')).toEqual({ '/todo.md': '- buy oat milk\n' });
    expect(server.controlPlane.work(work.id).state).toBe('stopped');
    expect(await readdir(memoryRoot)).toEqual([]);
  } finally {
    process.env = saved;
    await server.close();
    await rm(base, { recursive: true, force: true });
  }
});
