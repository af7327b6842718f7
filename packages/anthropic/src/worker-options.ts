import type Anthropic from '@anthropic-ai/sdk';
import type {
  EnvironmentWorkerOptions as SdkEnvironmentWorkerOptions,
  EnvironmentWorkerTools,
} from '@anthropic-ai/sdk/helpers/beta/environments';
import {
  MemoryConfigError,
  type FileSystem,
  type FinalizeReport,
  type Logger,
  type MemoryMounterOptions,
  type MounterEventName,
  type MounterEvents,
  type MountedStore,
  type RecoveryReport,
  type StoreClient,
} from '@memory-mounter/core';
import type { WithMemorySyncOptions } from './with-memory-sync.js';
import type { WorkItemError } from './work-item-error.js';

/** The item a worker event is about. */
export interface WorkerItem {
  workId: string;
  environmentId: string;
  sessionId: string;
}

/**
 * What an `EnvironmentWorker` tells its listeners, per item: every mounter event of the item's
 * session (`pushed`, `pulled`, `conflict`, ...), and the worker's own steps.
 */
export type WorkerEvents = { [E in MounterEventName]: MounterEvents[E][0] } & {
  /** The session's stores are mounted (empty when it runs without memory); no tool has run yet. */
  mounted: readonly MountedStore[];
  /** The session's memory is torn down. */
  finalized: FinalizeReport;
  /** `MemoryMounter.recover` ran (at start-up, or for an item whose mount path a crash held). */
  recovered: RecoveryReport;
  /** The item failed; `run` goes on with the next one. */
  failed: WorkItemError;
};

/** One listener per event; each also gets the item (for `recovered` at start-up, `null`). */
export type WorkerListeners = {
  [E in keyof WorkerEvents]?: (event: WorkerEvents[E], item: WorkerItem | null) => void;
};

/**
 * The mounter's own options, for each item's `MemoryMounter`. The worker supplies the store
 * client, the file system, the memory root, the state dir, the logger, and the sync interval and
 * deletion mode (from `memorySyncIntervalMs` and `memorySyncDeletions`).
 */
export type WorkerMounterOptions = Omit<
  MemoryMounterOptions,
  'storeClient' | 'fileSystem' | 'memoryRoot' | 'stateDir' | 'logger' | 'memory_sync_interval' | 'memory_sync_deletions'
>;

/**
 * The SDK's `EnvironmentWorkerOptions`, same names, units and meanings (its `unrestrictedPaths`
 * is refused, as the SDK refuses it), plus this library's.
 */
export interface EnvironmentWorkerOptions extends Omit<SdkEnvironmentWorkerOptions, 'unrestrictedPaths'> {
  /** Milliseconds a session may go without an event before its run is ended, as the SDK's worker takes it. */
  maxIdleMs?: number;
  /** This worker's name in the work queue (its polls and heartbeats), as the SDK's worker takes it; default one of its own. */
  workerId?: string;
  /** Where `/mnt/memory` lies on this host; default `/mnt/memory`. The operator creates it. */
  memoryRoot?: string;
  /** The disk the stores are mounted on; default the real one (`NodeFileSystem`). */
  fileSystem?: FileSystem;
  /**
   * The store client for one item, given the client scoped to that item's sessions token.
   * Default `new AnthropicStoreClient({ client })`.
   */
  storeClient?: (client: Anthropic) => StoreClient;
  /**
   * A host folder outside the sandbox for crash-recovery records. With it, `run` recovers what
   * a dead worker left before it polls, and an item whose mount path an earlier crash still
   * holds is recovered (with its own token) and mounted again.
   */
  stateDir?: string;
  /** The worker's and every mounter's logger; default `debugLogger('memory-mounter:worker')`. */
  logger?: Logger;
  /** The mounter's options for every item (time bounds, `newFileSettle`, `keepUnpushed`, `now`, ...). */
  mounter?: WorkerMounterOptions;
  /** Listeners for each item's mounter events and the worker's steps. */
  on?: WorkerListeners;
  /**
   * How the write guard finds a write tool's target (`writeTools`, `targetPath`, `realPath`), for
   * tools of one's own that write. Default: the agent toolset's `write` and `edit`, by `file_path`.
   */
  writeGuard?: Pick<WithMemorySyncOptions, 'writeTools' | 'targetPath' | 'realPath'>;
  /**
   * `true`: `run` serves what is queued and returns once the queue is empty (a worker woken for
   * queued work, a webhook handler, a test). Default `false`: it polls until its signal aborts.
   */
  drain?: boolean;
}

export type { EnvironmentWorkerTools };

/** Every key the SDK's options have. A new SDK option fails to compile here until it is listed. */
const SDK_KEYS = [
  'client',
  'environmentId',
  'environmentKey',
  'tools',
  'workdir',
  'maxFileBytes',
  'maxIdleMs',
  'memorySyncIntervalMs',
  'memorySyncDeletions',
  'workerId',
  'signal',
  'requestOptions',
] as const satisfies readonly (keyof SdkEnvironmentWorkerOptions)[];
type UnlistedSdkKey = Exclude<keyof SdkEnvironmentWorkerOptions, (typeof SDK_KEYS)[number] | 'unrestrictedPaths'>;
const everySdkKeyListed: [UnlistedSdkKey] extends [never] ? true : UnlistedSdkKey = true;
void everySdkKeyListed;

const OWN_KEYS = ['memoryRoot', 'fileSystem', 'storeClient', 'stateDir', 'logger', 'mounter', 'on', 'writeGuard', 'drain'] as const;
const KNOWN_KEYS: ReadonlySet<string> = new Set<string>([...SDK_KEYS, ...OWN_KEYS]);

/** Keys people bring from the mounter's options, and the worker's name for each. */
const RENAMED: Record<string, string> = {
  memory_sync_interval: 'memorySyncIntervalMs (milliseconds)',
  memory_sync_deletions: 'memorySyncDeletions',
};

const DELETION_MODES = ['enabled', 'log_only', 'disabled'];
/** The mounter's longest interval (an hour), in the SDK's unit. */
const MAX_SYNC_INTERVAL_MS = 3_600_000;

/**
 * Checks the options and throws `MemoryConfigError` naming the first key at fault: an unknown
 * key (a typo would otherwise be ignored), the SDK's refused `unrestrictedPaths`, or a value of
 * the wrong shape. The mounter's own options are checked by each item's `MemoryMounter`.
 */
export function checkWorkerOptions(options: EnvironmentWorkerOptions): void {
  if (typeof options !== 'object' || options === null) throw new MemoryConfigError('EnvironmentWorker needs an options object');
  for (const key of Object.keys(options)) {
    if (key === 'unrestrictedPaths') {
      throw new MemoryConfigError(
        'unrestrictedPaths is not accepted (nor by the SDK\'s worker): the file tools are confined to workdir and the ' +
          "session's stores; to reach another folder, return tools built with allowedRoots from a `tools` factory",
        key,
      );
    }
    if (!KNOWN_KEYS.has(key)) {
      const hint = RENAMED[key] ? `; the worker's option is ${RENAMED[key]}` : '';
      throw new MemoryConfigError(`EnvironmentWorker: unknown option ${JSON.stringify(key)}${hint}`, key);
    }
  }
  if (typeof options.client !== 'object' || options.client === null) throw new MemoryConfigError('client (an Anthropic client) is required', 'client');
  const interval = options.memorySyncIntervalMs;
  if (interval !== undefined && interval !== null && !(typeof interval === 'number' && Number.isFinite(interval) && interval > 0 && interval <= MAX_SYNC_INTERVAL_MS)) {
    throw new MemoryConfigError(
      `memorySyncIntervalMs must be a number of milliseconds > 0 and at most ${MAX_SYNC_INTERVAL_MS} (an hour), or null; got ${JSON.stringify(interval)}`,
      'memorySyncIntervalMs',
    );
  }
  if (options.memorySyncDeletions !== undefined && !DELETION_MODES.includes(options.memorySyncDeletions)) {
    throw new MemoryConfigError(`memorySyncDeletions must be one of ${DELETION_MODES.join(', ')}`, 'memorySyncDeletions');
  }
  if (options.tools !== undefined && !Array.isArray(options.tools) && typeof options.tools !== 'function') {
    throw new MemoryConfigError('tools must be an array of tools or a function of the session context', 'tools');
  }
  if (options.storeClient !== undefined && typeof options.storeClient !== 'function') {
    throw new MemoryConfigError('storeClient must be a function of the item client returning a StoreClient', 'storeClient');
  }
  if (options.on !== undefined && (typeof options.on !== 'object' || options.on === null)) {
    throw new MemoryConfigError('on must be an object of listeners', 'on');
  }
}
