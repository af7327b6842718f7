import { mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountSessionMemory } from '@memory-mounter/anthropic';
import { MemoryMountError, NodeFileSystem } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';

const TOKEN = 'sessions-token-for-item-1';
const secretWith = (payload: unknown) => Buffer.from(JSON.stringify(payload)).toString('base64url');
const memoryStore = { type: 'memory_store', memory_store_id: 'memstore_1', name: 'Notes' };

describe('mountSessionMemory (offline, through the SDK against the emulator)', () => {
  let server: MemoryApiServer;
  let client: Anthropic;
  let base: string;
  let memoryRoot: string;

  beforeEach(async () => {
    // The emulator accepts only the sessions token, as the memory endpoints refuse the
    // environment key: a hook that forgot to scope its client would fail here.
    server = new MemoryApiServer({ apiKey: TOKEN });
    client = new Anthropic({ apiKey: 'environment-key', baseURL: await server.start(), maxRetries: 0 });
    base = await realpath(await mkdtemp(join(tmpdir(), 'mm-hooks-')));
    memoryRoot = join(base, 'memory');
    await new NodeFileSystem().mkdir(memoryRoot);
    server.seed('memstore_1', { '/a.md': 'alpha' });
  });
  afterEach(async () => {
    await server.close();
    await rm(base, { recursive: true, force: true });
  });

  const options = (over: Record<string, unknown> = {}) => ({ client, memoryRoot, secret: secretWith({ sessions_token: TOKEN }), ...over });

  it('fetches the session with the sessions token and mounts its stores with it', async () => {
    server.seedSession('sesn_1', { resources: [memoryStore, { type: 'file', file_id: 'file_1' }] });
    const mounter = await mountSessionMemory(options({ sessionId: 'sesn_1' }));
    expect(mounter).not.toBeNull();
    expect(mounter!.roots).toEqual([join(memoryRoot, 'notes')]);
    expect(await readFile(join(memoryRoot, 'notes', 'a.md'), 'utf8')).toBe('alpha');
    await mounter!.finalize();
  });

  it('takes an already fetched session without fetching it again', async () => {
    const mounter = await mountSessionMemory(options({ session: { id: 'sesn_x', resources: [memoryStore] } }));
    expect(server.sessionRequests).toBe(0);
    expect(mounter!.mounts).toHaveLength(1);
    await mounter!.finalize();
  });

  it('memory_sync_interval null disables memory: null, no download, no request at all', async () => {
    server.seedSession('sesn_1', { resources: [memoryStore] });
    expect(await mountSessionMemory(options({ sessionId: 'sesn_1', memory_sync_interval: null }))).toBeNull();
    expect(server.sessionRequests).toBe(0);
    expect(server.requestCount()).toBe(0);
  });

  it('a session without memory stores gives null', async () => {
    server.seedSession('sesn_1', { resources: [{ type: 'file', file_id: 'file_1' }] });
    expect(await mountSessionMemory(options({ sessionId: 'sesn_1' }))).toBeNull();
    expect(server.requestCount()).toBe(0);
  });

  it.each([
    ['no secret', undefined],
    ['a secret without sessions_token', secretWith({ other: 'x' })],
    ['an undecodable secret', '***'],
  ])('stores with %s fail with missing_secret, and nothing is mounted', async (_, secret) => {
    const err = await mountSessionMemory(options({ session: { id: 'sesn_1', resources: [memoryStore] }, secret })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MemoryMountError);
    expect(err).toMatchObject({ code: 'missing_secret' });
    expect((err as Error).message).toMatch(/sessions_token/);
    expect((err as Error).message).toMatch(/memory_sync_interval: null/);
    expect(server.requestCount()).toBe(0);
  });

  it('the option values reach the mounter (deletion mode, interval)', async () => {
    let now = 0;
    const mounter = await mountSessionMemory(
      options({ session: { id: 's', resources: [memoryStore] }, memory_sync_interval: 60, now: () => now }),
    );
    now = 59_000;
    expect(await mounter!.reconcile()).toBeNull();
    now = 60_000;
    expect(await mounter!.reconcile()).not.toBeNull();
    await mounter!.finalize();
  });

  it('stateDir and keepUnpushed reach the mounter: a state record while mounted, gone after finalize', async () => {
    const stateDir = join(base, 'state');
    await new NodeFileSystem().mkdir(stateDir);
    const mounter = await mountSessionMemory(options({ session: { id: 's', resources: [memoryStore] }, stateDir, keepUnpushed: true }));
    expect((await readdir(stateDir)).filter((n) => n.startsWith('mm-state-'))).toHaveLength(1);
    await mounter!.finalize();
    expect(await readdir(stateDir)).toEqual([]);
    await expect(mountSessionMemory(options({ session: { id: 's', resources: [memoryStore] }, keepUnpushed: 'yes' }))).rejects.toMatchObject({
      option: 'keepUnpushed',
    });
  });
});
