import { MARKER_FILE } from '../model/limits.js';
import type { StoreFolder } from './store-folder.js';

/**
 * The marker file binds a store directory to its store id. Without it, or with another id in it,
 * the directory is not ours to sync or delete: the engine reads it before every pass,
 * before every remote delete, and before removing the directory at finalize.
 *
 * `unreadable` is an I/O error while reading it (EIO, EACCES): it says nothing about whose folder
 * this is, so it never distrusts the folder; the pass is skipped and the next one reads again.
 */
export type MarkerState = 'ok' | 'missing' | 'foreign' | 'unreadable';

/** Far more than `{"memory_store_id":"..."}` needs; a larger marker is not ours. */
const MAX_MARKER_BYTES = 4_096;

function markerContent(memoryStoreId: string): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify({ memory_store_id: memoryStoreId })}\n`);
}

export async function writeMarker(folder: StoreFolder, memoryStoreId: string): Promise<void> {
  await folder.writeTopLevel(MARKER_FILE, markerContent(memoryStoreId));
}

/**
 * `foreign` covers anything that is not a regular file naming this store: another id, unparsable
 * content, a symlink, a folder or a hard link in the marker's place.
 */
export async function readMarker(folder: StoreFolder, memoryStoreId: string): Promise<MarkerState> {
  let read;
  try {
    read = await folder.readTopLevel(MARKER_FILE, MAX_MARKER_BYTES);
  } catch {
    return 'unreadable';
  }
  if (read.kind === 'absent') return 'missing';
  if (read.kind !== 'file' || !read.bytes) return 'foreign';
  try {
    const parsed = JSON.parse(new TextDecoder().decode(read.bytes)) as { memory_store_id?: unknown };
    return parsed.memory_store_id === memoryStoreId ? 'ok' : 'foreign';
  } catch {
    return 'foreign';
  }
}
