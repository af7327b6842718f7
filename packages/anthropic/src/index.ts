export { AnthropicStoreClient } from './anthropic-store-client.js';
export type { AnthropicStoreClientOptions } from './anthropic-store-client.js';
export { storeErrorFromSdk } from './store-error-mapping.js';
