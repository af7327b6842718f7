import { posix } from 'node:path';
import { errorCode, type FileSystem } from './file-system.js';
import { MARKER_FILE } from './limits.js';

/**
 * The marker file binds a store directory to its store id. Without it, or with another id in it,
 * the directory is not ours to sync or delete (SPEC 4.4): the engine reads it before every pass,
 * before every remote delete, and before removing the directory at finalize.
 */
export type MarkerState = 'ok' | 'missing' | 'foreign';

export function markerPath(storeRoot: string): string {
  return posix.join(storeRoot, MARKER_FILE);
}

export function markerContent(memoryStoreId: string): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify({ memory_store_id: memoryStoreId })}\n`);
}

export async function writeMarker(fs: FileSystem, storeRoot: string, memoryStoreId: string): Promise<void> {
  await fs.writeFile(markerPath(storeRoot), markerContent(memoryStoreId), { mode: 0o600 });
}

/**
 * `foreign` covers anything that is not a regular file naming this store: another id, unparsable
 * content, a symlink or a directory in the marker's place.
 */
export async function readMarker(fs: FileSystem, storeRoot: string, memoryStoreId: string): Promise<MarkerState> {
  let bytes: Uint8Array;
  try {
    bytes = await fs.readFile(markerPath(storeRoot));
  } catch (err) {
    return errorCode(err) === 'ENOENT' ? 'missing' : 'foreign';
  }
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { memory_store_id?: unknown };
    return parsed.memory_store_id === memoryStoreId ? 'ok' : 'foreign';
  } catch {
    return 'foreign';
  }
}
