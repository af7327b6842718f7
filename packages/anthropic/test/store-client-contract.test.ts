import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import type { StoreErrorKind } from '@memory-mounter/core';
import { InMemoryStoreClient, MemoryApiServer } from '@memory-mounter/testing';
import { storeClientContract } from './store-client-contract.js';

// The status the service answers each failure the contract injects with.
const STATUS: Partial<Record<StoreErrorKind, number>> = { unauthorized: 401, not_found: 404, unavailable: 503 };

// The real path: AnthropicStoreClient -> the SDK's HTTP client -> the loopback emulator.
// `maxRetries: 0` so a contract failure shows the first answer, not the last retry's.
storeClientContract('AnthropicStoreClient over MemoryApiServer', async (clock) => {
  const server = new MemoryApiServer({ now: clock.now });
  const baseURL = await server.start();
  const client = new AnthropicStoreClient({ client: new Anthropic({ apiKey: 'test', baseURL, maxRetries: 0 }) });
  return {
    client,
    seed: (storeId, files) => void server.seed(storeId, files),
    redactVersion: (storeId, versionId) => void server.redactVersion(storeId, versionId),
    setVersionRetention: (ms) => (server.versionRetentionMs = ms),
    // listFolder is the memories listing with depth=1 on the wire.
    failNext: (call, failure) => server.failNext(call === 'listVersions' ? 'list_versions' : 'list', STATUS[failure]!),
    teardown: () => server.close(),
  };
});

storeClientContract('InMemoryStoreClient', (clock) => {
  const client = new InMemoryStoreClient({ now: clock.now });
  return {
    client,
    seed: (storeId, files) => void client.seed(storeId, files),
    redactVersion: (storeId, versionId) => void client.redactVersion(storeId, versionId),
    setVersionRetention: (ms) => (client.versionRetentionMs = ms),
    failNext: (call, failure) => client.failNext(call === 'listVersions' ? 'listVersions' : 'list', failure),
  };
});
