import { LIST_PAGE_SIZE, LIST_PAGE_SIZE_WITH_CONTENT } from '@memory-mounter/core';
import { API_ACTOR, type MemoryRecord, type MemoryStore, type VersionQuery } from '../model/memory-store.js';
import type { VersionRecord } from '../model/memory-versions.js';
import { invalidRequest } from './api-error.js';
import type { RouteName } from './routes.js';
import type {
  DeletedMemoryWire,
  MemoryListPageWire,
  MemoryVersionListPageWire,
  MemoryVersionWire,
  MemoryView,
  MemoryWire,
} from './wire.js';

/**
 * What a handler gets: the store (known to the server, or made on first use with
 * `unknownStores: 'create'`), the query, the parsed JSON body of a
 * POST. A handler only maps the wire to the model and back: the rules live in `MemoryStore`,
 * whose refusals the server turns into HTTP errors (`apiErrorFor`).
 */
export interface RouteRequest {
  store: MemoryStore;
  /** Always set for retrieve, update and delete (the route matched a memory id). */
  memoryId: string | undefined;
  /** Always set for retrieve_version and redact_version. */
  versionId: string | undefined;
  query: URLSearchParams;
  body: Record<string, unknown>;
}

/** Each route's success response (always 200). Refusals are thrown as ApiError. */
export const handlers: Record<RouteName, (req: RouteRequest) => unknown> = {
  list: listMemories,
  retrieve: retrieveMemory,
  create: createMemory,
  update: updateMemory,
  delete: deleteMemory,
  list_versions: listVersions,
  retrieve_version: retrieveVersion,
  redact_version: redactVersion,
};

/** The routes whose POST carries a JSON body; redact sends none. */
export const ROUTES_WITH_BODY: readonly RouteName[] = ['create', 'update'];

// The service's page size when `limit` is omitted; `view=full` caps any limit at 20.
const DEFAULT_LIST_LIMIT = 20;

function listMemories({ store, query }: RouteRequest): MemoryListPageWire {
  const view = viewParam(query, 'basic');
  const limit = pageLimit(query, view);
  const depth = intParam(query, 'depth', 0, Number.MAX_SAFE_INTEGER) ?? 0;
  const pathPrefix = query.get('path_prefix');
  const cursor = query.get('page');
  const page = store.list({ ...(pathPrefix !== null && { pathPrefix }), depth, limit, ...(cursor !== null && { page: cursor }) });
  return {
    data: page.entries.map((entry) =>
      entry.kind === 'memory' ? toWire(store, entry.memory, view) : { type: 'memory_prefix', path: entry.path },
    ),
    next_page: page.nextPage,
  };
}

function retrieveMemory({ store, memoryId, query }: RouteRequest): MemoryWire {
  return toWire(store, store.get(memoryId!), viewParam(query, 'full'));
}

function createMemory({ store, query, body }: RouteRequest): MemoryWire {
  const view = viewParam(query, 'basic');
  onlyFields(body, ['path', 'content']);
  const path = stringField(body, 'path');
  if (path === undefined) throw invalidRequest('path is required');
  if (!('content' in body)) throw invalidRequest('content is required');
  // The SDK types `content` as nullable; null is taken as the empty memory.
  const content = stringField(body, 'content') ?? '';
  return toWire(store, store.create(path, content, API_ACTOR), view);
}

function updateMemory({ store, memoryId, query, body }: RouteRequest): MemoryWire {
  const view = viewParam(query, 'basic');
  onlyFields(body, ['path', 'content', 'precondition']);
  const updated = store.update(memoryId!, {
    content: stringField(body, 'content'),
    path: stringField(body, 'path'),
    expectedSha256: preconditionSha(body.precondition),
  }, API_ACTOR);
  return toWire(store, updated, view);
}

function deleteMemory({ store, memoryId, query }: RouteRequest): DeletedMemoryWire {
  const expected = query.get('expected_content_sha256') ?? undefined;
  const deleted = store.delete(memoryId!, expected, API_ACTOR);
  return { type: 'memory_deleted', id: deleted.id };
}

// The author filters of the version listing: refused rather than ignored, so a test that relies
// on one finds out the emulator does not keep authors apart.
const UNEMULATED_VERSION_FILTERS = ['api_key_id', 'session_id', 'service_account_id'];

function listVersions({ store, query }: RouteRequest): MemoryVersionListPageWire {
  const view = viewParam(query, 'basic');
  const limit = pageLimit(query, view);
  for (const name of UNEMULATED_VERSION_FILTERS) {
    if (query.has(name)) throw invalidRequest(`the emulator does not filter versions by ${name}`);
  }
  const versionQuery: VersionQuery = {};
  const gte = query.get('created_at[gte]');
  const lte = query.get('created_at[lte]');
  const memoryId = query.get('memory_id');
  const operation = query.get('operation');
  if (gte !== null) versionQuery.createdAtGte = gte;
  if (lte !== null) versionQuery.createdAtLte = lte;
  if (memoryId !== null) versionQuery.memoryId = memoryId;
  if (operation !== null) versionQuery.operation = operation;
  const page = store.listVersions(versionQuery, query.get('page') ?? undefined, limit);
  return { data: page.versions.map((version) => toVersionWire(store, version, view)), next_page: page.nextPage };
}

function retrieveVersion({ store, versionId, query }: RouteRequest): MemoryVersionWire {
  return toVersionWire(store, store.version(versionId!), viewParam(query, 'full'));
}

function redactVersion({ store, versionId }: RouteRequest): MemoryVersionWire {
  return toVersionWire(store, store.redactVersion(versionId!, API_ACTOR), 'basic');
}

/** A VersionRecord holds the wire fields already; the store id and the view are added here. */
function toVersionWire(store: MemoryStore, version: VersionRecord, view: MemoryView): MemoryVersionWire {
  return {
    type: 'memory_version',
    memory_store_id: store.storeId,
    ...version,
    content: view === 'full' ? version.content : null,
  };
}

function toWire(store: MemoryStore, memory: MemoryRecord, view: MemoryView): MemoryWire {
  return {
    type: 'memory',
    id: memory.id,
    memory_store_id: store.storeId,
    path: memory.path,
    content: view === 'full' ? memory.content : null,
    content_sha256: memory.content_sha256,
    content_size_bytes: memory.content_size_bytes,
    memory_version_id: memory.memory_version_id,
    created_at: memory.created_at,
    updated_at: memory.updated_at,
  };
}

/** A listing's page size: `limit` (1 to 100, default 20), at most 20 in the full view. */
function pageLimit(query: URLSearchParams, view: MemoryView): number {
  const requested = intParam(query, 'limit', 1, LIST_PAGE_SIZE) ?? DEFAULT_LIST_LIMIT;
  return view === 'full' ? Math.min(requested, LIST_PAGE_SIZE_WITH_CONTENT) : requested;
}

function viewParam(query: URLSearchParams, fallback: MemoryView): MemoryView {
  const view = query.get('view');
  if (view === null) return fallback;
  if (view === 'basic' || view === 'full') return view;
  throw invalidRequest(`view must be basic or full, not ${JSON.stringify(view)}`);
}

function intParam(query: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw invalidRequest(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

/** The service refuses unknown body fields, so a misspelt one is caught instead of ignored. */
function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(body).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) throw invalidRequest(`unknown field(s) in request body: ${unknown.join(', ')}`);
}

/** A string field; absent and `null` both mean "not given". */
function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidRequest(`${name} must be a string`);
  return value;
}

function preconditionSha(precondition: unknown): string | undefined {
  if (precondition === undefined || precondition === null) return undefined;
  const { type, content_sha256: sha } =
    typeof precondition === 'object' ? (precondition as { type?: unknown; content_sha256?: unknown }) : {};
  if (type !== 'content_sha256' || typeof sha !== 'string') {
    throw invalidRequest('precondition must be { type: "content_sha256", content_sha256 }');
  }
  return sha;
}
