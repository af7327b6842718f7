/**
 * Why the modelled service refuses a request, without any transport: `MemoryApiServer` turns a
 * refusal into the HTTP error the service sends, `InMemoryStoreClient` into the `StoreError`
 * that HTTP error maps to. One refusal type is what keeps the two fakes answering alike.
 */
export type RefusalCode = 'invalid_request' | 'not_found' | 'path_conflict' | 'precondition_failed';

export class ServiceRefusal extends Error {
  override name = 'ServiceRefusal';
  constructor(
    readonly code: RefusalCode,
    message: string,
    /** For `path_conflict`: the memory in the way (the service names it in the error body). */
    readonly conflict?: { path: string; memoryId: string },
  ) {
    super(message);
  }
}

export function invalidRequest(message: string): ServiceRefusal {
  return new ServiceRefusal('invalid_request', message);
}

export function notFound(message: string): ServiceRefusal {
  return new ServiceRefusal('not_found', message);
}

/** A create or rename onto a path that is taken, or that is an ancestor or descendant of one. */
export function pathConflict(requestedPath: string, conflictingPath: string, conflictingMemoryId: string): ServiceRefusal {
  const message =
    conflictingPath === requestedPath
      ? `a memory already exists at ${requestedPath}`
      : `${requestedPath} overlaps the memory at ${conflictingPath}`;
  return new ServiceRefusal('path_conflict', message, { path: conflictingPath, memoryId: conflictingMemoryId });
}

export function preconditionFailed(message: string): ServiceRefusal {
  return new ServiceRefusal('precondition_failed', message);
}
