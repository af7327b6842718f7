import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import type { StoreClient } from '@memory-mounter/core';
import { MemoryApiServer } from '@memory-mounter/testing';

/** A memory store the script uses. Every path the script writes lies under `prefix`. */
export interface DemoStore {
  id: string;
  name: string;
  /** '' on the emulator; `/memory-mounter-demo-<timestamp>` on the real API. */
  prefix: string;
  /** The demo seeds it. False for a real read-only store: the demo never writes to that one. */
  seeded: boolean;
}

/**
 * The one seam between the two modes. The script sees the same things either way: the session's
 * StoreClient (always the real SDK client through AnthropicStoreClient), the stores, another
 * writer, and a view of the store for the end-state check.
 */
export interface Backend {
  /** For the header: where the memory API is. */
  description: string;
  /** The session's client, handed to MemoryMounter. */
  storeClient: StoreClient;
  teamNotes: DemoStore;
  /** The read-only store; `null` when the real-API run has none (`MEMORY_STORE_ID_READ_ONLY`). */
  styleGuide: DemoStore | null;
  /** Puts memories in a store as the starting point. */
  seed(store: DemoStore, files: Record<string, string>): Promise<void>;
  /** Another session: writes to a store without going through this mounter. */
  otherSessionWrites(store: DemoStore, path: string, content: string): Promise<void>;
  /** `{ path: content }` of every memory under the store's prefix, sorted by path. */
  snapshot(store: DemoStore): Promise<Record<string, string>>;
  /** Deletes what the demo created (real API) or closes the emulator. Runs even after a failure. */
  close(): Promise<void>;
  /**
   * Offline only: the emulator itself, which also serves the control plane, so the demo runs a
   * whole worker session against it (src/worker-session.ts). Absent on the real API.
   */
  emulator?: MemoryApiServer;
}

/** Offline: the sessions token the emulator's memory endpoints take, and the worker's environment key. */
export const OFFLINE_SESSIONS_TOKEN = 'demo-sessions-token';
export const OFFLINE_ENVIRONMENT_KEY = 'demo-environment-key';

export type Env = Record<string, string | undefined>;

/** The real API when the environment names a key and a store; the emulator otherwise. */
export function wantsRealApi(env: Env): boolean {
  return Boolean(env.ANTHROPIC_API_KEY && env.MEMORY_STORE_ID);
}

export async function openBackend(env: Env): Promise<Backend> {
  return wantsRealApi(env) ? realApiBackend(env) : emulatorBackend();
}

/**
 * Offline: the loopback emulator, reached through the real SDK client, so the demo exercises
 * the same HTTP path as production. Setup and the other session use the emulator's direct
 * helpers, as a writer the mounter cannot see would.
 */
async function emulatorBackend(): Promise<Backend> {
  // The memory endpoints take only the work item's sessions token, the work queue only the
  // environment key, as on the service.
  const server = new MemoryApiServer({ apiKey: OFFLINE_SESSIONS_TOKEN, controlPlane: { environmentKey: OFFLINE_ENVIRONMENT_KEY } });
  const baseURL = await server.start();
  // An explicit key and base URL: nothing from the environment can send this run elsewhere. No
  // retries: the emulator injects no faults here, so any failure is a bug to show at once.
  const client = new Anthropic({ apiKey: OFFLINE_SESSIONS_TOKEN, baseURL, maxRetries: 0 });
  return {
    description: `offline — a self-hosted worker session against the emulator at ${baseURL}, through @anthropic-ai/sdk`,
    storeClient: new AnthropicStoreClient({ client }),
    teamNotes: { id: 'memstore_demo_team_notes', name: 'Team Notes', prefix: '', seeded: true },
    styleGuide: { id: 'memstore_demo_style_guide', name: 'Style Guide', prefix: '', seeded: true },
    seed: async (store, files) => void server.seed(store.id, files),
    otherSessionWrites: async (store, path, content) => void server.writeMemory(store.id, path, content),
    snapshot: async (store) => server.snapshot(store.id),
    close: () => server.close(),
    emulator: server,
  };
}

/**
 * Online: the real memory-store API. Everything the script writes goes under a fresh prefix
 * folder of MEMORY_STORE_ID and is deleted at the end; the read-only store is only ever read.
 * The other session is a second, independent SDK client.
 */
async function realApiBackend(env: Env): Promise<Backend> {
  const connect = () =>
    new AnthropicStoreClient({
      client: new Anthropic({ apiKey: env.ANTHROPIC_API_KEY!, baseURL: env.ANTHROPIC_BASE_URL ?? null, maxRetries: 2 }),
    });
  const other = connect();
  const prefix = `/memory-mounter-demo-${new Date().toISOString().replace(/[-:.]/g, '')}`;
  const readOnlyId = env.MEMORY_STORE_ID_READ_ONLY;
  const teamNotes: DemoStore = { id: env.MEMORY_STORE_ID!, name: 'Team Notes', prefix, seeded: true };

  const memoriesUnder = async (store: DemoStore, withContent: boolean) => {
    const found = [];
    const pathPrefix = store.prefix ? `${store.prefix}/` : undefined;
    for await (const memory of other.list(store.id, { withContent, ...(pathPrefix && { pathPrefix }) })) found.push(memory);
    return found;
  };

  return {
    description: `real API — ${env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com'}, store ${teamNotes.id}, under ${prefix}/`,
    storeClient: connect(),
    teamNotes,
    styleGuide: readOnlyId ? { id: readOnlyId, name: 'Style Guide', prefix: '', seeded: false } : null,
    async seed(store, files) {
      for (const [path, content] of Object.entries(files)) await other.create(store.id, { path, content });
    },
    async otherSessionWrites(store, path, content) {
      const existing = (await memoriesUnder(store, false)).find((m) => m.path === path);
      if (existing) await other.update(store.id, existing.id, { content });
      else await other.create(store.id, { path, content });
    },
    async snapshot(store) {
      const memories = (await memoriesUnder(store, true)).sort((a, b) => (a.path < b.path ? -1 : 1));
      return Object.fromEntries(memories.map((m) => [m.path, m.content ?? '']));
    },
    async close() {
      // Only the prefix folder: the demo created everything in it and nothing outside it.
      for (const memory of await memoriesUnder(teamNotes, false)) await other.delete(teamNotes.id, memory.id);
    },
  };
}
