import { mkdir, mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryApiServer } from '@memory-mounter/testing';
import { main } from '../src/main.js';

// `memory-mounter handle-item` as `ant worker poll --on-work` runs it: a fresh process per
// claimed item, told about it only through the ANTHROPIC_* variables. In-process here (main()),
// against the emulator standing for the service.

const TOKEN = 'sessions-token';
const secretFor = (token: string) => Buffer.from(JSON.stringify({ sessions_token: token })).toString('base64url');

describe('memory-mounter handle-item', () => {
  let base: string;
  let server: MemoryApiServer;
  let saved: NodeJS.ProcessEnv;
  let stdout: string[];
  let stderr: string[];

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'mm-cli-item-')));
    await mkdir(join(base, 'work'));
    await mkdir(join(base, 'mnt-memory'));
    server = new MemoryApiServer({ apiKey: TOKEN, controlPlane: { environmentKey: 'environment-key' } });
    await server.start();
    saved = { ...process.env };
    for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_ENVIRONMENT_KEY']) delete process.env[name];
    stdout = [];
    stderr = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(String(chunk)), true));
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    process.env = saved;
    await server.close();
    await rm(base, { recursive: true, force: true });
  });

  const args = () => ['handle-item', '--workdir', join(base, 'work'), '--memory-root', join(base, 'mnt-memory'), '--state-dir', join(base, 'state'), '--base-url', server.baseURL];

  it('serves the item from the ANTHROPIC_* variables alone: memory mounted, the agent’s edit pushed, the item stopped', async () => {
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    server.seedSession('sesn_1', { resources: [{ type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' }] });
    const todo = join(base, 'mnt-memory', 'notes', 'todo.md');
    server.controlPlane.playSession('sesn_1', [{ name: 'edit', input: { file_path: todo, old_string: 'milk', new_string: 'oat milk' } }], { end: 'terminated' });
    const work = server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    Object.assign(process.env, {
      ANTHROPIC_WORK_ID: work.id,
      ANTHROPIC_ENVIRONMENT_ID: work.environment_id,
      ANTHROPIC_SESSION_ID: 'sesn_1',
      ANTHROPIC_WORK_SECRET: secretFor(TOKEN),
    });

    expect(await main(args())).toBe(0);

    expect(server.snapshot('memstore_notes')).toEqual({ '/todo.md': '- buy oat milk\n' });
    expect(server.controlPlane.work(work.id).state).toBe('stopped');
    expect(await readdir(join(base, 'mnt-memory'))).toEqual([]);
    expect(stdout.join('')).toMatch(/served work item work_1: memory finalized completed/);
  });

  it('a missing variable is a usage error naming it (exit 2); a failed item is exit 1 with its code', async () => {
    expect(await main(args())).toBe(2);
    expect(stderr.join('')).toMatch(/workId is required: pass it or set ANTHROPIC_WORK_ID/);

    // A session with stores, an item whose secret carries no token, an environment key: refused, not run without memory.
    server.seedSession('sesn_2', { resources: [{ type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' }] });
    const work = server.controlPlane.enqueue({ id: 'work_2', sessionId: 'sesn_2', secret: null });
    Object.assign(process.env, {
      ANTHROPIC_WORK_ID: work.id,
      ANTHROPIC_ENVIRONMENT_ID: work.environment_id,
      ANTHROPIC_SESSION_ID: 'sesn_2',
      ANTHROPIC_ENVIRONMENT_KEY: 'environment-key',
    });
    expect(await main(args())).toBe(1);
    expect(stderr.join('')).toMatch(/work item work_2 failed \(mount_failed: missing_secret\)/);
  });
});
