import { createHash } from 'node:crypto';

/** Lowercase hex sha256 of the bytes, or of a string's UTF-8 bytes: the service's content_sha256. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}
