import type { IncomingMessage, ServerResponse } from 'node:http';
import type Anthropic from '@anthropic-ai/sdk';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { mountSessionMemory, runSessionWithMemory, withMemorySync, type ControlPlane, type WorkItem } from '@memory-mounter/anthropic';
import { debugLogger, MemoryMountError, type DeletionMode, type FinalizeReport, type Logger, type MountedStore } from '@memory-mounter/core';

/** Webhook payloads are small JSON documents; anything bigger is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface WebhookHandlerOptions {
  /** Verifies webhooks (`client.beta.webhooks.unwrap`) and carries base URL and retries for memory calls. */
  client: Anthropic;
  /** The endpoint's signing key (`whsec_...`). Default: the client's, from ANTHROPIC_WEBHOOK_SIGNING_KEY. */
  webhookKey?: string;
  /** Where work is claimed and tool calls are served: the live service, or a fake in tests. */
  controlPlane: ControlPlane;
  /** The agent's working directory: relative tool paths resolve here. */
  workdir: string;
  /** Where `/mnt/memory` lies on this host (default `/mnt/memory`); the operator creates it. */
  memoryRoot?: string;
  /** Seconds between syncs (default 15); `null` runs every session without its memory. */
  memory_sync_interval?: number | null;
  memory_sync_deletions?: DeletionMode;
  /** Event types that mean work is queued. Default: `session.status_run_started`. */
  triggers?: readonly string[];
  /** Aborting it cuts the sessions in flight short; their memory is finalized `aborted`. */
  signal?: AbortSignal;
  logger?: Logger;
  /** Clock in ms for the sync interval; tests pass one they move by hand. */
  now?: () => number;
  /** Called once an item's memory is mounted (`mounts` empty when it runs without memory). */
  onMounted?: (work: WorkItem, mounts: readonly MountedStore[]) => void;
  /** Called with an item's finalize report, once its memory is torn down. */
  onFinalize?: (work: WorkItem, report: FinalizeReport) => void;
}

/**
 * A `node:http` request listener for webhook deliveries. A delivery is verified with the SDK
 * before anything else happens; a verified trigger event is answered `202` at once, and the
 * handler then claims one work item and serves it, memory included, in the background. The
 * sender never waits on a session, so it never times out and redelivers one.
 *
 *   const webhooks = new WebhookHandler({ client, controlPlane, workdir });
 *   const server = http.createServer(webhooks.listener);
 *   // shutdown: stop taking deliveries, then let the sessions finish (and finalize)
 *   server.close(); await webhooks.idle();
 *
 * Answers: 405 not a POST, 413 body too large, 400 signature missing or wrong (nothing is
 * claimed or mounted), 204 a verified event that is not a trigger, 202 accepted.
 */
export class WebhookHandler {
  readonly #options: WebhookHandlerOptions;
  readonly #logger: Logger;
  readonly #triggers: ReadonlySet<string>;
  readonly #sessions = new Set<Promise<void>>();

  constructor(options: WebhookHandlerOptions) {
    this.#options = options;
    this.#logger = options.logger ?? debugLogger('webhook-handler');
    this.#triggers = new Set(options.triggers ?? ['session.status_run_started']);
  }

  /** The request listener, for `http.createServer`. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    this.#answer(req, res).catch((err: unknown) => {
      this.#logger.error('webhook request failed', { error: messageOf(err) });
      if (!res.headersSent) reply(res, 500);
    });
  };

  /** Background sessions not yet finished, finalize included. */
  get inFlight(): number {
    return this.#sessions.size;
  }

  /** Resolves once every session started so far has finished and its memory is finalized. */
  async idle(): Promise<void> {
    while (this.#sessions.size > 0) await Promise.all(this.#sessions);
  }

  async #answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return reply(res, 405, { allow: 'POST' });
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === null) return reply(res, 413, { connection: 'close' });

    let event: ReturnType<Anthropic['beta']['webhooks']['unwrap']>;
    try {
      event = this.#options.client.beta.webhooks.unwrap(body, { headers: flatHeaders(req), key: this.#options.webhookKey });
    } catch (err) {
      // Say nothing to the sender about why: a forger learns nothing from the answer.
      this.#logger.warn('webhook refused: it did not verify', { error: messageOf(err) });
      return reply(res, 400);
    }
    if (!this.#triggers.has(event.data.type)) return reply(res, 204);

    reply(res, 202);
    const session = this.#serveOne(event.id).finally(() => this.#sessions.delete(session));
    this.#sessions.add(session);
  }

  /** Claims one queued work item and serves it. Never rejects: the request was answered long ago. */
  async #serveOne(eventId: string): Promise<void> {
    const signal = this.#options.signal ?? new AbortController().signal;
    try {
      for await (const work of this.#options.controlPlane.claimWork(signal)) {
        // One item per delivery; leaving the loop releases it.
        return await this.#serve(work, signal);
      }
      this.#logger.info('woken by a webhook, but no work was queued', { event_id: eventId });
    } catch (err) {
      this.#logger.error('work item failed', {
        event_id: eventId,
        error: messageOf(err),
        ...(err instanceof MemoryMountError && { code: err.code }),
      });
    }
  }

  /** One work item: mount memory, confine the tools to workdir and stores, serve, always finalize. */
  async #serve(work: WorkItem, signal: AbortSignal): Promise<void> {
    if (work.data.type !== 'session') return;
    const { client, workdir, memoryRoot, memory_sync_interval, memory_sync_deletions, now } = this.#options;
    const mounter = await mountSessionMemory({
      client,
      sessionId: work.data.id,
      secret: work.secret,
      logger: this.#logger,
      ...(memoryRoot !== undefined && { memoryRoot }),
      ...(memory_sync_interval !== undefined && { memory_sync_interval }),
      ...(memory_sync_deletions !== undefined && { memory_sync_deletions }),
      ...(now !== undefined && { now }),
    });
    this.#options.onMounted?.(work, [...(mounter?.mounts ?? [])]);
    const toolset = betaAgentToolset20260401({
      workdir,
      allowedRoots: [...(mounter?.roots ?? [])],
      readOnlyRoots: [...(mounter?.readOnlyRoots ?? [])],
    });
    const tools = withMemorySync(toolset, mounter, { workdir, logger: this.#logger });
    await runSessionWithMemory(mounter, () => this.#options.controlPlane.runSession(work, tools, signal), {
      signal,
      logger: this.#logger,
      onFinalize: (report) => this.#options.onFinalize?.(work, report),
    });
  }
}

/** The raw body, as the signature covers it byte for byte; `null` past `limit`. */
async function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Node's headers (lower-cased, some repeated) in the flat shape the verifier reads. */
function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function reply(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.writeHead(status, headers).end();
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
