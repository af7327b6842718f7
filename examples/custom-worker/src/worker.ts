import type Anthropic from '@anthropic-ai/sdk';
import { betaAgentToolset20260401, type AgentToolContext } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { mountSessionMemory, runSessionWithMemory, withMemorySync, type ControlPlane, type WorkItem } from '@memory-mounter/anthropic';
import { debugLogger, MemoryMountError, type DeletionMode, type FinalizeReport, type Logger, type MountedStore } from '@memory-mounter/core';

export interface WorkerOptions {
  /** The worker's client: base URL, retries, timeout. Memory calls swap its key for the item's sessions token. */
  client: Anthropic;
  /** Where work comes from and where tool calls are served: the live service, or a fake in tests. */
  controlPlane: ControlPlane;
  /** The agent's working directory: relative tool paths resolve here. */
  workdir: string;
  /** Where `/mnt/memory` lies on this host (default `/mnt/memory`); the operator creates it. */
  memoryRoot?: string;
  /** Seconds between syncs (default 15); `null` runs every session without its memory. */
  memory_sync_interval?: number | null;
  memory_sync_deletions?: DeletionMode;
  logger?: Logger;
  /** Clock in ms for the sync interval; tests pass one they move by hand. */
  now?: () => number;
  /** Seconds a new file must rest before a sync pushes it (default 1); a scripted agent that writes whole files can use 0. */
  newFileSettle?: number;
  /** Called once an item's memory is mounted (`mounts` empty when it runs without memory). */
  onMounted?: (work: WorkItem, mounts: readonly MountedStore[]) => void;
  /** Called with an item's finalize report, once its memory is torn down. */
  onFinalize?: (work: WorkItem, report: FinalizeReport) => void;
}

/**
 * The poll loop: serves each claimed work item in turn until `signal` aborts. One failed item
 * is logged and let go (the control plane releases it); it never stops the worker, or a store
 * folder left behind by a crash would fail every item after it.
 */
export async function runWorker(options: WorkerOptions, signal: AbortSignal): Promise<void> {
  const logger = options.logger ?? debugLogger('custom-worker');
  for await (const work of options.controlPlane.claimWork(signal)) {
    try {
      await handleWorkItem(work, options, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      logger.error('work item failed', {
        work_id: work.id,
        error: err instanceof Error ? err.message : String(err),
        ...(err instanceof MemoryMountError && { code: err.code }),
      });
    }
  }
}

/**
 * One work item: mount its memory, give the agent the toolset confined to the workdir and the
 * stores, serve the session, and always finalize memory, `completed` on a clean end, `aborted`
 * otherwise. Returns the finalize report, or `null` when the session ran without memory.
 *
 * Throws `MemoryMountError` before any tool runs when the stores cannot be mounted, notably
 * `missing_secret` when the item carries no sessions token: running without the memory the
 * session was promised would lose it silently.
 */
export async function handleWorkItem(work: WorkItem, options: WorkerOptions, signal: AbortSignal): Promise<FinalizeReport | null> {
  if (work.data.type !== 'session') return null;
  const logger = options.logger ?? debugLogger('custom-worker');

  const mounter = await mountSessionMemory({
    client: options.client,
    sessionId: work.data.id,
    secret: work.secret,
    logger,
    ...pickDefined(options, ['memoryRoot', 'memory_sync_interval', 'memory_sync_deletions', 'now', 'newFileSettle']),
  });
  options.onMounted?.(work, [...(mounter?.mounts ?? [])]);

  // The file tools may reach the workdir and every store; the read-only stores are refused by
  // the toolset itself, and again by withMemorySync's guard, which also covers folders under
  // the memory root that belong to no store.
  const context: AgentToolContext = {
    workdir: options.workdir,
    allowedRoots: [...(mounter?.roots ?? [])],
    readOnlyRoots: [...(mounter?.readOnlyRoots ?? [])],
  };
  const tools = withMemorySync(betaAgentToolset20260401(context), mounter, { workdir: options.workdir, logger });

  let report: FinalizeReport | null = null;
  await runSessionWithMemory(mounter, () => options.controlPlane.runSession(work, tools, signal), {
    signal,
    logger,
    onFinalize: (r) => {
      report = r;
      options.onFinalize?.(work, r);
    },
  });
  return report;
}

/** Only the options that were given, so the hook's own defaults apply to the rest. */
function pickDefined<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
