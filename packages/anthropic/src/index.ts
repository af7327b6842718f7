export { AnthropicStoreClient, type AnthropicStoreClientOptions } from './anthropic-store-client.js';
export { storeErrorFromSdk, kindForStatus } from './store-error-mapping.js';
export { sessionsTokenFromSecret } from './work-secret.js';
export { mountSessionMemory, type MountSessionMemoryOptions, type SessionLike } from './mount-session-memory.js';
export { withMemorySync, type WithMemorySyncOptions } from './with-memory-sync.js';
export { runSessionWithMemory, type RunSessionWithMemoryOptions } from './session-lifecycle.js';
export { liveControlPlane, type ControlPlane, type LiveControlPlaneOptions, type WorkItem } from './control-plane.js';
export { EnvironmentWorker } from './environment-worker.js';
export {
  type EnvironmentWorkerOptions,
  type EnvironmentWorkerTools,
  type WorkerEvents,
  type WorkerListeners,
  type WorkerItem,
  type WorkerMounterOptions,
} from './worker-options.js';
export { claimedItemFrom, type ClaimedItem, type HandleItemOptions } from './claimed-item.js';
export { WorkItemError, type WorkItemErrorCode } from './work-item-error.js';
export { finalizeOutcome, afterTeardown, type LeaseState, type SessionEnd } from './work-item-outcome.js';
