/**
 * The memory-store API seam, wire-faithful: paths in wire form (`/a/b.md`), content as UTF-8
 * strings, integrity as lowercase hex sha256 of the content bytes.
 *
 * Every failure an implementation reports is a `StoreError` (see errors.ts); the engine decides
 * what to do by its `kind` alone.
 */
/** One memory as the API describes it. */
export interface StoreMemory {
  /** `mem_...`, stable across renames. */
  id: string;
  /** Wire form, always starts with `/`. */
  path: string;
  content_sha256: string;
  content_size_bytes?: number;
  /** Present only when asked for. */
  content?: string | null;
}

/** The memory-store API as the engine uses it. Every failure is a StoreError. */
export interface StoreClient {
  /** Memories only (no prefix roll-ups), every page followed. */
  list(
    storeId: string,
    opts?: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal },
  ): AsyncIterable<StoreMemory>;
  /** With content. */
  get(storeId: string, memoryId: string, opts?: { signal?: AbortSignal }): Promise<StoreMemory>;
  create(
    storeId: string,
    input: { path: string; content: string },
    opts?: { signal?: AbortSignal },
  ): Promise<StoreMemory>;
  update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts?: { signal?: AbortSignal },
  ): Promise<StoreMemory>;
  delete(
    storeId: string,
    memoryId: string,
    opts?: { expected_content_sha256?: string; signal?: AbortSignal },
  ): Promise<void>;
}
