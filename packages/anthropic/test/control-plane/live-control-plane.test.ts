import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { liveControlPlane } from '@memory-mounter/anthropic';
import { sessionWorkItem } from '@memory-mounter/testing/anthropic';

/**
 * A local stand-in for the work queue endpoints: `poll` hands out `queue` one item at a time,
 * then answers 204 (empty); `ack` and `stop` answer 200. Every request is recorded as
 * `<verb> <item>`, so a test reads the order of poll, ack and stop.
 */
class WorkQueueStub {
  readonly requests: string[] = [];
  readonly queue: object[] = [];
  readonly #server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://stub').pathname;
    const [, id, verb] = /\/work\/([^/]+)(?:\/(ack|stop))?$/.exec(path) ?? [];
    if (id === 'poll') {
      this.requests.push('poll');
      const item = this.queue.shift();
      if (item === undefined) return void res.writeHead(204).end();
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(item));
    }
    this.requests.push(`${verb ?? req.method} ${id}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

const queued = (id: string, sessionId: string) => ({ type: 'work', ...sessionWorkItem(id, sessionId, null), metadata: {} });

describe('liveControlPlane.claimWork (against a local stand-in for the work queue)', () => {
  let stub: WorkQueueStub;
  let client: Anthropic;

  beforeEach(async () => {
    stub = new WorkQueueStub();
    client = new Anthropic({ apiKey: 'unused', baseURL: await stub.start(), maxRetries: 0 });
  });
  afterEach(() => stub.close());

  it('drain: serves what is queued, releases each item when the loop body is done, and ends on an empty queue', async () => {
    stub.queue.push(queued('work_1', 'sesn_1'), queued('work_2', 'sesn_2'));
    const plane = liveControlPlane({ client, environmentId: 'env_test', environmentKey: 'env-key', drain: true });
    const served: string[] = [];

    for await (const work of plane.claimWork(new AbortController().signal)) {
      // While the body runs, the item is acked and not yet stopped.
      expect(stub.requests.at(-1)).toBe(`ack ${work.id}`);
      served.push(`${work.id}:${work.data.id}`);
    }

    expect(served).toEqual(['work_1:sesn_1', 'work_2:sesn_2']);
    expect(stub.requests).toEqual(['poll', 'ack work_1', 'stop work_1', 'poll', 'ack work_2', 'stop work_2', 'poll']);
  });

  it('drain: leaving the loop early releases the item being served', async () => {
    stub.queue.push(queued('work_1', 'sesn_1'), queued('work_2', 'sesn_2'));
    const plane = liveControlPlane({ client, environmentId: 'env_test', environmentKey: 'env-key', drain: true });

    for await (const _work of plane.claimWork(new AbortController().signal)) break;

    expect(stub.requests).toEqual(['poll', 'ack work_1', 'stop work_1']);
  });

  it('without drain, an empty queue does not end the claim: it ends when the signal aborts', async () => {
    const plane = liveControlPlane({ client, environmentId: 'env_test', environmentKey: 'env-key' });
    const stop = new AbortController();
    const iterator = plane.claimWork(stop.signal)[Symbol.asyncIterator]();
    const next = iterator.next();
    let settled = false;
    void next.then(() => (settled = true));

    await expect.poll(() => stub.requests).toEqual(['poll']);
    // The poller now waits a second or more before polling again; a drained one would be done.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBe(false);

    stop.abort();
    await expect(next).resolves.toMatchObject({ done: true });
  });
});
