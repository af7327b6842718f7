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
  /**
   * When the memory last changed, RFC 3339, as the service sent it. Optional: a client that
   * leaves it out still works, but then a full listing cannot tell the engine where the change
   * feed should start, and it relies on the feed's own timestamps alone.
   */
  updated_at?: string;
  /**
   * The `memver_...` id of the version that holds the memory as listed. Optional; when given,
   * the engine recognises that version in the change feed as already known.
   */
  memory_version_id?: string;
}

/** The memory-store API as the engine uses it. Every failure is a StoreError. */
export interface StoreClient {
  /** Memories only (no prefix roll-ups), every page followed. */
  list(
    storeId: string,
    opts?: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } & StoreListingOptions,
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

  /**
   * The store's change feed: every memory version the store still retains that matches `opts`,
   * every page followed. Each create, each update that changed content or path, and each delete
   * of a memory records one version; a version never changes afterwards, except by redaction.
   *
   * Optional: a client without it still works, and the engine then finds changes by full
   * listings (as it also does on any error here, and for the final sync).
   *
   * Guarantees: none about order (the API documents none; the emulator lists newest first;
   * several versions may share one `created_at`, and clocks are not promised to be monotonic),
   * so a caller de-duplicates by `id` and never infers "nothing older" from position. Versions older than
   * the service's retention period are gone without notice. A write that lands while the pages
   * are being walked may or may not be yielded. Every failure, including one on a later page,
   * is a `StoreError`; 401/403 (`unauthorized`, `status` kept) and 404 (`not_found`) say the
   * feed is not available to this caller.
   */
  listVersions?(storeId: string, opts?: StoreListVersionsOptions): AsyncIterable<StoreMemoryVersion>;

  /**
   * One level of one folder: the memories directly in `pathPrefix`, and one `prefix` entry per
   * sub-folder that holds any memory (the service's `depth=1` listing with its `memory_prefix`
   * roll-ups), every page followed. A caller fans out by listing each `prefix` entry's `path`
   * in turn, possibly in parallel.
   *
   * Optional: a client without it still works; the engine then uses `list`.
   *
   * Guarantees: none about order; each memory or sub-folder appears once per walk of the pages.
   * A folder listing is not a snapshot of the store: memories created, renamed or deleted while
   * a fan-out is under way may be seen in neither or both folders. Failures are `StoreError`s;
   * a `pathPrefix` without its trailing `/` (`/a/b`) is `rejected`.
   */
  listFolder?(storeId: string, opts?: StoreListFolderOptions): AsyncIterable<StoreFolderEntry>;
}

/** The kind of change a memory version records. */
export type StoreMemoryVersionOperation = 'created' | 'modified' | 'deleted';

/** One memory version, as much of it as the engine reads. */
export interface StoreMemoryVersion {
  /** `memver_...`; unique within the store, the key to de-duplicate by. */
  id: string;
  /** `mem_...`; still names the memory after it is deleted. */
  memory_id: string;
  /** `created`, `modified` (content, path or both), or `deleted`. */
  operation: StoreMemoryVersionOperation;
  /**
   * The memory's path (wire form) as of this version; for `deleted`, the path it was deleted
   * at. `null` if and only if the version was redacted.
   */
  path: string | null;
  /** The content's sha as of this version; `null` for `deleted` and for a redacted version. */
  content_sha256: string | null;
  /**
   * When the version was written, RFC 3339, exactly as the service sent it. Pass it back
   * unchanged as `createdAtGte`/`createdAtLte`; do not compare these strings as text.
   */
  created_at: string;
  /** When the version was redacted (RFC 3339), `null` if it was not. */
  redacted_at: string | null;
  /**
   * The content as of this version, only when asked for (`withContent`); `null` for `deleted`
   * and for a redacted version. A client may leave it out even when asked: the engine then
   * fetches the memory.
   */
  content?: string | null;
  /** Its size in bytes, when the service sent it; `null` for `deleted` and for a redacted version. */
  content_size_bytes?: number | null;
}

/** Filters of `StoreClient.listVersions`; every one given must hold. */
export interface StoreListVersionsOptions extends StoreListingOptions {
  /** Only versions written at or after this RFC 3339 instant (inclusive). */
  createdAtGte?: string;
  /** Only versions written at or before this RFC 3339 instant (inclusive). */
  createdAtLte?: string;
  /** Only versions of this memory, including its `deleted` version. */
  memoryId?: string;
  /** Only versions recording this kind of change. */
  operation?: StoreMemoryVersionOperation;
  /**
   * Each version with its `content` (the service's `view=full`, at most 20 versions a page
   * instead of 100). A client may ignore it; the engine then fetches what it pulls.
   */
  withContent?: boolean;
  /**
   * At most this many versions are yielded, and no page is read after the one holding the last
   * of them. A caller that asks for one more than it wants learns that the walk was cut short
   * from receiving that one. A client may ignore it and yield every version.
   */
  maxVersions?: number;
  /** Aborting fails the walk with `unavailable`, between pages or during one. */
  signal?: AbortSignal;
}

/** What `StoreClient.listFolder` lists. */
export interface StoreListFolderOptions extends StoreListingOptions {
  /**
   * The folder, in wire form with a trailing `/` (`/projects/foo/`); omitted or `/` is the
   * store's root.
   */
  pathPrefix?: string;
  /** Memories with their content (smaller pages). Roll-ups never carry any. */
  withContent?: boolean;
  /** Aborting fails the walk with `unavailable`, between pages or during one. */
  signal?: AbortSignal;
}

/** What every listing of a `StoreClient` may be given besides its own filters. */
export interface StoreListingOptions {
  /**
   * Called as each page is requested, once per request the walk sends, so that the engine
   * counts a pass's requests exactly (`StoreSyncReport.requests`). Optional to call: a client
   * that never does has its pages counted by how many items it yielded (100 a page, 20 with
   * content), as the service pages them.
   */
  onPage?: () => void;
}

/**
 * One row of a folder listing: a memory directly in the folder, or a sub-folder standing for
 * every memory below it. A sub-folder's `path` ends with `/` and can be passed as `pathPrefix`.
 */
export type StoreFolderEntry =
  | {
      type: 'memory';
      /** A memory directly in the folder; `content` only when asked for. */
      memory: StoreMemory;
    }
  | {
      type: 'prefix';
      /** The sub-folder, wire form, ending in `/` (`/projects/foo/`). */
      path: string;
    };
