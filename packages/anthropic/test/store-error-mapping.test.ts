import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { StoreError } from '@memory-mounter/core';
import { describe, expect, it } from 'vitest';
import { kindForStatus, retryAfterMsOf, storeErrorFromSdk } from '../src/store-error-mapping.js';

/** An SDK error as the SDK builds it from an error response. */
function sdkError(status: number, errorType?: string): APIError {
  const body = errorType === undefined ? undefined : { type: 'error', error: { type: errorType, message: 'm' } };
  return APIError.generate(status, body, undefined, new Headers({ 'request-id': 'req_1' }));
}

describe('storeErrorFromSdk', () => {
  it.each([
    [404, 'not_found_error', 'not_found'],
    [409, 'memory_precondition_failed_error', 'precondition_failed'],
    [412, undefined, 'precondition_failed'],
    [409, 'memory_path_conflict_error', 'path_conflict'],
    [409, 'conflict_error', 'unavailable'],
    [409, undefined, 'unavailable'],
    [400, 'invalid_request_error', 'rejected'],
    [413, 'request_too_large', 'rejected'],
    [422, 'invalid_request_error', 'rejected'],
    [431, undefined, 'rejected'],
    [401, 'authentication_error', 'unauthorized'],
    [402, 'billing_error', 'unauthorized'],
    [403, 'permission_error', 'unauthorized'],
    [408, 'timeout_error', 'unavailable'],
    [429, 'rate_limit_error', 'unavailable'],
    [499, undefined, 'unavailable'],
    [500, 'api_error', 'unavailable'],
    [502, undefined, 'unavailable'],
    [503, 'api_error', 'unavailable'],
    [504, 'timeout_error', 'unavailable'],
    [529, 'overloaded_error', 'unavailable'],
  ] as const)('maps %i %s to %s, keeping the status and the SDK error', (status, type, kind) => {
    const cause = sdkError(status, type);
    const err = storeErrorFromSdk(cause, 'update');
    expect(err).toBeInstanceOf(StoreError);
    expect(err.kind).toBe(kind);
    expect(err.status).toBe(status);
    expect(err.cause).toBe(cause);
    expect(err.message).toContain('update');
  });

  it.each([
    ['a connection error', new APIConnectionError({ message: 'fetch failed' })],
    ['a timeout', new APIConnectionTimeoutError()],
    ['an abort', new APIUserAbortError()],
    ['a plain Error', new TypeError('boom')],
    ['a non-Error', 'just a string'],
  ])('maps %s to unavailable, with no status', (_what, cause) => {
    const err = storeErrorFromSdk(cause, 'list');
    expect(err.kind).toBe('unavailable');
    expect(err.status).toBeUndefined();
    expect(err.cause).toBe(cause);
  });

  it('passes a StoreError through unchanged', () => {
    const original = new StoreError('rejected', 'already mapped', { status: 400 });
    expect(storeErrorFromSdk(original, 'create')).toBe(original);
  });

  it('reads the error type from a copy of the SDK it does not know (shape, not class)', () => {
    const foreign = Object.assign(new Error('409 conflict'), {
      status: 409,
      error: { type: 'error', error: { type: 'memory_path_conflict_error', message: 'taken' } },
    });
    expect(storeErrorFromSdk(foreign, 'create').kind).toBe('path_conflict');
  });
});

describe('kindForStatus', () => {
  it('treats a 409 without a memory error type as a transient conflict', () => {
    expect(kindForStatus(409, undefined)).toBe('unavailable');
  });

  it('treats a status that is no error as unavailable', () => {
    expect(kindForStatus(302, undefined)).toBe('unavailable');
  });
});

describe('retry-after (SPEC 6.7: honoured within a pass and across passes)', () => {
  const withHeaders = (status: number, headers: Record<string, string>) =>
    APIError.generate(status, { type: 'error', error: { type: 'rate_limit_error', message: 'm' } }, undefined, new Headers(headers));

  it('seconds, fractions, milliseconds and an HTTP date', () => {
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after': '30' }), 0)).toBe(30_000);
    expect(retryAfterMsOf(withHeaders(503, { 'retry-after': '1.5' }), 0)).toBe(1_500);
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after-ms': '250', 'retry-after': '30' }), 0)).toBe(250);
    const now = Date.parse('2026-12-01T10:00:00Z');
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after': 'Tue, 01 Dec 2026 10:00:45 GMT' }), now)).toBe(45_000);
    // A date already past: retry now.
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after': 'Tue, 01 Dec 2026 09:00:00 GMT' }), now)).toBe(0);
  });

  it('absent, unreadable, negative or over an hour: no answer', () => {
    expect(retryAfterMsOf(withHeaders(429, {}), 0)).toBeUndefined();
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after': 'soon' }), 0)).toBeUndefined();
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after': '-5' }), 0)).toBeUndefined();
    expect(retryAfterMsOf(withHeaders(429, { 'retry-after': '7200' }), 0)).toBeUndefined();
    expect(retryAfterMsOf(new Error('no headers'), 0)).toBeUndefined();
  });

  it('storeErrorFromSdk carries it on an unavailable failure, and only there', () => {
    expect(storeErrorFromSdk(withHeaders(429, { 'retry-after': '30' }), 'list').retryAfterMs).toBe(30_000);
    expect(storeErrorFromSdk(withHeaders(404, { 'retry-after': '30' }), 'get').retryAfterMs).toBeUndefined();
  });
});
