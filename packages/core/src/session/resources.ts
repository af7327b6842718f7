import { MemoryMountError } from '../model/errors.js';
import { MAX_STORES_PER_SESSION, MOUNT_PREFIX } from '../model/limits.js';
import { hostPathOf, mountPathProblem, mountPathsClash, mountPathSlug } from '../model/mount-path.js';
import type { Access, MemoryStoreResource, MountedStore } from '../model/types.js';

/**
 * Session resources -> the stores to mount, checked before anything is created:
 * only `memory_store` resources count, at most 8, each store id once, each with a
 * valid mount path that no other store's path equals (ignoring case) or nests with.
 */
export function resolveMounts(resources: readonly { type: string }[], memoryRoot: string): MountedStore[] {
  if (!Array.isArray(resources)) {
    throw new MemoryMountError('invalid_resource', 'materialize() takes the session resources as an array');
  }
  const stores = resources.filter(
    (r): r is MemoryStoreResource => typeof r === 'object' && r !== null && r.type === 'memory_store',
  );
  if (stores.length > MAX_STORES_PER_SESSION) {
    throw new MemoryMountError(
      'too_many_stores',
      `a session can mount at most ${MAX_STORES_PER_SESSION} memory stores; it has ${stores.length}`,
    );
  }
  const mounts = stores.map((resource) => toMount(resource, memoryRoot));
  for (let i = 0; i < mounts.length; i++) {
    for (let j = 0; j < i; j++) {
      const [a, b] = [mounts[j]!, mounts[i]!];
      // One store in two folders: each folder's trust (its marker names the store) would be
      // judged against the other's, and finalize would remove one by the other's verdict.
      if (a.memoryStoreId === b.memoryStoreId) {
        throw new MemoryMountError(
          'duplicate_store_id',
          `store ${a.memoryStoreId} is attached twice, at ${a.mountPath} and at ${b.mountPath}; a store can be mounted once per session`,
          { memoryStoreId: b.memoryStoreId, path: b.mountPath },
        );
      }
      if (mountPathsClash(a.mountPath, b.mountPath)) {
        throw new MemoryMountError(
          'duplicate_mount_path',
          `stores ${a.memoryStoreId} and ${b.memoryStoreId} would share a folder: ${a.mountPath} and ${b.mountPath} ` +
            'are equal, equal ignoring case, or nested',
          { memoryStoreId: b.memoryStoreId, path: b.mountPath },
        );
      }
    }
  }
  return mounts;
}

function toMount(resource: MemoryStoreResource, memoryRoot: string): MountedStore {
  const id = resource.memory_store_id;
  if (typeof id !== 'string' || id.length === 0) {
    throw new MemoryMountError('invalid_resource', 'a memory_store resource has no memory_store_id');
  }
  const access: Access = resource.access ?? 'read_write';
  if (access !== 'read_write' && access !== 'read_only') {
    throw new MemoryMountError('invalid_resource', `store ${id}: access must be read_write or read_only; got ${JSON.stringify(access)}`, {
      memoryStoreId: id,
    });
  }
  const name = typeof resource.name === 'string' && resource.name.length > 0 ? resource.name : id;
  const mountPath = resource.mount_path ?? `${MOUNT_PREFIX}/${mountPathSlug(name) || id}`;
  const problem = typeof mountPath === 'string' ? mountPathProblem(mountPath) : 'is not a string';
  if (problem) {
    throw new MemoryMountError(
      'mount_path_invalid',
      `store ${id}: mount path ${JSON.stringify(mountPath)} ${problem}; it must be ${MOUNT_PREFIX}/ followed by clean segments`,
      { memoryStoreId: id, path: String(mountPath) },
    );
  }
  return { memoryStoreId: id, name, mountPath, path: hostPathOf(memoryRoot, mountPath), access };
}
