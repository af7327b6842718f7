import type Anthropic from '@anthropic-ai/sdk';
import { SessionToolRunner, WorkPoller } from '@anthropic-ai/sdk/helpers/beta/environments';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaManagedAgentsSession } from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import { betaAgentToolset20260401, setupSkills, type AgentToolContext } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import {
  debugLogger,
  MemoryConfigError,
  MemoryMounter,
  MemoryMountError,
  type DeletionMode,
  type Logger,
  type MemoryMounterOptions,
  type MounterEventName,
  type StoreClient,
} from '@memory-mounter/core';
import { AnthropicStoreClient } from './anthropic-store-client.js';
import { claimedItemFrom, type HandleItemOptions } from './claimed-item.js';
import type { WorkItem } from './control-plane.js';
import { keepLease } from './lease-heartbeat.js';
import { logFinalize } from './session-lifecycle.js';
import { withMemorySync } from './with-memory-sync.js';
import { WorkItemError } from './work-item-error.js';
import { afterTeardown, finalizeOutcome, type LeaseState, type SessionEnd } from './work-item-outcome.js';
import { sessionsTokenFromSecret } from './work-secret.js';
import {
  checkWorkerOptions,
  type EnvironmentWorkerOptions,
  type EnvironmentWorkerTools,
  type WorkerEvents,
  type WorkerItem,
} from './worker-options.js';

/** The store client of the mounter built only to check the options: never called. */
const UNUSED_STORE_CLIENT: StoreClient = {
  list: () => refuse(),
  get: () => refuse(),
  create: () => refuse(),
  update: () => refuse(),
  delete: () => refuse(),
};
function refuse(): never {
  throw new Error('the options check mounter makes no store call');
}

/**
 * The mounter events a `WorkerListeners` may name; the rest of its keys are the worker's own.
 * Every one of them: an event the mounter gains fails to compile here until it is listed.
 */
const MOUNTER_EVENT_SET: Record<MounterEventName, true> = { conflict: true, pulled: true, pushed: true, deleted: true, renamed: true, refused: true, progress: true };
const MOUNTER_EVENTS = Object.keys(MOUNTER_EVENT_SET) as readonly MounterEventName[];

/**
 * A self-hosted environment worker shaped like the SDK's `EnvironmentWorker` (same options,
 * `run(signal)` and `handleItem(options)`), whose memory is memory-mounter's. Switching from the
 * SDK's is a change of import:
 *
 *   await new EnvironmentWorker({ client, environmentId, environmentKey, workdir }).run(signal);
 *
 * Per claimed item, in this order: scope a client to the item's sessions token (the environment
 * key when the secret has none); start the lease heartbeat (before any download, so a slow one
 * cannot let the lease lapse); fetch the session once; download the agent's skills (the SDK's
 * `setupSkills`); mount the session's memory stores; build the tools (default the SDK's
 * `betaAgentToolset20260401`) confined to the workdir and the stores and wrapped in the write
 * guard and the after-call reconcile (`withMemorySync`); serve the session's tool calls
 * (`SessionToolRunner`); then tear down: the skills removed, memory finalized (`completed` on a
 * clean end, `aborted` otherwise: see work-item-outcome.ts), the item force-stopped with the
 * item's credential unless its lease was lost.
 *
 * One failed item (a lost lease, a mount refused, a session that could not be fetched) is a
 * `WorkItemError`: `run` logs it and serves the next item; `handleItem` throws it. A throwing
 * tool fails only its call: the agent reads the error.
 *
 * Memory differences from the SDK's worker: stores mount under `memoryRoot` by this library's
 * rules (SPEC 4.1), the write guard refuses writes to read-only stores and to folders under the
 * memory root that are no store's, and `memorySyncIntervalMs` takes any duration > 0 (the SDK
 * refuses one under 5 s) up to an hour.
 */
export class EnvironmentWorker {
  readonly #options: EnvironmentWorkerOptions;
  readonly #logger: Logger;

  // The SDK worker's public properties, by its names: each reads the option as given, with the
  // SDK's defaults (the working directory, deletions enabled) where it has one.
  get client(): Anthropic {
    return this.#options.client;
  }
  get environmentId(): string | undefined {
    return this.#options.environmentId;
  }
  get environmentKey(): string | undefined {
    return this.#options.environmentKey;
  }
  get tools(): EnvironmentWorkerTools | undefined {
    return this.#options.tools;
  }
  get workdir(): string {
    return this.#options.workdir ?? process.cwd();
  }
  get maxFileBytes(): number | null | undefined {
    return this.#options.maxFileBytes;
  }
  get maxIdleMs(): number | undefined {
    return this.#options.maxIdleMs;
  }
  get memorySyncIntervalMs(): number | null | undefined {
    return this.#options.memorySyncIntervalMs;
  }
  get memorySyncDeletions(): DeletionMode {
    return this.#options.memorySyncDeletions ?? 'enabled';
  }
  get workerId(): string | undefined {
    return this.#options.workerId;
  }
  get requestOptions(): EnvironmentWorkerOptions['requestOptions'] {
    return this.#options.requestOptions;
  }

  /** Throws `MemoryConfigError` naming the option at fault (an unknown key included). */
  constructor(options: EnvironmentWorkerOptions) {
    checkWorkerOptions(options);
    // A copy: the worker's settings do not change under it if the caller's object does.
    this.#options = { ...options, workdir: options.workdir ?? process.cwd() };
    this.#logger = options.logger ?? debugLogger();
    // The mounter's options are checked now, not at the first item: a bad memoryRoot, stateDir
    // or time bound is the operator's to fix before any work is claimed. Construction does no I/O.
    void new MemoryMounter(this.#mounterOptions(UNUSED_STORE_CLIENT));
  }

  /**
   * Polls the environment and serves each claimed item until `signal` (or the constructor's)
   * aborts, or, with `drain`, until the queue is empty. With `stateDir`, first recovers what a
   * dead worker left, with the worker's own client. Needs `environmentId` and `environmentKey`.
   */
  async run(signal?: AbortSignal): Promise<void> {
    const { environmentId, environmentKey } = this;
    if (!environmentId) throw new MemoryConfigError('EnvironmentWorker.run needs environmentId to poll for work', 'environmentId');
    if (!environmentKey) throw new MemoryConfigError('EnvironmentWorker.run needs environmentKey to poll for work', 'environmentKey');
    const external = signal ?? this.#options.signal;
    if (this.#options.stateDir !== undefined) await this.#recover(this.#storeClientFor(this.client), null, undefined);
    const poller = new WorkPoller({
      client: this.client,
      environmentId,
      environmentKey,
      // This worker stops (or leaves) every item itself, once memory is torn down.
      autoStop: false,
      ...(this.#options.drain === true && { drain: true }),
      ...(this.workerId !== undefined && { workerId: this.workerId }),
      ...(external !== undefined && { signal: external }),
      ...(this.requestOptions !== undefined && { requestOptions: this.requestOptions }),
    });
    for await (const work of poller) {
      try {
        await this.#serve(work, environmentKey, poller.signal);
      } catch (err) {
        // Shutting down: the item's error is the caller's to see, as with the SDK's worker.
        if (poller.signal.aborted) throw err;
        // One bad item fails that item only: a folder a crash left would otherwise fail every
        // item after it, and a lost lease would end the worker.
        this.#failed(err, work);
      }
    }
  }

  /**
   * Serves one item someone else claimed (`ant worker poll --on-work` starts a process per
   * item): each of `options` falls back to its `ANTHROPIC_*` variable (see claimed-item.ts).
   * Throws `MemoryConfigError` for a value missing, `WorkItemError` when the item fails.
   */
  async handleItem(options: HandleItemOptions = {}): Promise<void> {
    const { work, environmentKey } = claimedItemFrom(options, this.environmentKey, process.env);
    try {
      await this.#serve(work, environmentKey, options.signal ?? this.#options.signal);
    } catch (err) {
      throw asWorkItemError(err, work);
    }
  }

  /** One item, start to teardown. Throws what failed it, after the teardown. */
  async #serve(work: WorkItem, environmentKey: string | undefined, external: AbortSignal | undefined): Promise<void> {
    const item: WorkerItem = { workId: work.id, environmentId: work.environment_id, sessionId: work.data.id };
    const token = sessionsTokenFromSecret(work.secret);
    const credential = token ?? environmentKey;
    if (credential === undefined) {
      throw new WorkItemError(
        'no_credential',
        `work item ${work.id}: its secret carries no sessions token and there is no environment key to fall back to`,
        { workId: work.id, sessionId: work.data.id },
      );
    }
    if (work.secret && token === null) {
      this.#logger.warn('work item secret carries no sessions token; its calls use the environment key', { work_id: work.id });
    }
    // Every per-item call rides this client: the session, skills, events, heartbeat, stop, memory.
    const itemClient = this.client.withOptions({ apiKey: null, authToken: credential });

    const session = new AbortController();
    const stopSession = () => session.abort();
    external?.addEventListener('abort', stopSession, { once: true });
    if (external?.aborted) session.abort();
    // Written by the heartbeat loop the moment it ends the session, so the finalize decision
    // below sees why the runner stopped.
    let lease: LeaseState = 'held';
    const heartbeat = keepLease(itemClient, work, session.signal, (reason) => {
      lease = reason;
      session.abort();
    }, this.requestOptions);

    const held: { mounter: MemoryMounter | null; cleanupSkills: () => Promise<void> } = { mounter: null, cleanupSkills: async () => {} };
    let end: SessionEnd = 'threw';
    let failure: unknown;
    try {
      end = await this.#session(work, item, itemClient, token, session.signal, held);
    } catch (err) {
      failure = err;
    }

    // Teardown, while the heartbeat still holds the lease.
    await held.cleanupSkills().catch((err: unknown) => {
      this.#logger.warn('skill cleanup failed', { work_id: work.id, error: messageOf(err) });
    });
    if (held.mounter) {
      const outcome = finalizeOutcome(end, lease, external?.aborted === true);
      try {
        const report = await held.mounter.finalize({ outcome });
        logFinalize(this.#logger, report);
        this.#emit('finalized', report, item);
      } catch (err) {
        this.#logger.error('memory finalize failed', { work_id: work.id, error: messageOf(err) });
      }
    }
    session.abort();
    external?.removeEventListener('abort', stopSession);
    const ended = await heartbeat;
    const after = afterTeardown(ended === 'released' ? lease : ended);
    if (after.stop) await this.#forceStop(itemClient, work);
    else this.#logger.info('lease lost; the item is left to whoever holds it now', { work_id: work.id, session_id: item.sessionId });

    if (after.failure === 'lease_lost') {
      throw new WorkItemError('lease_lost', `work item ${work.id}: lease lost while the session ran; memory was finalized aborted`, {
        workId: work.id,
        sessionId: item.sessionId,
        cause: failure,
      });
    }
    if (failure !== undefined) throw asWorkItemError(failure, work);
  }

  /** The session's part of an item: everything between the heartbeat's start and the teardown. */
  async #session(
    work: WorkItem,
    item: WorkerItem,
    itemClient: Anthropic,
    token: string | null,
    signal: AbortSignal,
    held: { mounter: MemoryMounter | null; cleanupSkills: () => Promise<void> },
  ): Promise<SessionEnd> {
    if (work.data.type !== 'session') {
      this.#logger.debug('skipping a work item that is not a session', { work_id: work.id, type: work.data.type });
      return 'skipped';
    }
    // One fetch, shared by the skills and the memory: two could disagree on the resources.
    const session: BetaManagedAgentsSession = await itemClient.beta.sessions.retrieve(item.sessionId, {}, { ...this.requestOptions, signal });
    if (session.status === 'terminated') {
      this.#logger.info('skipping the work item of a terminated session', { work_id: work.id, session_id: item.sessionId });
      return 'skipped';
    }
    const memoryOn = this.memorySyncIntervalMs !== null;
    const hasStores = session.resources.some((r) => r.type === 'memory_store');
    if (memoryOn && hasStores && token === null) {
      throw new MemoryMountError(
        'missing_secret',
        `session ${item.sessionId} has memory stores but work item ${work.id} carried no sessions token; the memory ` +
          'endpoints refuse the environment key. Set memorySyncIntervalMs: null to run such sessions without memory.',
      );
    }

    const context: AgentToolContext = {
      workdir: this.workdir,
      client: itemClient,
      session,
      ...(this.maxFileBytes !== undefined && { maxFileBytes: this.maxFileBytes }),
    };
    try {
      held.cleanupSkills = await setupSkills(context);
    } catch (err) {
      this.#logger.warn('skill setup failed', { work_id: work.id, session_id: item.sessionId, error: messageOf(err) });
    }

    const mounter = memoryOn && hasStores ? await this.#mount(session, itemClient, item) : null;
    held.mounter = mounter;
    this.#emit('mounted', mounter ? [...mounter.mounts] : [], item);
    if (mounter) {
      context.allowedRoots = [...mounter.roots];
      context.readOnlyRoots = [...mounter.readOnlyRoots];
    }
    const tools = withMemorySync(this.#toolsFor(context), mounter, {
      workdir: this.workdir,
      logger: this.#logger,
      ...this.#options.writeGuard,
    });

    const runner = new SessionToolRunner(item.sessionId, {
      client: itemClient,
      tools,
      signal,
      ...(this.maxIdleMs !== undefined && { maxIdleMs: this.maxIdleMs }),
      ...(this.requestOptions !== undefined && { requestOptions: this.requestOptions }),
    });
    for await (const _call of runner) {
      // Each call reconciled memory inside its wrapper (withMemorySync) before its result went back.
    }
    return 'ended';
  }

  /**
   * A materialized mounter for the session's stores, or a throw (nothing left on disk). A mount
   * path held by a folder an earlier crash left (`mount_path_exists`) is recovered once, with
   * this item's store client, and the mount tried again.
   */
  async #mount(session: BetaManagedAgentsSession, itemClient: Anthropic, item: WorkerItem): Promise<MemoryMounter> {
    const storeClient = this.#storeClientFor(itemClient);
    const attempt = async (): Promise<MemoryMounter> => {
      const mounter = this.#mounter(storeClient, item);
      try {
        await mounter.materialize(session.resources);
        return mounter;
      } catch (err) {
        // Finalize even a failed mount: it stops a download still running and releases the mounter.
        await mounter.finalize({ outcome: 'aborted' }).catch(() => undefined);
        throw err;
      }
    };
    try {
      return await attempt();
    } catch (err) {
      const held = err instanceof MemoryMountError && err.code === 'mount_path_exists';
      if (!held || this.#options.stateDir === undefined) throw err;
      this.#logger.warn('a mount path is held by a folder an earlier worker left; recovering it', {
        work_id: item.workId,
        session_id: item.sessionId,
        path: err.path,
      });
      const storeIds = session.resources.flatMap((r) => (r.type === 'memory_store' ? [r.memory_store_id] : []));
      await this.#recover(storeClient, item, storeIds);
      return attempt();
    }
  }

  #mounter(storeClient: StoreClient, item: WorkerItem): MemoryMounter {
    const mounter = new MemoryMounter(this.#mounterOptions(storeClient));
    const listeners = this.#options.on ?? {};
    for (const name of MOUNTER_EVENTS) {
      const listener = listeners[name] as ((event: unknown, item: WorkerItem) => void) | undefined;
      if (listener) mounter.on(name, (event: unknown) => listener(event, item));
    }
    return mounter;
  }

  /** Every item's mounter options; the worker's `mounter` options under its own. */
  #mounterOptions(storeClient: StoreClient): MemoryMounterOptions {
    const { memoryRoot, fileSystem, stateDir } = this.#options;
    return {
      ...this.#options.mounter,
      storeClient,
      logger: this.#logger,
      memory_sync_deletions: this.memorySyncDeletions,
      ...(memoryRoot !== undefined && { memoryRoot }),
      ...(fileSystem !== undefined && { fileSystem }),
      ...(stateDir !== undefined && { stateDir }),
      // The SDK's milliseconds, the mounter's seconds.
      ...(typeof this.memorySyncIntervalMs === 'number' && { memory_sync_interval: this.memorySyncIntervalMs / 1000 }),
    };
  }

  async #recover(storeClient: StoreClient, item: WorkerItem | null, memoryStoreIds: readonly string[] | undefined): Promise<void> {
    const { stateDir, memoryRoot, fileSystem } = this.#options;
    const report = await MemoryMounter.recover({
      storeClient,
      stateDir: stateDir!,
      logger: this.#logger,
      ...(memoryRoot !== undefined && { memoryRoot }),
      ...(fileSystem !== undefined && { fileSystem }),
      ...(memoryStoreIds !== undefined && { memoryStoreIds }),
    });
    const left = report.stores.filter((s) => s.outcome === 'left');
    const fields = { work_id: item?.workId, stores: report.stores.length, left: left.length, unvouched: report.unvouched.length };
    if (left.length > 0 || report.unreadableRecords.length > 0) this.#logger.warn('recovery left folders in place', fields);
    else this.#logger.info('recovery done', fields);
    this.#emit('recovered', report, item);
  }

  #toolsFor(context: AgentToolContext): BetaRunnableTool[] {
    const tools = this.tools;
    if (typeof tools === 'function') return tools(context);
    return tools ?? betaAgentToolset20260401(context);
  }

  #storeClientFor(client: Anthropic): StoreClient {
    const factory = this.#options.storeClient;
    return factory ? factory(client) : new AnthropicStoreClient({ client });
  }

  /** `work.stop` with `force`, with the item's credential. A 409 means it is already stopped. */
  async #forceStop(itemClient: Anthropic, work: WorkItem): Promise<void> {
    try {
      // The caller's headers go along; a signal in requestOptions is ignored, as the SDK ignores it.
      const { signal: _ignored, ...requestOptions } = this.requestOptions ?? {};
      await itemClient.beta.environments.work.stop(work.id, { environment_id: work.environment_id, force: true }, requestOptions);
    } catch (err) {
      if ((err as { status?: unknown } | null)?.status !== 409) {
        this.#logger.error('force-stop on exit failed', { work_id: work.id, error: messageOf(err) });
      }
    }
  }

  #failed(err: unknown, work: WorkItem): void {
    const error = asWorkItemError(err, work);
    this.#logger.error('work item failed', {
      work_id: error.workId,
      session_id: error.sessionId,
      code: error.code,
      ...(error.mountCode !== undefined && { mount_code: error.mountCode }),
      error: error.message,
    });
    this.#emit('failed', error, { workId: work.id, environmentId: work.environment_id, sessionId: work.data.id });
  }

  #emit<E extends keyof WorkerEvents>(name: E, event: WorkerEvents[E], item: WorkerItem | null): void {
    const listener = this.#options.on?.[name] as ((event: WorkerEvents[E], item: WorkerItem | null) => void) | undefined;
    if (!listener) return;
    try {
      listener(event, item);
    } catch (err) {
      this.#logger.warn('worker event listener threw; the worker goes on', { event: name, error: messageOf(err) });
    }
  }
}

/** Whatever failed an item, as the typed error `run` logs and `handleItem` throws. */
function asWorkItemError(err: unknown, work: WorkItem): WorkItemError {
  if (err instanceof WorkItemError) return err;
  const details = { workId: work.id, sessionId: work.data.id, cause: err };
  if (err instanceof MemoryMountError) {
    return new WorkItemError('mount_failed', `work item ${work.id}: memory not mounted (${err.code}): ${err.message}`, {
      ...details,
      mountCode: err.code,
    });
  }
  return new WorkItemError('session_failed', `work item ${work.id}: ${messageOf(err)}`, details);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
