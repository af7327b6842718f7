import { setTimeout as sleep } from 'node:timers/promises';
import type Anthropic from '@anthropic-ai/sdk';
import { SessionToolRunner, WorkPoller } from '@anthropic-ai/sdk/helpers/beta/environments';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaSelfHostedWork } from '@anthropic-ai/sdk/resources/beta/environments/work';
import { sessionsTokenFromSecret } from '@memory-mounter/anthropic';

/** The fields of a claimed work item the worker reads. `secret` carries the sessions token. */
export type WorkItem = Pick<BetaSelfHostedWork, 'id' | 'environment_id' | 'data' | 'secret'>;

/**
 * THE SEAM: everything that needs the live control plane. The worker itself only mounts
 * memory, builds tools and tears memory down; who hands it work and who turns the session's
 * tool-use events into tool calls is this interface's business.
 *
 * Live: `liveControlPlane` below (WorkPoller + SessionToolRunner). Tests: a scripted fake that
 * yields prepared work items and plays an agent calling the tools.
 */
export interface ControlPlane {
  /**
   * Claimed work items, one at a time, until `signal` aborts. The next item is asked for only
   * once the worker has finished with the current one, which is when the live poller releases it.
   */
  claimWork(signal: AbortSignal): AsyncIterable<WorkItem>;
  /**
   * Serves the session's tool calls with `tools` until the session ends. Rejects when the
   * session could not be served to its end (lease lost, stream failed), so memory is finalized
   * `aborted` rather than given a last full sync.
   */
  runSession(work: WorkItem, tools: BetaRunnableTool[], signal: AbortSignal): Promise<void>;
}

export interface LiveControlPlaneOptions {
  client: Anthropic;
  environmentId: string;
  /** Authenticates polling, and per-item calls for items whose secret carries no sessions token. */
  environmentKey: string;
  /** Forwarded to SessionToolRunner: how long an idle session is kept before the item is let go. */
  maxIdleMs?: number;
}

/** The seam over the real service, from the SDK's building blocks. */
export function liveControlPlane(options: LiveControlPlaneOptions): ControlPlane {
  const { client, environmentId, environmentKey } = options;
  return {
    // The poller acks each item and posts `work.stop` once the consumer's loop body is done.
    claimWork: (signal) => new WorkPoller({ client, environmentId, environmentKey, signal }),

    async runSession(work, tools, signal) {
      // Per-item calls ride the item's sessions token, as the SDK's own worker does.
      const itemClient = client.withOptions({
        apiKey: null,
        authToken: sessionsTokenFromSecret(work.secret) ?? environmentKey,
      });
      const session = new AbortController();
      const stopSession = () => session.abort();
      signal.addEventListener('abort', stopSession, { once: true });
      const lease = keepLease(itemClient, work, session.signal, stopSession);
      try {
        const runner = new SessionToolRunner(work.data.id, {
          client: itemClient,
          tools,
          signal: session.signal,
          ...(options.maxIdleMs !== undefined && { maxIdleMs: options.maxIdleMs }),
        });
        for await (const _call of runner) {
          // Each call already reconciled memory inside its tool wrapper; nothing else to do.
        }
      } finally {
        session.abort();
        signal.removeEventListener('abort', stopSession);
      }
      if ((await lease) === 'lost') throw new Error(`work item ${work.id}: lease lost while the session ran`);
    },
  };
}

/**
 * Heartbeats the item's lease until `signal` aborts. WorkPoller does not heartbeat (the SDK's
 * EnvironmentWorker does, privately), and an item whose lease lapses is handed to another
 * worker. Calls `end` when the service asks the worker to stop or the lease cannot be renewed.
 */
async function keepLease(
  client: Anthropic,
  work: WorkItem,
  signal: AbortSignal,
  end: () => void,
): Promise<'released' | 'stopping' | 'lost'> {
  let ttlMs = 90_000;
  let lastRenewed = Date.now();
  while (!signal.aborted) {
    let waitMs = 1_000;
    try {
      const beat = await client.beta.environments.work.heartbeat(work.id, { environment_id: work.environment_id }, { signal });
      lastRenewed = Date.now();
      ttlMs = beat.ttl_seconds > 0 ? beat.ttl_seconds * 1000 : ttlMs;
      if (beat.state === 'stopping' || beat.state === 'stopped') return finish('stopping');
      if (!beat.lease_extended) return finish('lost');
      waitMs = Math.min(ttlMs / 2, 30_000);
    } catch {
      if (signal.aborted) break;
      // Transient failures are retried until the lease would have lapsed anyway.
      if (Date.now() - lastRenewed > ttlMs) return finish('lost');
    }
    await sleep(waitMs, undefined, { signal }).catch(() => undefined);
  }
  return 'released';

  function finish(how: 'stopping' | 'lost') {
    end();
    return how;
  }
}
