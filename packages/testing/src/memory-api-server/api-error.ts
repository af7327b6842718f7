import type { ServiceRefusal } from '../model/refusal.js';
import type { ErrorBodyWire } from './wire.js';

/**
 * A refusal the emulator sends as an HTTP error: the status, the body's `error.type`, and any
 * fields that type carries (`conflicting_path` on a path conflict, say).
 */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function invalidRequest(message: string): ApiError {
  return new ApiError(400, 'invalid_request_error', message);
}

export function notFound(message: string): ApiError {
  return new ApiError(404, 'not_found_error', message);
}

/**
 * The HTTP error the service answers a refusal of the model with: its status, `error.type`, and
 * for a path conflict the memory in the way.
 */
export function apiErrorFor(refusal: ServiceRefusal): ApiError {
  switch (refusal.code) {
    case 'invalid_request':
      return invalidRequest(refusal.message);
    case 'not_found':
      return notFound(refusal.message);
    case 'precondition_failed':
      return new ApiError(409, 'memory_precondition_failed_error', refusal.message);
    case 'path_conflict':
      return new ApiError(409, 'memory_path_conflict_error', refusal.message, {
        ...(refusal.conflict && { conflicting_path: refusal.conflict.path, conflicting_memory_id: refusal.conflict.memoryId }),
      });
  }
}

/** The `error.type` the API uses for a bare status (an injected fault, a refused header). */
export function errorTypeForStatus(status: number): string {
  switch (status) {
    case 401: return 'authentication_error';
    case 402: return 'billing_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 408: return 'timeout_error';
    case 409: return 'conflict_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 504: return 'timeout_error';
    case 529: return 'overloaded_error';
  }
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

export function errorBody(error: ApiError, requestId: string): ErrorBodyWire {
  return {
    type: 'error',
    error: { type: error.type, message: error.message, ...error.fields },
    request_id: requestId,
  };
}

/**
 * Retry advice for an error response. The SDK obeys `x-should-retry` before its own status
 * rules, and waits `retry-after` seconds (fractions accepted) before a retry.
 *
 * Assumption, not observed on the real service: it marks the two memory 409s as final. A
 * failed precondition or a taken path cannot succeed on a repeat, while the SDK by default
 * retries every 409 (as a lock timeout); a plain `conflict_error` stays retryable.
 */
export function retryHeaders(error: ApiError, retryAfterSeconds: number): Record<string, string> {
  const transient =
    error.status === 408 ||
    error.status === 429 ||
    error.status >= 500 ||
    (error.status === 409 && error.type === 'conflict_error');
  const headers: Record<string, string> = { 'x-should-retry': String(transient) };
  if (error.status === 429 || error.status >= 500) headers['retry-after'] = String(retryAfterSeconds);
  return headers;
}
