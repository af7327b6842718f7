/** The memory and memory-version endpoints the SDK calls, by the names tests use for counters and faults. */
export type RouteName =
  | 'list'
  | 'retrieve'
  | 'create'
  | 'update'
  | 'delete'
  | 'list_versions'
  | 'retrieve_version'
  | 'redact_version';

export const ROUTE_NAMES: readonly RouteName[] = [
  'list',
  'retrieve',
  'create',
  'update',
  'delete',
  'list_versions',
  'retrieve_version',
  'redact_version',
];

export interface MatchedRoute {
  route: RouteName;
  storeId: string;
  /** Set for the routes on one memory. */
  memoryId?: string;
  /** Set for the routes on one memory version. */
  versionId?: string;
}

// /v1/memory_stores/{memory_store_id}/memories[/{memory_id}], ids percent-encoded by the SDK.
const MEMORIES_PATH = /^\/v1\/memory_stores\/([^/]+)\/memories(?:\/([^/]+))?\/?$/;
// /v1/memory_stores/{memory_store_id}/memory_versions[/{memory_version_id}[/redact]]
const VERSIONS_PATH = /^\/v1\/memory_stores\/([^/]+)\/memory_versions(?:\/([^/]+)(\/redact)?)?\/?$/;

/** The route a request is for, or `undefined` when it is for none of them. */
export function matchRoute(method: string | undefined, pathname: string): MatchedRoute | undefined {
  return matchMemoryRoute(method, pathname) ?? matchVersionRoute(method, pathname);
}

function matchMemoryRoute(method: string | undefined, pathname: string): MatchedRoute | undefined {
  const match = MEMORIES_PATH.exec(pathname);
  if (!match) return undefined;
  const storeId = decodeSegment(match[1]);
  const memoryId = match[2] === undefined ? undefined : decodeSegment(match[2]);
  if (storeId === undefined || (match[2] !== undefined && memoryId === undefined)) return undefined;

  if (memoryId === undefined) {
    if (method === 'GET') return { route: 'list', storeId };
    if (method === 'POST') return { route: 'create', storeId };
    return undefined;
  }
  if (method === 'GET') return { route: 'retrieve', storeId, memoryId };
  if (method === 'POST') return { route: 'update', storeId, memoryId };
  if (method === 'DELETE') return { route: 'delete', storeId, memoryId };
  return undefined;
}

function matchVersionRoute(method: string | undefined, pathname: string): MatchedRoute | undefined {
  const match = VERSIONS_PATH.exec(pathname);
  if (!match) return undefined;
  const storeId = decodeSegment(match[1]);
  const versionId = match[2] === undefined ? undefined : decodeSegment(match[2]);
  if (storeId === undefined || (match[2] !== undefined && versionId === undefined)) return undefined;

  if (versionId === undefined) return method === 'GET' ? { route: 'list_versions', storeId } : undefined;
  if (match[3] !== undefined) return method === 'POST' ? { route: 'redact_version', storeId, versionId } : undefined;
  return method === 'GET' ? { route: 'retrieve_version', storeId, versionId } : undefined;
}

function decodeSegment(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined; // malformed %-escape
  }
}
