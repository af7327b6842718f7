export { MemoryApiServer } from './memory-api-server.js';
export type { MemoryApiServerOptions, RecordedRequest } from './memory-api-server.js';
export type { RouteName } from './routes.js';
export type { SessionSeed } from './sessions.js';
export type { Fault } from './faults.js';
export type { MemoryStore, MemoryRecord } from './memory-store.js';
export type {
  MemoryWire,
  MemoryPrefixWire,
  MemoryListItemWire,
  MemoryListPageWire,
  DeletedMemoryWire,
  ErrorBodyWire,
  MemoryView,
  MemoryVersionWire,
  MemoryVersionListPageWire,
  ActorWire,
} from './wire.js';
