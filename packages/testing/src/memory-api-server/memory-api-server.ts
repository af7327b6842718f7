import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, apiErrorFor, errorBody, errorTypeForStatus, invalidRequest, retryHeaders } from './api-error.js';
import { ControlPlaneEmulator, type ControlPlaneOptions } from './control-plane.js';
import { checkFault, FaultPlan, RandomWriteFaults, type Fault, type RandomWriteFaultOptions } from './faults.js';
import { handlers, ROUTES_WITH_BODY } from './handlers.js';
import { parseJsonObject, readBody, sendJson } from './http-io.js';
import { MemoryService, randomId, type MemoryServiceOptions } from '../model/memory-service.js';
import { ServiceRefusal } from '../model/refusal.js';
import { matchRoute, ROUTE_NAMES, type MatchedRoute, type RouteName } from './routes.js';
import { matchSessionRoute, sessionWire, type SessionSeed } from './sessions.js';
import { matchSkillRoute, SkillRegistry, type SkillSeed } from './skills.js';

export interface MemoryApiServerOptions extends MemoryServiceOptions {
  /** Delay before every answer, in ms. Default 0. Changeable later through `latencyMs`. */
  latencyMs?: number;
  /**
   * `retry-after` sent with 429 and 5xx answers, in seconds. Default 1. The SDK waits this long
   * before its retry; tests may pass a fraction (0.01) to keep retries fast.
   */
  retryAfterSeconds?: number;
  /**
   * When set, memory requests must carry this credential (`x-api-key` or `Authorization:
   * Bearer`); else any. Set it to a work item's sessions token to check that a worker does not
   * call the memory endpoints with its environment key, which the service refuses. The sessions
   * endpoint takes any credential, as the service's does.
   */
  apiKey?: string;
  /** Credentials and lease TTL of the control-plane endpoints (`controlPlane`). */
  controlPlane?: ControlPlaneOptions;
  /**
   * What a memory request for a store the emulator was never given answers: `'not_found'`
   * (default) a 404 `not_found_error`, as the service does for a store id it does not know;
   * `'create'` makes an empty store on first use. A store is given by any helper that names it
   * (`createStore`, `seed`, `writeMemory`, ...).
   */
  unknownStores?: 'not_found' | 'create';
}

/** One request the server received, for assertions on what a client sent. */
export interface RecordedRequest {
  route: RouteName;
  method: string;
  storeId: string;
  memoryId?: string;
  versionId?: string;
  query: Record<string, string>;
  /** The status answered; `undefined` while in flight, or when the connection was dropped. */
  status?: number;
}

// The SDK sends one of these in `anthropic-beta`; the service refuses requests with neither.
const MEMORY_BETAS = ['agent-memory-2026-07-22', 'managed-agents-2026-04-01'];

/**
 * A loopback emulator of the memory-store endpoints `@anthropic-ai/sdk` calls, for tests and
 * demos that run the real SDK with no account and no network:
 *
 *   const server = new MemoryApiServer();
 *   const client = new Anthropic({ apiKey: 'test', baseURL: await server.start() });
 *
 * The stores and their rules are the service model (`MemoryService`, one `MemoryStore` per
 * store) that `InMemoryStoreClient` answers from too; this class only maps HTTP to the model
 * and back. A store exists once a helper names it (`createStore`, `seed`, ...); a request for
 * any other store id is a 404, as on the service (`unknownStores: 'create'` makes it on first
 * use instead). The model's helpers (`seed`, `snapshot`,
 * `writeMemory`, `renameMemory`, `deleteMemory`, `plantMemory`, ...) act on the stores directly,
 * as another writer would: no HTTP, no latency, faults or counters.
 *
 * Every change, through HTTP or a helper, records a memory version, served by
 * `GET .../memory_versions` (newest first, filters `created_at[gte]`/`created_at[lte]`
 * inclusive, `memory_id`, `operation`; paged like the memory listing), `GET
 * .../memory_versions/{id}` and `POST .../memory_versions/{id}/redact`. Version timestamps
 * come from the `now` clock (ms precision); `versionRetentionMs` and `redactVersion` are the
 * tests' knobs.
 */
export class MemoryApiServer extends MemoryService {
  /** `http://127.0.0.1:<port>` once started; `''` before. */
  baseURL = '';
  latencyMs: number;
  retryAfterSeconds: number;
  /** Every request that matched a route, oldest first. */
  readonly requests: RecordedRequest[] = [];
  /**
   * The control-plane endpoints a self-hosted worker calls (work queue, leases, a session's
   * events), served on the same base URL, with their helpers: queue work, play a session with
   * a scripted agent. Its requests are counted there, not in `requests`.
   */
  readonly controlPlane: ControlPlaneEmulator;

  readonly #options: MemoryApiServerOptions;
  readonly #sessions = new Map<string, SessionSeed>();
  /** `GET /v1/sessions/{id}` requests received. */
  sessionRequests = 0;
  /** `GET /v1/skills/{id}/versions/{version}` and `.../content` requests received. */
  skillRequests = 0;
  readonly #skills: SkillRegistry;
  readonly #faults = new FaultPlan();
  #randomFaults: RandomWriteFaults | undefined;
  /** Standing faults by store id (`failStore`): every request of their routes fails while set. */
  readonly #storeFaults = new Map<string, { fault: Fault; routes: ReadonlySet<RouteName> | null }>();
  #server: Server | undefined;
  #closing = false;
  /** Connections of requests held by a `'hang'` fault: closed by `close()`. */
  readonly #hung = new Set<Socket>();
  /** Every open connection, so `close()` can drop the ones no request will ever finish on. */
  readonly #sockets = new Set<Socket>();

  constructor(options: MemoryApiServerOptions = {}) {
    super(options);
    this.#options = options;
    this.latencyMs = options.latencyMs ?? 0;
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
    this.controlPlane = new ControlPlaneEmulator(options.controlPlane ?? {}, { newId: randomId, now: this.env.now });
    this.#skills = new SkillRegistry({ newId: randomId, now: this.env.now });
  }

  /** Listens on 127.0.0.1, on a port the OS picks; resolves to (and sets) `baseURL`. */
  async start(): Promise<string> {
    if (this.#server) throw new Error('MemoryApiServer is already started');
    const server = createServer((req, res) => void this.#handle(server, req, res));
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    this.baseURL = `http://127.0.0.1:${port}`;
    return this.baseURL;
  }

  /**
   * Stops listening, lets requests in flight finish, and closes keep-alive sockets as they go
   * idle: the SDK's fetch keeps connections open, and `server.close()` alone would wait on them.
   * Requests held by a `'hang'` fault are never answered: their connections are dropped, and so
   * are connections that never carried a request (a client that gave up on a request before
   * sending it may leave one open, which Node does not count as idle).
   */
  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    this.#closing = true;
    this.controlPlane.close();
    const closed = new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    server.closeIdleConnections();
    for (const socket of this.#sockets) if (this.#hung.has(socket) || socket.bytesRead === 0) socket.destroy();
    this.#hung.clear();
    try {
      await closed;
    } finally {
      this.#closing = false;
      this.baseURL = '';
    }
  }

  /**
   * The next `times` requests of `route` fail with `fault`: an HTTP error status (answered with
   * the service's error body, `request-id` and retry headers), `'disconnect'`, or `'hang'` (never
   * answered until the client aborts or the server closes). Faults queue up in call order; a
   * fault consumes a request before any other check, and changes nothing.
   */
  failNext(route: RouteName, fault: Fault, times = 1): void {
    this.#faults.add(route, fault, times);
  }

  /**
   * From now on, a seeded share of writes (create, update, delete) fails with a 503 (or
   * `status`), some of them carried out first (see `RandomWriteFaults`); `undefined` stops it.
   * A fault queued by `failNext` is taken first. Returns the plan, whose `counts` say how many
   * failures were answered.
   */
  failWritesAtRandom(options: RandomWriteFaultOptions | undefined): RandomWriteFaults | undefined {
    this.#randomFaults = options && new RandomWriteFaults(options);
    return this.#randomFaults;
  }

  /**
   * From now on, every request for store `storeId` (of `routes` only, when given) fails with
   * `fault`, as a store that is down (503), rate-limited (429, with `retryAfterSeconds`) or whose
   * writes hang (`'hang'` on `WRITE_ROUTES`) does, until `failStore(storeId, undefined)`. The
   * other stores are served as usual. A fault queued by `failNext` is taken first.
   */
  failStore(storeId: string, fault: Fault | undefined, opts: { routes?: readonly RouteName[] } = {}): void {
    if (fault === undefined) {
      this.#storeFaults.delete(storeId);
      return;
    }
    checkFault(fault);
    this.#storeFaults.set(storeId, { fault, routes: opts.routes ? new Set(opts.routes) : null });
  }

  /** Requests received for store `storeId` (its memory routes), retries by the SDK counting one each. */
  requestCountFor(storeId: string): number {
    return this.requests.filter((r) => r.storeId === storeId).length;
  }

  clearFaults(): void {
    this.#faults.clear();
    this.#storeFaults.clear();
    this.#randomFaults = undefined;
  }

  /** Requests received for `route`, or for every route; retries by the SDK count one each. */
  requestCount(route?: RouteName): number {
    return route === undefined ? this.requests.length : this.requests.filter((r) => r.route === route).length;
  }

  /** Per-route request counts. */
  requestCounts(): Record<RouteName, number> {
    return Object.fromEntries(ROUTE_NAMES.map((route) => [route, this.requestCount(route)])) as Record<
      RouteName,
      number
    >;
  }

  resetRequests(): void {
    this.requests.length = 0;
  }

  /**
   * Adds a version of skill `skillId` (the newest is `latest`) and returns its id. List it on a
   * session's agent with `seedSession(id, { skills: [{ type: 'custom', skill_id, version }] })`;
   * its download is a tar of `files` in one folder named after the skill.
   */
  seedSkill(skillId: string, seed: SkillSeed): string {
    return this.#skills.add(skillId, seed);
  }

  /** Makes `GET /v1/sessions/{id}` answer with these resources (and status, default `running`). */
  seedSession(sessionId: string, seed: SessionSeed): void {
    this.#sessions.set(sessionId, seed);
  }

  async #handle(server: Server, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomId('req');
    res.setHeader('request-id', requestId);
    // Once closing, each socket this answer frees is closed at once instead of idling on.
    res.once('finish', () => {
      if (this.#closing) setImmediate(() => server.closeIdleConnections());
    });
    try {
      const body = await readBody(req);
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (await this.controlPlane.handle(req, res, url, body)) return;
      const sessionId = matchSessionRoute(req.method, url.pathname);
      if (sessionId !== undefined) {
        this.sessionRequests++;
        if (this.latencyMs > 0) await sleep(this.latencyMs);
        sendJson(res, 200, this.#retrieveSession(req, sessionId));
        return;
      }
      const skill = matchSkillRoute(req.method, url.pathname);
      if (skill !== undefined) {
        this.skillRequests++;
        if (this.latencyMs > 0) await sleep(this.latencyMs);
        // Like the sessions endpoint: any credential (the item's sessions token, as a worker sends).
        this.#checkCredential(req, undefined);
        if (skill.route === 'skills.version') sendJson(res, 200, this.#skills.version(skill.skillId, skill.version));
        else sendBinary(res, this.#skills.archive(skill.skillId, skill.version));
        return;
      }
      const match = matchRoute(req.method, url.pathname);
      const record = match ? this.#record(req, match, url.searchParams) : undefined;
      // A client that gives up during the delay does not undo its request: the write still
      // lands, as it may on the real service. That is what `unavailable` means to the engine.
      if (this.latencyMs > 0) await sleep(this.latencyMs);
      if (!match || !record) {
        throw new ApiError(404, 'not_found_error', `no route for ${req.method} ${url.pathname}`);
      }
      res.once('finish', () => (record.status = res.statusCode));

      const standing = this.#storeFaults.get(match.storeId);
      const fault =
        this.#faults.take(match.route) ??
        (standing && (standing.routes === null || standing.routes.has(match.route)) ? standing.fault : undefined) ??
        this.#randomFaults?.take(match.route);
      if (fault === 'disconnect') {
        req.socket.destroy();
        return;
      }
      if (fault === 'hang') {
        const socket = req.socket;
        this.#hung.add(socket);
        socket.once('close', () => this.#hung.delete(socket));
        if (this.#closing) socket.destroy();
        return;
      }
      if (typeof fault === 'number') throw new ApiError(fault, errorTypeForStatus(fault), `injected fault: HTTP ${fault}`);

      const run = () => {
        this.#checkHeaders(req);
        if (this.#options.unknownStores !== 'create' && !this.hasStore(match.storeId)) {
          throw new ApiError(404, 'not_found_error', `memory store ${match.storeId} not found`);
        }
        return handlers[match.route]({
          store: this.store(match.storeId),
          memoryId: match.memoryId,
          versionId: match.versionId,
          query: url.searchParams,
          body: ROUTES_WITH_BODY.includes(match.route) ? parseJsonObject(body.text, body.tooLarge) : {},
        });
      };
      if (fault !== undefined) {
        // Carried out, then the answer lost: a refusal is lost as a success would be.
        try {
          run();
        } catch {}
        const status = fault.afterApplying;
        throw new ApiError(status, errorTypeForStatus(status), `injected fault: HTTP ${status}, after applying the request`);
      }
      sendJson(res, 200, run());
    } catch (err) {
      const error =
        err instanceof ApiError
          ? err
          : err instanceof ServiceRefusal
            ? apiErrorFor(err)
            : new ApiError(500, 'api_error', `internal error: ${(err as Error).message}`);
      sendJson(res, error.status, errorBody(error, requestId), retryHeaders(error, this.retryAfterSeconds));
    }
  }

  #record(req: IncomingMessage, match: MatchedRoute, query: URLSearchParams): RecordedRequest {
    const record: RecordedRequest = {
      route: match.route,
      method: req.method ?? '',
      storeId: match.storeId,
      ...(match.memoryId !== undefined && { memoryId: match.memoryId }),
      ...(match.versionId !== undefined && { versionId: match.versionId }),
      query: Object.fromEntries(query),
    };
    this.requests.push(record);
    return record;
  }

  #retrieveSession(req: IncomingMessage, sessionId: string): unknown {
    // The sessions endpoints take the environment key as well as a sessions token, so any
    // credential will do here; `apiKey` guards the memory endpoints only.
    this.#checkCredential(req, undefined);
    const betas = (header(req, 'anthropic-beta') ?? '').split(',').map((beta) => beta.trim());
    if (!betas.includes('managed-agents-2026-04-01')) {
      throw invalidRequest('the sessions endpoints need anthropic-beta: managed-agents-2026-04-01');
    }
    const seed = this.#sessions.get(sessionId);
    if (!seed) throw new ApiError(404, 'not_found_error', `session ${sessionId} not found`);
    return sessionWire(sessionId, seed, this.env.now());
  }

  /** The headers the service insists on: a credential and a memory beta. */
  #checkHeaders(req: IncomingMessage): void {
    this.#checkCredential(req, this.#options.apiKey);
    if (header(req, 'anthropic-version') === undefined) {
      throw invalidRequest('anthropic-version: header is required');
    }
    const betas = (header(req, 'anthropic-beta') ?? '').split(',').map((beta) => beta.trim());
    if (!MEMORY_BETAS.some((beta) => betas.includes(beta))) {
      throw invalidRequest(`the memory endpoints need anthropic-beta: ${MEMORY_BETAS.join(' or ')}`);
    }
  }

  #checkCredential(req: IncomingMessage, required: string | undefined): void {
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const key = header(req, 'x-api-key') || bearer;
    if (!key || (required !== undefined && key !== required)) {
      throw new ApiError(401, 'authentication_error', key ? 'invalid x-api-key' : 'no API key');
    }
  }
}

function sendBinary(res: ServerResponse, body: Buffer): void {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) });
  res.end(body);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}
