import { createServer } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { runEmulatedWebhook } from './emulated.js';
import { WebhookHandler } from './webhook-handler.js';

/**
 * `start --emulator`: the same handler, offline, against the emulated service (src/emulated.ts):
 * two deliveries (one forged), one session; prints the timeline, exits 1 on a wrong end state.
 *
 * Otherwise the handler against the live service. Needs ANTHROPIC_ENVIRONMENT_ID,
 * ANTHROPIC_ENVIRONMENT_KEY and ANTHROPIC_WEBHOOK_SIGNING_KEY (the endpoint's `whsec_...`);
 * the operator prepares /mnt/memory. SIGTERM stops taking deliveries and waits for the
 * sessions in flight to finish and push their memory; a second SIGTERM cuts them short.
 */
async function main(): Promise<void> {
  const environmentId = required('ANTHROPIC_ENVIRONMENT_ID');
  const environmentKey = required('ANTHROPIC_ENVIRONMENT_KEY');
  required('ANTHROPIC_WEBHOOK_SIGNING_KEY'); // read by the client as its webhookKey
  const client = new Anthropic({ authToken: environmentKey });
  const cutShort = new AbortController();
  const webhooks = new WebhookHandler({
    client,
    // A delivery wakes a draining run of the worker: what is queued now, not a poll forever.
    environmentId,
    environmentKey,
    workdir: process.env['WORKDIR'] ?? process.cwd(),
    // A handler killed mid-session leaves a record; the next run pushes what it had not.
    ...(process.env['STATE_DIR'] && { stateDir: process.env['STATE_DIR'] }),
    signal: cutShort.signal,
  });

  const server = createServer(webhooks.listener).listen(Number(process.env['PORT'] ?? 8080));
  process.once('SIGTERM', () => {
    process.once('SIGTERM', () => cutShort.abort());
    server.close();
    void webhooks.idle().then(() => process.exit(0));
  });
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

if (process.argv.includes('--emulator')) {
  const outcome = await runEmulatedWebhook();
  process.exitCode = outcome.passed ? 0 : 1;
} else {
  await main();
}
