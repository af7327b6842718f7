import type Anthropic from '@anthropic-ai/sdk';
import { SessionToolRunner, WorkPoller } from '@anthropic-ai/sdk/helpers/beta/environments';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaSelfHostedWork } from '@anthropic-ai/sdk/resources/beta/environments/work';
import { keepLease } from './lease-heartbeat.js';
import { WorkItemError } from './work-item-error.js';
import { sessionsTokenFromSecret } from './work-secret.js';

/** The fields of a claimed work item a worker reads. `secret` carries the sessions token. */
export type WorkItem = Pick<BetaSelfHostedWork, 'id' | 'environment_id' | 'data' | 'secret'>;

/**
 * The seam between a self-hosted worker and the control plane: everything that needs the live
 * service. The worker itself mounts memory, builds the tools and tears memory down; handing it
 * work and turning a session's tool-use events into tool calls is this interface's business.
 * It is the one place to replace to run a worker without the service.
 *
 * Live: {@link liveControlPlane} (`WorkPoller` + `SessionToolRunner` + a lease heartbeat).
 * Tests: `ScriptedControlPlane` (`@memory-mounter/testing/anthropic`), which yields prepared
 * items and plays an agent.
 */
export interface ControlPlane {
  /**
   * Must yield claimed work items one at a time. The next item is asked for only once the
   * caller has finished with the current one, and leaving the loop (its body done, a `break`
   * or a throw) must release the current item. Must end when `signal` aborts; a control plane
   * that drains also ends once the queue is empty.
   */
  claimWork(signal: AbortSignal): AsyncIterable<WorkItem>;
  /**
   * Must serve the session's tool calls with `tools` until the session ends, and resolve then.
   * Must reject when the session could not be served to its end (lease lost, stream failed),
   * so that memory is finalized `aborted` rather than given a last full sync. `signal` aborting
   * cuts the session short.
   */
  runSession(work: WorkItem, tools: BetaRunnableTool[], signal: AbortSignal): Promise<void>;
}

export interface LiveControlPlaneOptions {
  /** The worker's client: base URL, retries, timeout. Per-item calls swap its credential. */
  client: Anthropic;
  /** The self-hosted environment whose work queue is polled. */
  environmentId: string;
  /** Authenticates polling, and per-item calls for items whose secret carries no sessions token. */
  environmentKey: string;
  /** Forwarded to `SessionToolRunner`: how long an idle session is kept before the item is let go. */
  maxIdleMs?: number;
  /**
   * `true`: `claimWork` serves what is queued now and ends once the queue is empty, for a
   * worker woken for queued work (a webhook handler). The poll still blocks for just under a
   * second, which covers an item that lands after its webhook. Default `false`: `claimWork`
   * polls until its signal aborts, for a standing worker.
   */
  drain?: boolean;
}

/** The control plane over the real service, built from the SDK's building blocks. */
export function liveControlPlane(options: LiveControlPlaneOptions): ControlPlane {
  const { client, environmentId, environmentKey } = options;
  const drain = options.drain === true;
  return {
    // The poller acks each item and posts `work.stop` once the consumer's loop body is done.
    claimWork: (signal) => new WorkPoller({ client, environmentId, environmentKey, signal, drain }),

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
      if ((await lease) === 'lost') {
        throw new WorkItemError('lease_lost', `work item ${work.id}: lease lost while the session ran`, { workId: work.id, sessionId: work.data.id });
      }
    },
  };
}
