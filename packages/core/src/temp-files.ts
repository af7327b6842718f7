import { randomBytes } from 'node:crypto';

/**
 * Names of the temp files that atomic writes leave for an instant beside their target. They are
 * never synced in either direction: the scanner skips them and a remote memory with such a name
 * is refused, because a file the scanner cannot see would look deleted and be deleted remotely.
 */
const TEMP_MARK = '.mm-tmp-';
const TEMP_PATTERN = /^\..*\.mm-tmp-[0-9a-f]{12}$/;

/** `notes.md` -> `.notes.md.mm-tmp-<12 hex>`: hidden, unique, recognisable. */
export function tempFileName(baseName: string): string {
  return `.${baseName}${TEMP_MARK}${randomBytes(6).toString('hex')}`;
}

export function isTempFileName(name: string): boolean {
  return TEMP_PATTERN.test(name);
}
