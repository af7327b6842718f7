import { StoreError, type StoreClient, type StoreFolderEntry, type StoreListFolderOptions, type StoreListVersionsOptions, type StoreMemory, type StoreMemoryVersion } from '@memory-mounter/core';
import type { InMemoryStoreClient, StoreOp } from '@memory-mounter/testing';
import { LOST_ANSWER_MESSAGE, OUTAGE_MESSAGE, STRICT_RETRY_MESSAGE, type Interception } from './fault-ledger.js';
import { feedError, reshapeFeed, reshapeFolder, type FeedFault, type FolderFault } from './feed-faults.js';

/**
 * The StoreClient the engine is given in the reliability tests: the in-memory fake, with every
 * request shown to an observer first. The observer checks the request against the invariants
 * while the store is still as it was (so a delete can be judged against the file it replaces),
 * and may let the agent act while the request is "in flight". The observer may also intercept a
 * request: fail it as part of an outage, or stall it (a call that never answers and ignores its
 * abort signal, before or after the store applied it).
 *
 * In a case with the change feed on, it also serves `listVersions` (the fake's real versions)
 * and, with folder listings on, `listFolder`; each read may be reshaped or failed by a queued
 * feed or folder fault (feed-faults.ts). Off, the methods are absent, as from a client that
 * has none: the engine then lists in full.
 */

/** One request as the engine sent it, resolved against the store before it is applied. */
export interface OutgoingRequest {
  op: StoreOp;
  storeId: string;
  memoryId?: string;
  /** The memory's path: given for a create, looked up for get/update/delete. */
  path?: string;
  /** Content sent by a create or update. */
  content?: string;
  /** The precondition sent with an update or a delete. */
  expectedSha?: string;
  /** The path an update moves the memory to (a rename), when it gives one. */
  newPath?: string;
  /**
   * Every path the memory has had (its versions'), for an update or a delete: where its file may
   * have been on disk, and where an update by id meant for the path the engine last knew goes
   * when the other writer has since renamed the memory.
   */
  formerPaths?: string[];
  /** What the memory held before the request (get/update/delete of an existing memory). */
  previousContent?: string;
}

export interface RequestObserver {
  /** Called before the fake sees the request; the request waits for it. */
  beforeRequest(request: OutgoingRequest): Promise<void> | void;
  /** Called when the fake failed the request (or an outage did). */
  afterFailure(request: OutgoingRequest, error: unknown): void;
  /** Asked after `beforeRequest`: a fault to play instead of (or after) the fake's answer. */
  intercept?(request: OutgoingRequest): Interception | undefined;
  /** Called once the store has answered a feed read, before the engine is given the answer. */
  answered?(request: OutgoingRequest): void;
  /** Asked once per feed read: a fault to play on it. */
  feedFault?(request: OutgoingRequest): FeedFault | undefined;
  /** Asked once per folder listing walk (each `listFolder` call): a fault to play on it. */
  folderFault?(request: OutgoingRequest): FolderFault | undefined;
  /**
   * Asked once per full listing (`list`): an entry to leave out of it while the other writer
   * acts (a paged walk whose cursor an insertion shifted). `act` runs once the store has been
   * read, before the engine is given the answer.
   */
  listingSkip?(request: OutgoingRequest): { index: number; act: () => void } | undefined;
  /** A write whose answer was lost came again (the engine's retry): `refused` when the strict service refused it. */
  retriedAfterLostAnswer?(request: OutgoingRequest, refused: boolean): void;
  /** The service's clock (ms), for a feed read that lags. */
  serverNow?(): number;
  /**
   * Paths a memory had in versions since redacted: the service forgets them, the model must
   * not (a flush still sends an edit made at such a path to the memory where it is now).
   */
  redactedPaths?(memoryId: string): readonly string[];
}

/** Which optional StoreClient methods the client offers. */
export interface ClientCapabilities {
  feed: boolean;
  folders: boolean;
}

/** A call that never answers: its promise never settles, whatever its signal does. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

export class ObservedStoreClient implements StoreClient {
  /** Memories whose last write's answer was lost: the next write of each meets a strict service. */
  readonly #lostAnswerOf = new Set<string>();

  constructor(
    private readonly fake: InMemoryStoreClient,
    private readonly observer: RequestObserver,
    private readonly capabilities: ClientCapabilities = { feed: false, folders: false },
  ) {}

  /** Present only in a case with the change feed on. */
  get listVersions(): ((storeId: string, opts?: StoreListVersionsOptions) => AsyncIterable<StoreMemoryVersion>) | undefined {
    return this.capabilities.feed ? (storeId, opts) => this.readVersions(storeId, opts) : undefined;
  }

  /** Present only in a case with folder listings on. */
  get listFolder(): ((storeId: string, opts?: StoreListFolderOptions) => AsyncIterable<StoreFolderEntry>) | undefined {
    return this.capabilities.folders ? (storeId, opts) => this.readFolder(storeId, opts) : undefined;
  }

  private async *readVersions(storeId: string, opts: StoreListVersionsOptions = {}): AsyncIterable<StoreMemoryVersion> {
    const request: OutgoingRequest = { op: 'listVersions', storeId };
    const fault = await this.opening(request);
    const feedFault = this.observer.feedFault?.(request);
    try {
      if (feedFault?.kind === 'fail') {
        const { failure } = feedFault;
        if (failure === 'stall') await never();
        else if (failure !== 'unavailable_midway') throw feedError(failure);
      }
      const versions: StoreMemoryVersion[] = [];
      for await (const version of this.fake.listVersions(storeId, opts)) versions.push(version);
      this.observer.answered?.(request);
      let answer = versions;
      if (feedFault?.kind === 'shape') answer = reshapeFeed(versions, feedFault.shape, feedFault.seed, this.observer.serverNow?.() ?? Date.now()).versions;
      let first = true;
      for (const version of answer) {
        yield version;
        // A later page failed, or never came.
        if (first && feedFault?.kind === 'fail') throw feedError('unavailable_midway');
        if (first && fault?.kind === 'stall') await never();
        first = false;
      }
      if (feedFault?.kind === 'fail') throw feedError('unavailable_midway');
      if (fault?.kind === 'stall') await never();
    } catch (err) {
      this.observer.afterFailure(request, err);
      throw err;
    }
  }

  private async *readFolder(storeId: string, opts: StoreListFolderOptions = {}): AsyncIterable<StoreFolderEntry> {
    // On the wire a folder listing is the memory listing with depth=1: it logs, fails and stalls as `list`.
    const request: OutgoingRequest = { op: 'list', storeId };
    const fault = await this.opening(request);
    const folderFault = this.observer.folderFault?.(request);
    try {
      const entries: StoreFolderEntry[] = [];
      for await (const entry of this.fake.listFolder(storeId, opts)) entries.push(entry);
      const answer = folderFault && folderFault !== 'unavailable_midway' ? reshapeFolder(entries, folderFault, opts.pathPrefix ?? '/') : entries;
      let first = true;
      for (const entry of answer) {
        yield entry;
        if (first && folderFault === 'unavailable_midway') throw new StoreError('unavailable', 'folder listing fault (test): service unavailable', { status: 503 });
        if (first && fault?.kind === 'stall') await never();
        first = false;
      }
      if (fault?.kind === 'stall') await never();
    } catch (err) {
      this.observer.afterFailure(request, err);
      throw err;
    }
  }

  async *list(
    storeId: string,
    opts: { withContent?: boolean; pathPrefix?: string; signal?: AbortSignal } = {},
  ): AsyncIterable<StoreMemory> {
    const request: OutgoingRequest = { op: 'list', storeId };
    const fault = await this.opening(request);
    const skip = opts.pathPrefix === undefined || opts.pathPrefix === '/' ? this.observer.listingSkip?.(request) : undefined;
    try {
      let first = true;
      let memories: AsyncIterable<StoreMemory> | StoreMemory[] = this.fake.list(storeId, opts);
      if (skip) {
        // The walk read the store, the other writer acted, and one entry fell between two pages.
        const all: StoreMemory[] = [];
        for await (const memory of memories) all.push(memory);
        skip.act();
        if (all.length > 0) all.splice(skip.index % all.length, 1);
        memories = all;
      }
      for await (const memory of memories) {
        yield memory;
        // Stalled after the first memory: the rest of the listing never comes.
        if (first && fault?.kind === 'stall') await never();
        first = false;
      }
      if (fault?.kind === 'stall') await never();
    } catch (err) {
      this.observer.afterFailure(request, err);
      throw err;
    }
  }

  get(storeId: string, memoryId: string, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    return this.send(this.resolve({ op: 'get', storeId, memoryId }), () => this.fake.get(storeId, memoryId, opts));
  }

  create(storeId: string, input: { path: string; content: string }, opts: { signal?: AbortSignal } = {}): Promise<StoreMemory> {
    const request: OutgoingRequest = { op: 'create', storeId, path: input.path, content: input.content };
    return this.send(request, () => this.fake.create(storeId, input, opts));
  }

  update(
    storeId: string,
    memoryId: string,
    input: { content?: string; path?: string; expected_content_sha256?: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoreMemory> {
    const request = this.resolve({
      op: 'update',
      storeId,
      memoryId,
      content: input.content,
      expectedSha: input.expected_content_sha256,
      ...(input.path !== undefined && { newPath: input.path }),
    });
    return this.send(request, () => this.fake.update(storeId, memoryId, input, opts));
  }

  delete(storeId: string, memoryId: string, opts: { expected_content_sha256?: string; signal?: AbortSignal } = {}): Promise<void> {
    const request = this.resolve({ op: 'delete', storeId, memoryId, expectedSha: opts.expected_content_sha256 });
    return this.send(request, () => this.fake.delete(storeId, memoryId, opts));
  }

  /**
   * The start of a listing: observed, then the fault it meets, if any. An outage fails it and a
   * stall `before` never answers here; any other fault is the caller's to play as it reads.
   */
  private async opening(request: OutgoingRequest): Promise<Interception | undefined> {
    await this.observer.beforeRequest(request);
    const fault = this.observer.intercept?.(request);
    if (fault?.kind === 'outage') throw this.outage(request);
    if (fault?.kind === 'stall' && fault.at === 'before') await never();
    return fault;
  }

  private outage(request: OutgoingRequest): StoreError {
    const error = new StoreError('unavailable', `${OUTAGE_MESSAGE} (${request.op})`, { status: 503 });
    this.observer.afterFailure(request, error);
    return error;
  }

  /** Fills in the path and current content of the memory a request names. */
  private resolve(request: OutgoingRequest): OutgoingRequest {
    const memory = this.fake.memories(request.storeId).find((m) => m.id === request.memoryId);
    if (memory) {
      request.path = memory.path;
      request.previousContent = memory.content ?? undefined;
      if (request.op === 'update' || request.op === 'delete') {
        const paths = this.fake.versions(request.storeId).flatMap((v) => (v.memory_id === memory.id && v.path !== null ? [v.path] : []));
        paths.push(...(this.observer.redactedPaths?.(memory.id) ?? []));
        request.formerPaths = [...new Set(paths)];
      }
    }
    return request;
  }

  private async send<T>(request: OutgoingRequest, call: () => Promise<T>): Promise<T> {
    await this.observer.beforeRequest(request);
    const fault = this.observer.intercept?.(request);
    if (fault?.kind === 'outage') throw this.outage(request);
    const id = request.memoryId;
    if (id !== undefined && this.#lostAnswerOf.delete(id)) {
      // The retry of a write whose answer was lost: the real service checks the precondition
      // against what the memory holds now (our own write), where the fake would let an update
      // that changes nothing through. A delete's retry meets not_found from the fake itself.
      const now = this.fake.memories(request.storeId).find((m) => m.id === id)?.content_sha256;
      const refused = request.op === 'update' && request.expectedSha !== undefined && now !== undefined && now !== request.expectedSha;
      this.observer.retriedAfterLostAnswer?.(request, refused);
      if (refused) {
        const error = new StoreError('precondition_failed', STRICT_RETRY_MESSAGE, { status: 409 });
        this.observer.afterFailure(request, error);
        throw error;
      }
    }
    if (fault?.kind === 'lose_answer') {
      try {
        await call();
      } catch (err) {
        // The store refused the write itself: that answer is the one the engine gets.
        this.observer.afterFailure(request, err);
        throw err;
      }
      if (id !== undefined) this.#lostAnswerOf.add(id);
      const error = new StoreError('unavailable', LOST_ANSWER_MESSAGE, { status: 503 });
      this.observer.afterFailure(request, error);
      throw error;
    }
    if (fault?.kind === 'stall') {
      // After: the store applies the write (or fails it), and the answer is lost.
      if (fault.at === 'after') await call().catch(() => undefined);
      return never();
    }
    try {
      return await call();
    } catch (err) {
      this.observer.afterFailure(request, err);
      throw err;
    }
  }
}
