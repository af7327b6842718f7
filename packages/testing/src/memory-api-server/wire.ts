/**
 * The JSON shapes of the memory endpoints, as the service sends them and `@anthropic-ai/sdk`
 * reads them. Written down here (not imported from the SDK) so the testing package needs no SDK.
 */

export type MemoryView = 'basic' | 'full';

/** One memory. `content` is `null` in the `basic` view; size and sha are always set. */
export interface MemoryWire {
  type: 'memory';
  id: string;
  memory_store_id: string;
  path: string;
  content: string | null;
  content_sha256: string;
  content_size_bytes: number;
  memory_version_id: string;
  created_at: string;
  updated_at: string;
}

/** A listing's stand-in for every memory below `path` (which ends in `/`) when `depth` cut it off. */
export interface MemoryPrefixWire {
  type: 'memory_prefix';
  path: string;
}

export type MemoryListItemWire = MemoryWire | MemoryPrefixWire;

/** A list response: `next_page` is the cursor to pass as `page`, `null` on the last page. */
export interface MemoryListPageWire {
  data: MemoryListItemWire[];
  next_page: string | null;
}

export interface DeletedMemoryWire {
  type: 'memory_deleted';
  id: string;
}

/** Every error response: `{ type: 'error', error: { type, message, ... }, request_id }`. */
export interface ErrorBodyWire {
  type: 'error';
  error: { type: string; message: string } & Record<string, unknown>;
  request_id: string;
}

/** Who made or redacted a change: the emulator records an API key for HTTP, a user for helpers. */
export type ActorWire = { type: 'api_actor'; api_key_id: string } | { type: 'user_actor'; user_id: string };

/**
 * One memory version. `content` is set only in the `full` view; `content`, `content_sha256`
 * and `content_size_bytes` are `null` for a `deleted` version; a redacted version has those
 * and `path` `null`, and `redacted_at` set. `created_at` is RFC 3339 (the emulator writes ms
 * precision, `Z`).
 */
export interface MemoryVersionWire {
  type: 'memory_version';
  id: string;
  memory_store_id: string;
  memory_id: string;
  operation: 'created' | 'modified' | 'deleted';
  path: string | null;
  content: string | null;
  content_sha256: string | null;
  content_size_bytes: number | null;
  created_at: string;
  created_by: ActorWire | null;
  redacted_at: string | null;
  redacted_by: ActorWire | null;
}

/** A version list response, newest first; paged like the memory listing. */
export interface MemoryVersionListPageWire {
  data: MemoryVersionWire[];
  next_page: string | null;
}
