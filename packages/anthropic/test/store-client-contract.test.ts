import Anthropic from '@anthropic-ai/sdk';
import { AnthropicStoreClient } from '@memory-mounter/anthropic';
import { InMemoryStoreClient, MemoryApiServer } from '@memory-mounter/testing';
import { storeClientContract } from './store-client-contract.js';

// The real path: AnthropicStoreClient -> the SDK's HTTP client -> the loopback emulator.
// `maxRetries: 0` so a contract failure shows the first answer, not the last retry's.
storeClientContract('AnthropicStoreClient over MemoryApiServer', async () => {
  const server = new MemoryApiServer();
  const baseURL = await server.start();
  const client = new AnthropicStoreClient({ client: new Anthropic({ apiKey: 'test', baseURL, maxRetries: 0 }) });
  return {
    client,
    seed: (storeId, files) => void server.seed(storeId, files),
    teardown: () => server.close(),
  };
});

storeClientContract('InMemoryStoreClient', () => {
  const client = new InMemoryStoreClient();
  return { client, seed: (storeId, files) => void client.seed(storeId, files) };
});
