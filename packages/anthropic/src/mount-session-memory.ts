import type Anthropic from '@anthropic-ai/sdk';
import {
  MemoryMounter,
  MemoryMountError,
  type DeletionMode,
  type FileSystem,
  type Logger,
  type MemoryMounterOptions,
} from '@memory-mounter/core';
import { AnthropicStoreClient } from './anthropic-store-client.js';
import { sessionsTokenFromSecret } from './work-secret.js';

/** The part of a session this hook reads. */
export interface SessionLike {
  id: string;
  resources: readonly { type: string }[];
}

export interface MountSessionMemoryOptions
  extends Pick<
    MemoryMounterOptions,
    'memoryRoot' | 'deleteGracePeriod' | 'finalSyncTimeout' | 'requestTimeout' | 'syncTimeout' | 'newFileSettle' | 'stateDir' | 'keepUnpushed' | 'now'
  > {
  /** The worker's client. Its credential is only used to fetch the session when no token is found. */
  client: Anthropic;
  /** The session, already fetched; or its id, to fetch it with the sessions token. */
  session?: SessionLike;
  sessionId?: string;
  /** The work item's `secret`, which carries the sessions token the memory endpoints accept. */
  secret: string | null | undefined;
  /**
   * Seconds between syncs (default 15). `null` disables memory for this worker: nothing is
   * downloaded or synced, and a session with stores runs without them, silently.
   */
  memory_sync_interval?: number | null;
  memory_sync_deletions?: DeletionMode;
  fileSystem?: FileSystem;
  logger?: Logger;
}

/**
 * Mounts a work item's memory stores, as the cloud does before a session's first tool call.
 *
 * Returns `null` when memory is disabled (`memory_sync_interval: null`) or the session has no
 * memory store; otherwise a materialized MemoryMounter whose store calls carry the item's
 * sessions token. Throws `MemoryMountError` `missing_secret` when the session has stores but
 * the secret yields no token: running without the stores the session was promised would
 * silently lose its memory.
 */
export async function mountSessionMemory(options: MountSessionMemoryOptions): Promise<MemoryMounter | null> {
  if (options.memory_sync_interval === null) return null;
  const token = sessionsTokenFromSecret(options.secret);
  const scoped = token === null ? null : scopedToToken(options.client, token);
  const session = await sessionOf(options, scoped ?? options.client);
  if (!session.resources.some((r) => r.type === 'memory_store')) return null;
  if (scoped === null) {
    throw new MemoryMountError(
      'missing_secret',
      `session ${session.id} has memory stores but its work item carried no usable sessions token. ` +
        'The memory endpoints refuse the environment key: pass the work item\'s `secret` (base64 JSON with ' +
        '`sessions_token`), or set memory_sync_interval: null to run sessions without memory.',
    );
  }
  const mounter = new MemoryMounter({
    storeClient: new AnthropicStoreClient({ client: scoped }),
    ...pick(options, [
      'fileSystem',
      'memoryRoot',
      'deleteGracePeriod',
      'finalSyncTimeout',
      'requestTimeout',
      'syncTimeout',
      'newFileSettle',
      'stateDir',
      'keepUnpushed',
      'now',
      'logger',
      'memory_sync_deletions',
    ]),
    ...(options.memory_sync_interval !== undefined && { memory_sync_interval: options.memory_sync_interval }),
  });
  await mounter.materialize(session.resources);
  return mounter;
}

/**
 * A copy of the worker's client that authenticates with the sessions token alone: every other
 * setting (base URL, retries, timeout, headers) is kept, the environment key is dropped.
 */
function scopedToToken(client: Anthropic, token: string): Anthropic {
  return client.withOptions({ apiKey: null, authToken: token, baseURL: client.baseURL });
}

async function sessionOf(options: MountSessionMemoryOptions, client: Anthropic): Promise<SessionLike> {
  if (options.session) return options.session;
  if (!options.sessionId) throw new TypeError('mountSessionMemory needs `session` or `sessionId`');
  return client.beta.sessions.retrieve(options.sessionId);
}

function pick<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
