/** Limits and defaults of the memory-store service: what it accepts, and the library's defaults. */
export const MAX_STORES_PER_SESSION = 8;
export const MAX_MEMORY_BYTES = 102_400;
export const MAX_PATH_BYTES = 1_024;
export const MAX_PATH_SEGMENTS = 20;
export const MAX_INSTRUCTIONS_CHARS = 4_096;
export const LIST_PAGE_SIZE = 100;
export const LIST_PAGE_SIZE_WITH_CONTENT = 20;

export const MOUNT_PREFIX = '/mnt/memory';
export const MARKER_FILE = '.anthropic-memory-store';

export const DEFAULT_SYNC_INTERVAL_S = 15;
export const DEFAULT_DELETE_GRACE_S = 30;
export const DEFAULT_NEW_FILE_SETTLE_S = 1;
export const DEFAULT_FINAL_SYNC_TIMEOUT_S = 30;
export const DEFAULT_REQUEST_TIMEOUT_S = 30;
export const DEFAULT_SYNC_TIMEOUT_S = 60;
/**
 * How long an unforced reconcile (a tool call) waits for a pass before it goes on in the
 * background: 1.9 s, so that a timer fired a little late (a busy event loop) still holds the
 * agent under 2 s.
 */
export const DEFAULT_SYNC_WAIT_S = 1.9;
/** How long an ordinary pass retries failed store calls; finalize and recover use their whole window. */
export const DEFAULT_RETRY_BUDGET_S = 5;
/** The circuit breaker's longest delay between probes of an unavailable store. */
export const MAX_BREAKER_DELAY_MS = 300_000;
/**
 * 32: what the SDK's own memory sync uploads at (its UPLOAD_CONCURRENCY) against the same service.
 * Node's fetch (undici) opens a keep-alive connection per request in flight with no per-origin
 * cap, so the pool, not the HTTP agent, is what bounds the requests in flight.
 */
export const DEFAULT_TRANSFER_CONCURRENCY = 32;
export const DEFAULT_FULL_LISTING_EVERY = 100;
export const DEFAULT_FULL_LISTING_INTERVAL_S = 600;

/**
 * The bytes a pass keeps for its pushes: 32 MiB is 320 files at the 100 kB limit and all of a
 * 2,000-file store of 1 kB memories, and small beside what a Node process holds anyway.
 */
export const CARRY_BUDGET_BYTES = 32 * 1024 * 1024;
