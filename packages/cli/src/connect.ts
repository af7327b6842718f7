import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import type { StoreClient } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';
import { UsageError } from './usage.js';

/** The sample store `--emulator` serves. */
const DEMO_STORE = 'memstore_demo';
const DEMO_FILES: Record<string, string> = {
  '/README.md': '# Demo memory store\n\nServed by the memory-mounter emulator (--emulator).\n',
  '/preferences/style.md': 'Prefer short sentences.\nName files in kebab-case.\n',
  '/projects/todo.md': '- write the CLI docs\n',
};
/** The one credential the emulator's memory endpoints take. */
const EMULATOR_KEY = 'emulator-key';

export interface Connection {
  storeClient: StoreClient;
  baseURL: string | undefined;
  emulator: MemoryApiServer | null;
  close(): Promise<void>;
}

/**
 * A StoreClient from the flags: `--emulator` starts the bundled MemoryApiServer on 127.0.0.1,
 * seeded with `memstore_demo`; otherwise the real API (or `--base-url`) with ANTHROPIC_API_KEY.
 */
export async function connect(flags: { emulator?: boolean; 'base-url'?: string }): Promise<Connection> {
  if (flags.emulator) {
    const server = new MemoryApiServer({ apiKey: EMULATOR_KEY });
    const baseURL = await server.start();
    server.seed(DEMO_STORE, DEMO_FILES);
    const client = new Anthropic({ apiKey: EMULATOR_KEY, baseURL, maxRetries: 0 });
    return { storeClient: new AnthropicStoreClient({ client }), baseURL, emulator: server, close: () => server.close() };
  }
  const apiKey = process.env.ANTHROPIC_API_KEY;
  if (!apiKey) throw new UsageError('no credentials: set ANTHROPIC_API_KEY (with --base-url for another endpoint), or pass --emulator to work offline');
  const baseURL = flags['base-url'];
  const client = new Anthropic({ apiKey, ...(baseURL && { baseURL }) });
  return { storeClient: new AnthropicStoreClient({ client }), baseURL, emulator: null, close: async () => undefined };
}
