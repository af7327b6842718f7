/**
 * The bench's emulator, in a process of its own (started by emulator-remote.ts): the store
 * service is not part of either engine, so its CPU must not count as theirs, nor its work hold
 * their event loop. Plain JavaScript on the built `@memory-mounter/testing` (`pnpm bench`
 * builds it first), since this process runs outside vitest.
 *
 * Messages in: { id, op, args }; out: { id, result } or { id, error }, and { ready: baseURL } once.
 */
import { MemoryApiServer } from '@memory-mounter/testing';

const server = new MemoryApiServer({ latencyMs: Number(process.argv[2] ?? 0) });
const ops = {
  seed: (storeId, files) => void server.seed(storeId, files),
  writeMemory: (storeId, path, content) => void server.writeMemory(storeId, path, content),
  requestCount: () => server.requestCount(),
  setLatency: (ms) => void (server.latencyMs = ms),
  cpuUsage: () => process.cpuUsage(),
  failStore: (storeId, fault, routes) => void server.failStore(storeId, fault ?? undefined, routes ? { routes } : {}),
  setRetryAfter: (seconds) => void (server.retryAfterSeconds = seconds),
  requestCountFor: (storeId) => server.requestCountFor(storeId),
  contents: (storeId, paths) => {
    const snapshot = server.snapshot(storeId);
    return Object.fromEntries(paths.map((path) => [path, snapshot[path] ?? null]));
  },
};

process.on('message', ({ id, op, args }) => {
  try {
    if (!(op in ops)) throw new Error(`no such op: ${op}`);
    process.send({ id, result: ops[op](...args) });
  } catch (err) {
    process.send({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
// The bench going away (or dying) takes the emulator with it.
process.on('disconnect', () => void server.close().finally(() => process.exit(0)));
process.send({ ready: await server.start() });
