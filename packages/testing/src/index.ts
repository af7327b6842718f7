export { MemfsFileSystem } from './memfs-file-system.js';
export {
  InMemoryStoreClient,
  type InMemoryStoreClientOptions,
  type StoreOp,
  type StoreWriteOp,
  type StoreRequest,
} from './in-memory-store-client.js';
export * from './memory-api-server/index.js';
export { FaultyFileSystem, type FileSystemOp } from './faulty-file-system.js';
export { ManualClock } from './manual-clock.js';
export { seededRandom } from './seeded-random.js';
export type {
  VersionRecord,
  VersionOperation,
  VersionActor,
  VersionLog,
  VersionClock,
  VersionFilter,
  Instant,
} from './model/memory-versions.js';
export { MemoryService, type MemoryServiceOptions } from './model/memory-service.js';
export type { MemoryStore, MemoryRecord, MemoryChange, ListRequest, VersionQuery, StoreEnvironment, AlreadyAppliedUpdate } from './model/memory-store.js';
export type { ListEntry } from './model/listing.js';
export { ServiceRefusal, type RefusalCode } from './model/refusal.js';
