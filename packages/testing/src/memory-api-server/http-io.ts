import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, invalidRequest } from './api-error.js';

/**
 * Request bodies beyond this are refused with 413 before parsing. Far above the 100 kB content
 * limit even after JSON escaping, so a too-large memory is refused by the content rule (400).
 */
const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

/**
 * The whole body as text. It is always read to the end, even when too large, so the keep-alive
 * connection stays usable for the SDK's next request.
 */
export async function readBody(req: IncomingMessage): Promise<{ text: string; tooLarge: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= MAX_REQUEST_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), tooLarge: size > MAX_REQUEST_BODY_BYTES };
}

/** The body of a POST: a JSON object. */
export function parseJsonObject(text: string, tooLarge: boolean): Record<string, unknown> {
  if (tooLarge) {
    throw new ApiError(413, 'request_too_large', `request body exceeds ${MAX_REQUEST_BODY_BYTES} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidRequest('request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidRequest('request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}
