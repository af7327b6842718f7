import { createHash } from 'node:crypto';

/** Lowercase hex sha256 of the bytes, or of a string's UTF-8 bytes: the service's content_sha256. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * sha256 of no bytes. Any empty file matches any empty memory by chance, so this content proves
 * no identity: it never pairs a rename, nor counts as a memory moved.
 */
export const EMPTY_SHA = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
