// The fakes' `page` cursors: opaque to clients, like the service's `page_...` values, and
// carrying the key of the last row served (a keyset cursor, not an offset).
const PREFIX = 'page_';

export function encodePageCursor(key: string): string {
  return PREFIX + Buffer.from(key, 'utf8').toString('base64url');
}

/** The key inside a cursor; `undefined` when it is not one of ours. */
export function decodePageCursor(cursor: string): string | undefined {
  return cursor.startsWith(PREFIX) ? Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString('utf8') : undefined;
}
