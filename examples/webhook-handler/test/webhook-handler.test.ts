import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryApiServer, type ScriptedAgentScript } from '@memory-mounter/testing';
import { WebhookHandler } from '../src/webhook-handler.js';

// Test requests are signed by the very `standardwebhooks` the SDK verifies with: resolved from
// the SDK's own location, so the example needs no dependency of its own for it.
interface StandardWebhook {
  sign(msgId: string, timestamp: Date, payload: string): string;
}
const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@anthropic-ai/sdk'));
const { Webhook } = sdkRequire('standardwebhooks') as { Webhook: new (key: string) => StandardWebhook };

const TOKEN = 'sessions-token-of-work-1';
const ENV_KEY = 'environment-key';
const SIGNING_KEY = `whsec_${randomBytes(24).toString('base64')}`;
const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'Notes' };

function runStarted(sessionId: string): string {
  return JSON.stringify({
    type: 'event',
    id: `wevt_${randomBytes(6).toString('hex')}`,
    created_at: new Date().toISOString(),
    data: { type: 'session.status_run_started', id: sessionId, organization_id: 'org_1', workspace_id: 'wrkspc_1' },
  });
}

/** The Standard Webhooks headers for `body`, signed with `key`. */
function signed(body: string, key = SIGNING_KEY): Record<string, string> {
  const id = `msg_${randomBytes(6).toString('hex')}`;
  const at = new Date();
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(id, at, body),
  };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('webhook handler (the emulator standing for the service)', () => {
  let base: string;
  let memoryRoot: string;
  let api: MemoryApiServer;
  let http: Server;
  let url: string;
  let webhooks: WebhookHandler;
  /** Holds a scripted session open until the test lets it go (and always by the end). */
  let release: ReturnType<typeof deferred>;

  async function start(script?: ScriptedAgentScript) {
    if (script) {
      api.controlPlane.playSession('sesn_1', script);
      api.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    }
    const client = new Anthropic({ apiKey: null, authToken: ENV_KEY, baseURL: await api.start(), maxRetries: 0, webhookKey: SIGNING_KEY });
    webhooks = new WebhookHandler({
      client,
      environmentId: 'env_emulated',
      environmentKey: ENV_KEY,
      workdir: base,
      memoryRoot,
      maxIdleMs: 50,
      memorySyncIntervalMs: 1,
      mounter: { newFileSettle: 0 },
    });
    http = createServer(webhooks.listener);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/webhooks`;
  }
  const post = (body: string, headers: Record<string, string>) => fetch(url, { method: 'POST', headers, body });

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'mm-webhook-')));
    memoryRoot = join(base, 'mnt-memory');
    await mkdir(memoryRoot);
    api = new MemoryApiServer({ apiKey: TOKEN, controlPlane: { environmentKey: ENV_KEY } });
    api.seed('memstore_notes', { '/todo.md': '- buy milk\n' });
    api.seedSession('sesn_1', { resources: [NOTES] });
    release = deferred();
  });
  afterEach(async () => {
    release.resolve();
    await webhooks.idle();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    await api.close();
    await rm(base, { recursive: true, force: true });
  });

  it('a verified delivery is answered 202 at once; the session runs behind it and its memory is synced', async () => {
    const mountedWhileRunning: string[] = [];
    await start(async (outcomes) => {
      if (outcomes.length === 0) return { name: 'edit', input: { file_path: join(memoryRoot, 'notes', 'todo.md'), old_string: 'milk', new_string: 'oat milk' } };
      mountedWhileRunning.push(...(await readdir(memoryRoot)));
      await release.promise;
      return null;
    });

    const body = runStarted('sesn_1');
    const response = await post(body, signed(body));

    // The answer came while the session was still held open: the sender never waits for it.
    expect(response.status).toBe(202);
    expect(webhooks.inFlight).toBe(1);
    await expect.poll(() => mountedWhileRunning).toEqual(['notes']);
    expect(await readFile(join(memoryRoot, 'notes', 'todo.md'), 'utf8')).toBe('- buy oat milk\n');

    release.resolve();
    await webhooks.idle(); // what a graceful shutdown waits on

    expect(webhooks.inFlight).toBe(0);
    expect(api.controlPlane.session('sesn_1')!.outcomes.map((o) => [o.call.name, o.isError])).toEqual([['edit', false]]);
    expect(api.snapshot('memstore_notes')).toEqual({ '/todo.md': '- buy oat milk\n' });
    expect(api.controlPlane.work('work_1').state).toBe('stopped');
    expect(await readdir(memoryRoot)).toEqual([]);
  });

  it.each([
    ['signed with another key', (body: string) => signed(body, `whsec_${randomBytes(24).toString('base64')}`)],
    ['a body changed after signing', (body: string) => signed(body.replace('sesn_1', 'sesn_2'))],
    ['no signature at all', () => ({ 'content-type': 'application/json' })],
  ])('a delivery %s is refused with 400: nothing is claimed, mounted or fetched', async (_, headersFor) => {
    await start([]);
    const body = runStarted('sesn_1');

    const response = await post(body, headersFor(body));

    expect(response.status).toBe(400);
    expect(webhooks.inFlight).toBe(0);
    expect(api.controlPlane.requestCount()).toBe(0);
    expect(api.sessionRequests).toBe(0);
    expect(api.requestCount()).toBe(0);
    expect(await readdir(memoryRoot)).toEqual([]);
  });

  it('a verified event that is not a trigger is acknowledged (204) and starts nothing', async () => {
    await start([]);
    const body = runStarted('sesn_1').replace('session.status_run_started', 'session.status_idled');

    const response = await post(body, signed(body));

    expect(response.status).toBe(204);
    expect(api.controlPlane.requestCount()).toBe(0);
  });

  it('only POST is taken', async () => {
    await start();
    expect((await fetch(url)).status).toBe(405);
  });
});
