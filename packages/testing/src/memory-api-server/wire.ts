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
