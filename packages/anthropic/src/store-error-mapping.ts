import { StoreError, type StoreErrorKind } from '@memory-mounter/core';

/**
 * Turns whatever an `@anthropic-ai/sdk` call threw into the StoreError the engine acts on.
 *
 * The error is read by shape (`status`, the body's `error.type`), not by `instanceof`: the SDK
 * is a peer dependency, so the host's client may come from another copy of the package whose
 * classes are not ours.
 *
 * | what failed                                   | kind                  |
 * |-----------------------------------------------|-----------------------|
 * | no HTTP status: connection, timeout, abort    | `unavailable`         |
 * | 404                                           | `not_found`           |
 * | 409 `memory_precondition_failed_error`, 412   | `precondition_failed` |
 * | 409 `memory_path_conflict_error`              | `path_conflict`       |
 * | any other 409 (`conflict_error`)              | `unavailable`         |
 * | 401, 402, 403                                 | `unauthorized`        |
 * | 408, 429, 499, 5xx                            | `unavailable`         |
 * | 400, 413, 422 and every other 4xx             | `rejected`            |
 * | anything else (1xx/3xx, not an error at all)  | `unavailable`         |
 *
 * Choices the table makes where the API leaves room, and why:
 * - A 409 that names neither memory error is the service saying a concurrent operation got in
 *   the way (the SDK retries 409s as lock timeouts). Nothing says the store moved, so it is not
 *   a precondition failure; the write may simply not have happened. `unavailable` ("outcome
 *   unknown") is the reading that can never lose data: the engine remembers the sha it sent
 *   and tries again.
 * - 402 (billing) is an account problem, not a content problem: like 401/403 it will not be
 *   cured by changing the memory, so it is `unauthorized`, not `rejected`.
 * - 499 (client closed request) is a cut-off request, so its outcome is unknown.
 * - An abort is `unavailable` too: the request may have reached the server before it was cut.
 */
export function storeErrorFromSdk(err: unknown, operation: string): StoreError {
  if (err instanceof StoreError) return err;
  const status = httpStatusOf(err);
  const errorType = apiErrorTypeOf(err);
  const kind = status === undefined ? 'unavailable' : kindForStatus(status, errorType);
  const detail = err instanceof Error ? err.message : String(err);
  const message = `memory store ${operation} failed (${kind}): ${detail}`;
  const retryAfterMs = kind === 'unavailable' ? retryAfterMsOf(err, Date.now()) : undefined;
  return new StoreError(kind, message, {
    ...(status !== undefined && { status }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    cause: err,
  });
}

/** Longest wait a `retry-after` is taken at: past an hour it is a broken header, not a plan. */
const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * How long the service asked the client to wait, from the error's response headers:
 * `retry-after-ms` (milliseconds), else `retry-after` as seconds (fractions allowed) or as an
 * HTTP date (relative to `nowMs`, the wall clock, since that is what the date is on). Anything
 * unreadable, negative or past an hour is no answer: the engine's own backoff applies.
 */
export function retryAfterMsOf(err: unknown, nowMs: number): number | undefined {
  const headers = (err as { headers?: unknown } | null | undefined)?.headers;
  const get = (name: string): string | null => {
    if (headers && typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
    const value = (headers as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' ? value : null;
  };
  const sane = (ms: number) => (Number.isFinite(ms) && ms >= 0 && ms <= MAX_RETRY_AFTER_MS ? Math.ceil(ms) : undefined);
  const millis = get('retry-after-ms');
  if (millis !== null && /^\s*\d+(\.\d+)?\s*$/.test(millis)) return sane(Number(millis));
  const value = get('retry-after');
  if (value === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return sane(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : sane(Math.max(0, at - nowMs));
}

/** The kind for an HTTP error response; `errorType` is the body's `error.type`, when it had one. */
export function kindForStatus(status: number, errorType: string | undefined): StoreErrorKind {
  if (status === 404) return 'not_found';
  if (status === 412) return 'precondition_failed';
  if (status === 409) {
    if (errorType === 'memory_precondition_failed_error') return 'precondition_failed';
    if (errorType === 'memory_path_conflict_error') return 'path_conflict';
    return 'unavailable';
  }
  if (status === 401 || status === 402 || status === 403) return 'unauthorized';
  if (status === 408 || status === 429 || status === 499 || status >= 500) return 'unavailable';
  if (status >= 400) return 'rejected';
  return 'unavailable';
}

/** The HTTP status of an SDK `APIError`; `undefined` for connection errors, timeouts and aborts. */
function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null | undefined)?.status;
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
}

/**
 * `error.type` of the response body `{ type: 'error', error: { type, message } }`. The SDK keeps
 * the parsed body as `err.error` and copies the type to `err.type`; either will do.
 */
function apiErrorTypeOf(err: unknown): string | undefined {
  const e = err as { type?: unknown; error?: { error?: { type?: unknown } } } | null | undefined;
  const fromBody = e?.error?.error?.type;
  if (typeof fromBody === 'string') return fromBody;
  return typeof e?.type === 'string' ? e.type : undefined;
}
