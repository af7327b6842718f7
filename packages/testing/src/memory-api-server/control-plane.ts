import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, invalidRequest, notFound } from './api-error.js';
import type { Fault } from './faults.js';
import { parseJsonObject, sendJson } from './http-io.js';
import type { SessionEventsPageWire, SentSessionEventsWire, WorkHeartbeatWire, WorkWire } from './control-plane-wire.js';
import {
  ScriptedSession,
  type AgentToolCall,
  type AgentToolOutcome,
  type PlaySessionOptions,
  type ScriptedAgentScript,
} from './scripted-session.js';
import { WorkQueue, type WorkRecord } from './work-queue.js';

/** The control-plane endpoints the emulator serves, by the names its counters and faults use. */
export type ControlRouteName =
  | 'work.poll'
  | 'work.retrieve'
  | 'work.ack'
  | 'work.heartbeat'
  | 'work.stop'
  | 'events.list'
  | 'events.stream'
  | 'events.send';

export interface ControlPlaneOptions {
  /**
   * When set, the work-queue calls (poll, ack, stop, retrieve) must carry this credential, and
   * the per-item calls (heartbeat, a session's events) this or the sessions token of a work
   * item queued for that session. Else any credential will do.
   */
  environmentKey?: string;
  /** The lease TTL a heartbeat is answered with (unless it asks for one). Default 300 s. */
  leaseTtlSeconds?: number;
}

export interface EnqueueWorkOptions {
  /** The session the item is for. */
  sessionId: string;
  /** Puts `{ sessions_token }` in the item's secret (base64url JSON), as the service does. */
  sessionsToken?: string;
  /** The secret verbatim instead (`null`: none); wins over `sessionsToken`. */
  secret?: string | null;
  /** Default `env_emulated`, the environment `seedSession`'s sessions report. */
  environmentId?: string;
  /** Default a fresh `work_...` id. */
  id?: string;
  metadata?: Record<string, string>;
}

/** One control-plane request the emulator received. */
export interface ControlRequest {
  route: ControlRouteName;
  method: string;
  environmentId?: string;
  workId?: string;
  sessionId?: string;
  /** The status answered; `undefined` while in flight (a stream, until it ends). */
  status?: number;
}

/** What happened on the control plane, in order, for a test or a timeline to follow. */
export type ControlPlaneEvent =
  | { kind: 'claimed'; work: WorkWire }
  | { kind: 'acked'; workId: string }
  | { kind: 'heartbeat'; workId: string; answer: WorkHeartbeatWire }
  | { kind: 'stopped'; workId: string }
  | { kind: 'stream_attached'; sessionId: string }
  | { kind: 'tool_use'; sessionId: string; toolUseId: string; call: AgentToolCall }
  | { kind: 'tool_result'; sessionId: string; outcome: AgentToolOutcome }
  | { kind: 'session_ended'; sessionId: string; state: 'idle' | 'terminated' | 'failed'; error?: string };

interface MatchedControlRoute {
  route: ControlRouteName;
  environmentId?: string;
  workId?: string;
  sessionId?: string;
}

const MANAGED_AGENTS_BETA = 'managed-agents-2026-04-01';
const WORK_PATH = /^\/v1\/environments\/([^/]+)\/work\/([^/]+)(?:\/(ack|heartbeat|stop))?\/?$/;
const EVENTS_PATH = /^\/v1\/sessions\/([^/]+)\/events(\/stream)?\/?$/;

/**
 * The control plane of a self-hosted environment, as `liveControlPlane` (the SDK's
 * `WorkPoller` and `SessionToolRunner`, and the lease heartbeat) uses it:
 *
 * - `GET /v1/environments/{env}/work/poll` (`block_ms`, `reclaim_older_than_ms`): the next
 *   queued item with its `secret`, or 204 when none arrived within `block_ms`;
 * - `POST .../work/{id}/ack`, `.../heartbeat` (`desired_ttl_seconds`,
 *   `expected_last_heartbeat`), `.../stop`; `GET .../work/{id}`;
 * - `GET /v1/sessions/{id}/events` (cursor pages), `GET /v1/sessions/{id}/events/stream`
 *   (server-sent events), `POST /v1/sessions/{id}/events` (tool results).
 *
 * A session is played by a scripted agent (`playSession`): it calls the worker's tools one
 * step at a time and reads the results the worker posts. Reached through
 * `MemoryApiServer.controlPlane`, on the same base URL as the memory endpoints.
 */
export class ControlPlaneEmulator {
  /** The lease TTL heartbeats are answered with, in seconds; a test may change it at any time. */
  leaseTtlSeconds: number;
  /** Every control-plane request, oldest first. */
  readonly requests: ControlRequest[] = [];

  readonly #options: ControlPlaneOptions;
  readonly #newId: (prefix: string) => string;
  readonly #now: () => string;
  readonly #queue: WorkQueue;
  readonly #sessions = new Map<string, ScriptedSession>();
  readonly #faults = new Map<ControlRouteName, Fault[]>();
  readonly #listeners = new Set<(event: ControlPlaneEvent) => void>();
  readonly #inFlight = new Set<AbortController>();

  constructor(options: ControlPlaneOptions, env: { newId: (prefix: string) => string; now: () => string }) {
    this.#options = options;
    this.leaseTtlSeconds = options.leaseTtlSeconds ?? 300;
    this.#newId = env.newId;
    this.#now = env.now;
    this.#queue = new WorkQueue(env.now, () => this.leaseTtlSeconds);
  }

  /** Queues a session work item; a poll of its environment hands it out. Returns it as queued. */
  enqueue(options: EnqueueWorkOptions): WorkWire {
    const secret =
      options.secret !== undefined ? options.secret
      : options.sessionsToken !== undefined ? Buffer.from(JSON.stringify({ sessions_token: options.sessionsToken })).toString('base64url')
      : null;
    const record: WorkRecord = {
      id: options.id ?? this.#newId('work'),
      environmentId: options.environmentId ?? 'env_emulated',
      sessionId: options.sessionId,
      secret,
      state: 'queued',
      metadata: { ...options.metadata },
      createdAt: this.#now(),
      polledAtMs: undefined,
      acknowledgedAt: null,
      startedAt: null,
      stopRequestedAt: null,
      stoppedAt: null,
      heartbeats: [],
      lease: undefined,
      leaseRevoked: false,
    };
    this.#queue.add(record);
    return this.#queue.wire(record, true);
  }

  /**
   * Plays session `sessionId` with a scripted agent. Its turn begins when a worker first lists
   * or streams the session's events. Seed the session too (`MemoryApiServer.seedSession`) when
   * the worker fetches it, as `mountSessionMemory` does.
   */
  playSession(sessionId: string, script: ScriptedAgentScript, options: PlaySessionOptions = {}): ScriptedSession {
    if (this.#sessions.has(sessionId)) throw new Error(`session ${sessionId} is already being played`);
    const session = new ScriptedSession(sessionId, script, options, {
      newId: this.#newId,
      now: this.#now,
      announce: (event: ControlPlaneEvent) => this.#announce(event),
    });
    this.#sessions.set(sessionId, session);
    return session;
  }

  /** The played session, if any. */
  session(sessionId: string): ScriptedSession | undefined {
    return this.#sessions.get(sessionId);
  }

  /** Resolves once the agent of `sessionId` is done (idle, terminated or failed). */
  sessionEnded(sessionId: string): Promise<void> {
    const session = this.#sessions.get(sessionId);
    if (!session) throw new Error(`session ${sessionId} is not being played`);
    return session.ended;
  }

  /** The item as the API would return it now (no secret). */
  work(workId: string): WorkWire {
    return this.#queue.wire(this.#record(workId));
  }

  /** The heartbeats an item received, with their answers, oldest first. */
  heartbeats(workId: string): readonly WorkHeartbeatWire[] {
    return this.#record(workId).heartbeats;
  }

  /** Asks the worker to stop: later heartbeats answer `state: 'stopping'`. */
  requestStop(workId: string): void {
    this.#queue.requestStop(this.#record(workId));
  }

  /** The item's lease is gone (another worker took it, say): the next heartbeat is not extended. */
  expireLease(workId: string): void {
    this.#record(workId).leaseRevoked = true;
  }

  /** The next `times` requests of `route` fail with `fault` (an HTTP error status, or `'disconnect'`). */
  failNext(route: ControlRouteName, fault: Exclude<Fault, 'hang'>, times = 1): void {
    if ((fault as Fault) === 'hang') throw new RangeError("the control-plane routes take an HTTP error status or 'disconnect', not 'hang'");
    if (typeof fault === 'number' && !(Number.isInteger(fault) && fault >= 400 && fault <= 599)) {
      throw new RangeError(`a fault status must be an HTTP error status (400-599), not ${fault}`);
    }
    const queue = this.#faults.get(route) ?? [];
    for (let i = 0; i < times; i++) queue.push(fault);
    this.#faults.set(route, queue);
  }

  /** Requests received for `route`, or for every control-plane route. */
  requestCount(route?: ControlRouteName): number {
    return route === undefined ? this.requests.length : this.requests.filter((r) => r.route === route).length;
  }

  /** Calls `listener` with each control-plane event from now on; returns the unsubscribe. */
  on(listener: (event: ControlPlaneEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Ends the event streams and the blocked polls, so that the server can close. */
  close(): void {
    for (const controller of this.#inFlight) controller.abort();
    this.#queue.wakeAll();
    for (const session of this.#sessions.values()) session.closeStreams('destroy');
  }

  /**
   * Serves the request when it is for a control-plane route and returns `true`; `false` leaves
   * it to the memory endpoints. Refusals are thrown as `ApiError`.
   */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL, body: { text: string; tooLarge: boolean }): Promise<boolean> {
    const match = matchControlRoute(req.method, url.pathname);
    if (!match) return false;
    const record: ControlRequest = { ...match, method: req.method ?? '' };
    this.requests.push(record);
    res.once('finish', () => (record.status = res.statusCode));

    const fault = this.#faults.get(match.route)?.shift();
    if (fault === 'disconnect') {
      req.socket.destroy();
      return true;
    }
    if (typeof fault === 'number') throw new ApiError(fault, fault >= 500 ? 'api_error' : 'invalid_request_error', `injected fault: HTTP ${fault}`);
    this.#checkHeaders(req, match);

    switch (match.route) {
      case 'work.poll':
        return this.#poll(res, match.environmentId!, url.searchParams);
      case 'work.retrieve':
        sendJson(res, 200, this.#queue.wire(this.#queue.get(match.environmentId!, match.workId!)));
        return true;
      case 'work.ack': {
        const item = this.#queue.get(match.environmentId!, match.workId!);
        this.#queue.ack(item);
        this.#announce({ kind: 'acked', workId: item.id });
        sendJson(res, 200, this.#queue.wire(item));
        return true;
      }
      case 'work.heartbeat': {
        const item = this.#queue.get(match.environmentId!, match.workId!);
        const answer = this.#queue.heartbeat(
          item,
          numberParam(url.searchParams, 'desired_ttl_seconds'),
          url.searchParams.get('expected_last_heartbeat') ?? undefined,
        );
        this.#announce({ kind: 'heartbeat', workId: item.id, answer });
        sendJson(res, 200, answer);
        return true;
      }
      case 'work.stop': {
        const item = this.#queue.get(match.environmentId!, match.workId!);
        if (body.text.trim() !== '') parseJsonObject(body.text, body.tooLarge);
        this.#queue.stop(item);
        this.#announce({ kind: 'stopped', workId: item.id });
        sendJson(res, 200, this.#queue.wire(item));
        return true;
      }
      case 'events.list': {
        const session = this.#sessions.get(match.sessionId!);
        session?.attach();
        sendJson(res, 200, listEvents(session, url.searchParams));
        return true;
      }
      case 'events.stream': {
        const session = this.#sessions.get(match.sessionId!);
        if (!session) throw notFound(`session ${match.sessionId} not found`);
        session.stream(res);
        this.#announce({ kind: 'stream_attached', sessionId: match.sessionId! });
        session.attach();
        return true;
      }
      case 'events.send': {
        const session = this.#sessions.get(match.sessionId!);
        if (!session) throw notFound(`session ${match.sessionId} not found`);
        const events = parseJsonObject(body.text, body.tooLarge)['events'];
        if (!Array.isArray(events) || events.length === 0 || !events.every(isObject)) {
          throw invalidRequest('events must be a non-empty array of event objects');
        }
        const answer: SentSessionEventsWire = { data: session.post(events) };
        sendJson(res, 200, answer);
        return true;
      }
    }
  }

  async #poll(res: ServerResponse, environmentId: string, query: URLSearchParams): Promise<boolean> {
    const blockMs = numberParam(query, 'block_ms');
    if (blockMs !== undefined && !(Number.isInteger(blockMs) && blockMs >= 1 && blockMs <= 999)) {
      throw invalidRequest('block_ms must be an integer from 1 to 999');
    }
    // A client that hangs up, or the emulator closing, ends the wait.
    const controller = new AbortController();
    this.#inFlight.add(controller);
    const hangUp = () => controller.abort();
    res.once('close', hangUp);
    try {
      const item = await this.#queue.poll(environmentId, blockMs ?? 0, numberParam(query, 'reclaim_older_than_ms'), controller.signal);
      if (!item) {
        res.writeHead(204).end();
        return true;
      }
      const work = this.#queue.wire(item, true);
      this.#announce({ kind: 'claimed', work });
      sendJson(res, 200, work);
      return true;
    } finally {
      res.off('close', hangUp);
      this.#inFlight.delete(controller);
    }
  }

  #checkHeaders(req: IncomingMessage, match: MatchedControlRoute): void {
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const key = header(req, 'x-api-key') || bearer;
    if (!key) throw new ApiError(401, 'authentication_error', 'no credential');
    const environmentKey = this.#options.environmentKey;
    if (environmentKey !== undefined && key !== environmentKey && !this.#isItemToken(key, match)) {
      throw new ApiError(401, 'authentication_error', 'invalid credential for this endpoint');
    }
    if (header(req, 'anthropic-version') === undefined) throw invalidRequest('anthropic-version: header is required');
    const betas = (header(req, 'anthropic-beta') ?? '').split(',').map((beta) => beta.trim());
    if (!betas.includes(MANAGED_AGENTS_BETA)) throw invalidRequest(`this endpoint needs anthropic-beta: ${MANAGED_AGENTS_BETA}`);
  }

  /** Whether `key` is the sessions token of a work item this per-item call is about. */
  #isItemToken(key: string, match: MatchedControlRoute): boolean {
    // The service takes an item's sessions token for its own lease calls (heartbeat and the
    // force-stop a worker posts on exit) and for its session's events.
    if (match.route !== 'work.heartbeat' && match.route !== 'work.stop' && !match.route.startsWith('events.')) return false;
    for (const item of this.#queue.items.values()) {
      const about = match.workId !== undefined ? item.id === match.workId : item.sessionId === match.sessionId;
      if (about && sessionsTokenOf(item.secret) === key) return true;
    }
    return false;
  }

  #record(workId: string): WorkRecord {
    const item = this.#queue.items.get(workId);
    if (!item) throw new Error(`no work item ${workId}`);
    return item;
  }

  #announce(event: ControlPlaneEvent): void {
    for (const listener of this.#listeners) listener(event);
  }
}

/** The route of a control-plane request, or `undefined`. */
function matchControlRoute(method: string | undefined, pathname: string): MatchedControlRoute | undefined {
  const work = WORK_PATH.exec(pathname);
  if (work) {
    const environmentId = decode(work[1]);
    const workId = decode(work[2]);
    if (environmentId === undefined || workId === undefined) return undefined;
    const verb = work[3];
    if (workId === 'poll' && verb === undefined) return method === 'GET' ? { route: 'work.poll', environmentId } : undefined;
    if (verb === undefined) return method === 'GET' ? { route: 'work.retrieve', environmentId, workId } : undefined;
    if (method !== 'POST') return undefined;
    return { route: `work.${verb as 'ack' | 'heartbeat' | 'stop'}`, environmentId, workId };
  }
  const events = EVENTS_PATH.exec(pathname);
  if (events) {
    const sessionId = decode(events[1]);
    if (sessionId === undefined) return undefined;
    if (events[2] !== undefined) return method === 'GET' ? { route: 'events.stream', sessionId } : undefined;
    if (method === 'GET') return { route: 'events.list', sessionId };
    if (method === 'POST') return { route: 'events.send', sessionId };
  }
  return undefined;
}

/** A cursor page of the session's events: `page` is the offset, `limit` 1..1000 (default 20). */
function listEvents(session: ScriptedSession | undefined, query: URLSearchParams): SessionEventsPageWire {
  const limit = numberParam(query, 'limit') ?? 20;
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= 1000)) throw invalidRequest('limit must be an integer from 1 to 1000');
  const order = query.get('order') ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw invalidRequest('order must be asc or desc');
  const types = [...query.getAll('types'), ...query.getAll('types[]')].flatMap((t) => t.split(',')).filter(Boolean);
  let events = [...(session?.events ?? [])];
  if (types.length > 0) events = events.filter((event) => types.includes(event.type));
  if (order === 'desc') events.reverse();
  const page = query.get('page');
  const start = page === null ? 0 : Number(page);
  if (!(Number.isInteger(start) && start >= 0)) throw invalidRequest('page is not a cursor this endpoint gave');
  const data = events.slice(start, start + limit);
  return { data, next_page: start + limit < events.length ? String(start + limit) : null };
}

function sessionsTokenOf(secret: string | null): string | undefined {
  if (secret === null) return undefined;
  try {
    const token = (JSON.parse(Buffer.from(secret, 'base64url').toString('utf8')) as { sessions_token?: unknown }).sessions_token;
    return typeof token === 'string' ? token : undefined;
  } catch {
    return undefined;
  }
}

function numberParam(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw invalidRequest(`${name} must be a number`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function decode(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}
