/** The five memory endpoints the SDK calls, by the names tests use for counters and faults. */
export type RouteName = 'list' | 'retrieve' | 'create' | 'update' | 'delete';

export const ROUTE_NAMES: readonly RouteName[] = ['list', 'retrieve', 'create', 'update', 'delete'];

export interface MatchedRoute {
  route: RouteName;
  storeId: string;
  /** Set for the routes on one memory. */
  memoryId?: string;
}

// /v1/memory_stores/{memory_store_id}/memories[/{memory_id}], ids percent-encoded by the SDK.
const MEMORIES_PATH = /^\/v1\/memory_stores\/([^/]+)\/memories(?:\/([^/]+))?\/?$/;

/** The route a request is for, or `undefined` when it is for none of them. */
export function matchRoute(method: string | undefined, pathname: string): MatchedRoute | undefined {
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

function decodeSegment(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined; // malformed %-escape
  }
}
