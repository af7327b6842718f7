import type { IncomingMessage, ServerResponse } from 'node:http';
import type Anthropic from '@anthropic-ai/sdk';
import { EnvironmentWorker, type EnvironmentWorkerOptions } from '@memory-mounter/anthropic';
import { debugLogger, type Logger } from '@memory-mounter/core';

/** Webhook payloads are small JSON documents; anything bigger is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The worker's options (the SDK's `EnvironmentWorkerOptions` and this library's: `memoryRoot`,
 * `stateDir`, `on`, ...), without `drain`: a delivery always wakes a draining run.
 */
export interface WebhookHandlerOptions extends Omit<EnvironmentWorkerOptions, 'drain'> {
  /** Verifies webhooks (`client.beta.webhooks.unwrap`) and is the worker's client. */
  client: Anthropic;
  /** The endpoint's signing key (`whsec_...`). Default: the client's, from ANTHROPIC_WEBHOOK_SIGNING_KEY. */
  webhookKey?: string;
  /** Event types that mean work is queued. Default: `session.status_run_started`. */
  triggers?: readonly string[];
  logger?: Logger;
}

/**
 * A `node:http` request listener for webhook deliveries. A delivery is verified with the SDK
 * before anything else happens; a verified trigger event is answered `202` at once, and the
 * handler then serves what is queued (an `EnvironmentWorker` run with `drain`: memory mounted,
 * skills downloaded, tool calls served, memory finalized, each item stopped) in the background.
 * The sender never waits on a session, so it never times out and redelivers one.
 *
 *   const webhooks = new WebhookHandler({ client, environmentId, environmentKey, workdir });
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
  readonly #worker: EnvironmentWorker;
  readonly #runs = new Set<Promise<void>>();
  /** Deliveries that arrived while a run was draining: one more run after it. */
  #again = false;

  constructor(options: WebhookHandlerOptions) {
    this.#options = options;
    this.#logger = options.logger ?? debugLogger('webhook-handler');
    this.#triggers = new Set(options.triggers ?? ['session.status_run_started']);
    const { webhookKey: _key, triggers: _triggers, ...worker } = options;
    this.#worker = new EnvironmentWorker({ ...worker, logger: this.#logger, drain: true });
  }

  /** The request listener, for `http.createServer`. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    this.#answer(req, res).catch((err: unknown) => {
      this.#logger.error('webhook request failed', { error: messageOf(err) });
      if (!res.headersSent) reply(res, 500);
    });
  };

  /** Background runs not yet finished, finalize included. */
  get inFlight(): number {
    return this.#runs.size;
  }

  /** Resolves once every run started so far has finished and its sessions' memory is finalized. */
  async idle(): Promise<void> {
    while (this.#runs.size > 0) await Promise.all(this.#runs);
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
    this.#serveQueued(event.id);
  }

  /**
   * One draining run at a time: it serves every item queued, one after the other, and a
   * delivery that lands meanwhile asks for one more run once it is done (its item may have been
   * queued after the run's last poll). Never rejects: the request was answered long ago.
   */
  #serveQueued(eventId: string): void {
    if (this.#runs.size > 0) {
      this.#again = true;
      return;
    }
    const run = this.#worker
      .run(this.#options.signal)
      .catch((err: unknown) => this.#logger.error('webhook run failed', { event_id: eventId, error: messageOf(err) }))
      .finally(() => {
        this.#runs.delete(run);
        if (this.#again) {
          this.#again = false;
          this.#serveQueued(eventId);
        }
      });
    this.#runs.add(run);
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
