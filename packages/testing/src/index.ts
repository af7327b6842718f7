export { MemfsFileSystem, type FileSystemOp } from './memfs-file-system.js';
export {
  InMemoryStoreClient,
  type InMemoryStoreClientOptions,
  type StoreOp,
  type StoreWriteOp,
  type StoreRequest,
} from './in-memory-store-client.js';
export * from './memory-api-server/index.js';
export { FaultyFileSystem } from './faulty-file-system.js';
export { ManualClock } from './manual-clock.js';
export type {
  VersionRecord,
  VersionOperation,
  VersionActor,
  VersionLog,
  VersionClock,
  VersionFilter,
  Instant,
} from './memory-versions.js';
