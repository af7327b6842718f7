export { AnthropicStoreClient, type AnthropicStoreClientOptions } from './anthropic-store-client.js';
export { storeErrorFromSdk, kindForStatus } from './store-error-mapping.js';
export { sessionsTokenFromSecret } from './work-secret.js';
export { mountSessionMemory, type MountSessionMemoryOptions, type SessionLike } from './mount-session-memory.js';
export { withMemorySync, type WithMemorySyncOptions } from './with-memory-sync.js';
export { runSessionWithMemory, type RunSessionWithMemoryOptions } from './session-lifecycle.js';
export { liveControlPlane, type ControlPlane, type LiveControlPlaneOptions, type WorkItem } from './control-plane.js';
