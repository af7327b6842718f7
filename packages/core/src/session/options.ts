import { posix } from 'node:path';
import { MemoryConfigError } from '../model/errors.js';
import type { FileSystem } from '../local/file-system.js';
import {
  DEFAULT_DELETE_GRACE_S,
  DEFAULT_FULL_LISTING_EVERY,
  DEFAULT_FULL_LISTING_INTERVAL_S,
  DEFAULT_TRANSFER_CONCURRENCY,
  DEFAULT_NEW_FILE_SETTLE_S,
  DEFAULT_FINAL_SYNC_TIMEOUT_S,
  DEFAULT_REQUEST_TIMEOUT_S,
  DEFAULT_SYNC_INTERVAL_S,
  DEFAULT_SYNC_TIMEOUT_S,
  DEFAULT_SYNC_WAIT_S,
  DEFAULT_RETRY_BUDGET_S,
  MOUNT_PREFIX,
} from '../model/limits.js';
import { asLogger, debugLogger } from './logger.js';
import type { StoreClient } from '../remote/store-client.js';
import type { DeletionMode, Logger, MemoryMounterOptions } from '../model/types.js';

/** Options after validation, with defaults applied and durations in milliseconds. */
export interface ResolvedOptions {
  storeClient: StoreClient;
  /** The host's own, or undefined: the mounter then builds a NodeFileSystem. */
  fileSystem: FileSystem | undefined;
  memoryRoot: string;
  syncIntervalMs: number;
  deletionMode: DeletionMode;
  deleteGraceMs: number;
  newFileSettleMs: number;
  finalSyncTimeoutMs: number;
  /** Past this, one store call is abandoned (and retried where that is safe). */
  requestTimeoutMs: number;
  /** Past this, a reconcile pass (or materialize's download) is cut off. */
  syncTimeoutMs: number;
  /** An unforced reconcile waits this long for its pass, then lets it run on in the background. */
  syncWaitMs: number;
  /** An ordinary pass retries failed store calls for this long. */
  retryBudgetMs: number;
  /** Where crash-recovery records go; undefined: none are kept. */
  stateDir: string | undefined;
  keepUnpushed: boolean;
  conflictCopies: boolean;
  /** Transfers in flight at once, all stores of the session together. */
  transferConcurrency: number;
  /** A full listing at least once in this many passes. */
  fullListingEvery: number;
  /** A full listing at least this often (ms, on `now`). */
  fullListingIntervalMs: number;
  /** Wall-clock milliseconds, for timestamps (reports, status). */
  now: () => number;
  /**
   * Milliseconds on a clock that never jumps, for durations: `performance.now`, or the `now`
   * option when one is given (a test's clock drives both).
   */
  monotonicNow: () => number;
  /** Whether `now` was given: then no wall-clock jump can be told from the clock itself. */
  clockInjected: boolean;
  logger: Logger;
}

const DELETION_MODES: readonly DeletionMode[] = ['enabled', 'log_only', 'disabled'];

/**
 * Every key `new MemoryMounter(...)` takes. Any other key is refused: an option dropped
 * silently is an option whose default runs instead (`memorySyncDeletion: 'disabled'` would leave
 * deletions enabled).
 */
export const OPTION_NAMES = [
  'storeClient',
  'fileSystem',
  'logger',
  'now',
  'memory_sync_deletions',
  'memorySyncDeletions',
  'memoryRoot',
  'memory_sync_interval',
  'memorySyncIntervalMs',
  'deleteGracePeriod',
  'newFileSettle',
  'finalSyncTimeout',
  'requestTimeout',
  'syncTimeout',
  'syncWait',
  'retryBudget',
  'stateDir',
  'keepUnpushed',
  'conflictCopies',
  'transferConcurrency',
  'fullListingEvery',
  'fullListingInterval',
] as const satisfies readonly (keyof MemoryMounterOptions)[];

// An option added to MemoryMounterOptions but not to OPTION_NAMES would be refused as unknown.
type Unlisted = Exclude<keyof MemoryMounterOptions, (typeof OPTION_NAMES)[number]>;
const everyOptionListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyOptionListed;

/** The unit a suggestion names, where two names of one option differ in it. */
const UNIT_OF: Partial<Record<(typeof OPTION_NAMES)[number], string>> = {
  memory_sync_interval: 'seconds',
  memorySyncIntervalMs: 'milliseconds',
};

/** Checks every option and throws MemoryConfigError naming the first one at fault. */
export function resolveOptions(options: MemoryMounterOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new MemoryConfigError('MemoryMounter needs an options object');
  refuseUnknownKeys(options);
  const { storeClient, fileSystem, logger } = options;
  if (!hasMethods(storeClient, ['list', 'get', 'create', 'update', 'delete'])) {
    throw new MemoryConfigError('storeClient must implement StoreClient (list, get, create, update, delete)', 'storeClient');
  }
  if (fileSystem !== undefined && !hasMethods(fileSystem, ['lstat', 'readdir', 'readFile', 'writeFile', 'mkdir', 'rm', 'rename'])) {
    throw new MemoryConfigError('fileSystem must implement FileSystem', 'fileSystem');
  }
  if (logger !== undefined && !hasMethods(logger, ['debug', 'info', 'warn', 'error'])) {
    throw new MemoryConfigError('logger must have debug, info, warn and error methods', 'logger');
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new MemoryConfigError('now must be a function returning milliseconds', 'now');
  }
  const deletionMode = resolveDeletionMode(options);
  const memoryRoot = resolveMemoryRoot(options.memoryRoot === undefined ? MOUNT_PREFIX : options.memoryRoot);
  return {
    storeClient,
    fileSystem,
    memoryRoot,
    syncIntervalMs: resolveSyncIntervalMs(options),
    deletionMode,
    deleteGraceMs: seconds(options.deleteGracePeriod, DEFAULT_DELETE_GRACE_S, 'deleteGracePeriod', true) * 1000,
    newFileSettleMs: seconds(options.newFileSettle, DEFAULT_NEW_FILE_SETTLE_S, 'newFileSettle', true) * 1000,
    finalSyncTimeoutMs: timerSeconds(options.finalSyncTimeout, DEFAULT_FINAL_SYNC_TIMEOUT_S, 'finalSyncTimeout') * 1000,
    requestTimeoutMs: timerSeconds(options.requestTimeout, DEFAULT_REQUEST_TIMEOUT_S, 'requestTimeout') * 1000,
    syncTimeoutMs: timerSeconds(options.syncTimeout, DEFAULT_SYNC_TIMEOUT_S, 'syncTimeout') * 1000,
    syncWaitMs: timerSeconds(options.syncWait, DEFAULT_SYNC_WAIT_S, 'syncWait', true) * 1000,
    retryBudgetMs: timerSeconds(options.retryBudget, DEFAULT_RETRY_BUDGET_S, 'retryBudget', true) * 1000,
    stateDir: options.stateDir === undefined ? undefined : resolveStateDir(options.stateDir, memoryRoot),
    keepUnpushed: resolveKeepUnpushed(options.keepUnpushed),
    conflictCopies: resolveBoolean(options.conflictCopies, 'conflictCopies'),
    transferConcurrency: count(options.transferConcurrency, DEFAULT_TRANSFER_CONCURRENCY, 'transferConcurrency'),
    fullListingEvery: count(options.fullListingEvery, DEFAULT_FULL_LISTING_EVERY, 'fullListingEvery'),
    fullListingIntervalMs: seconds(options.fullListingInterval, DEFAULT_FULL_LISTING_INTERVAL_S, 'fullListingInterval', false) * 1000,
    now: options.now ?? Date.now,
    monotonicNow: options.now ?? (() => performance.now()),
    clockInjected: options.now !== undefined,
    logger: logger === undefined ? debugLogger() : asLogger(logger),
  };
}

function seconds(value: unknown, fallback: number, option: string, zeroAllowed: boolean): number {
  if (value === undefined) return fallback;
  const ok = typeof value === 'number' && Number.isFinite(value) && (zeroAllowed ? value >= 0 : value > 0);
  if (!ok) {
    const bound = zeroAllowed ? '>= 0' : '> 0';
    throw new MemoryConfigError(`${option} must be a finite number of seconds ${bound}; got ${describeValue(value)}`, option);
  }
  return value as number;
}

/** The longest `memory_sync_interval` taken, in seconds: one hour. */
const MAX_SYNC_INTERVAL_S = 3_600;

/**
 * `memory_sync_interval` is in seconds, where the SDK's `memorySyncIntervalMs` is in
 * milliseconds: 15000 would mean four hours between syncs. Anything above an hour is refused as
 * that mistake rather than taken.
 */
function syncIntervalSeconds(value: unknown): number {
  const s = seconds(value, DEFAULT_SYNC_INTERVAL_S, 'memory_sync_interval', false);
  if (s > MAX_SYNC_INTERVAL_S) {
    throw new MemoryConfigError(
      `memory_sync_interval is in seconds and must be at most ${MAX_SYNC_INTERVAL_S}; got ${s}. ` +
        `Did you pass milliseconds (as the SDK's memorySyncIntervalMs takes)? ${s} ms is ${s / 1000} s.`,
      'memory_sync_interval',
    );
  }
  return s;
}

/**
 * The interval under either name: `memory_sync_interval` in seconds (the design's) or
 * `memorySyncIntervalMs` in milliseconds (the SDK's). Each is checked by its own unit first, so
 * a refusal names the key the host wrote.
 */
function resolveSyncIntervalMs(options: MemoryMounterOptions): number {
  const { memory_sync_interval: s, memorySyncIntervalMs: ms } = options;
  if (ms === undefined) return syncIntervalSeconds(s) * 1000;
  const fromMs = syncIntervalMilliseconds(ms);
  if (s === undefined) return fromMs;
  const fromS = syncIntervalSeconds(s);
  // Compared to the microsecond: 1.1 s is 1100 ms although 1.1 * 1000 is not exactly 1100.
  if (Math.round(fromS * 1e6) !== Math.round(fromMs * 1e3)) {
    throw new MemoryConfigError(
      `memory_sync_interval (${fromS} s) and memorySyncIntervalMs (${fromMs} ms) disagree; give one of them`,
      'memorySyncIntervalMs',
    );
  }
  return fromMs;
}

/** `memorySyncIntervalMs`: milliseconds > 0, at most the hour `memory_sync_interval` allows. */
function syncIntervalMilliseconds(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new MemoryConfigError(`memorySyncIntervalMs must be a finite number of milliseconds > 0; got ${describeValue(value)}`, 'memorySyncIntervalMs');
  }
  if (value > MAX_SYNC_INTERVAL_S * 1000) {
    throw new MemoryConfigError(`memorySyncIntervalMs must be at most ${MAX_SYNC_INTERVAL_S * 1000} (one hour); got ${value}`, 'memorySyncIntervalMs');
  }
  return value;
}

/** The deletion mode under either name; `undefined` means the default, anything else must be valid. */
function resolveDeletionMode(options: MemoryMounterOptions): DeletionMode {
  const given = (['memory_sync_deletions', 'memorySyncDeletions'] as const).filter((key) => options[key] !== undefined);
  for (const key of given) {
    if (!DELETION_MODES.includes(options[key] as DeletionMode)) {
      throw new MemoryConfigError(`${key} must be one of ${DELETION_MODES.join(', ')}; got ${JSON.stringify(options[key])}`, key);
    }
  }
  if (given.length === 2 && options.memory_sync_deletions !== options.memorySyncDeletions) {
    throw new MemoryConfigError(
      `memory_sync_deletions (${JSON.stringify(options.memory_sync_deletions)}) and memorySyncDeletions ` +
        `(${JSON.stringify(options.memorySyncDeletions)}) disagree; give one of them`,
      'memorySyncDeletions',
    );
  }
  return given.length === 0 ? 'enabled' : (options[given[0]!] as DeletionMode);
}

/** The first key that is no option, refused with the valid name closest to it. */
function refuseUnknownKeys(options: object): void {
  const known: readonly string[] = OPTION_NAMES;
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown === undefined) return;
  const closest = closestName(unknown, OPTION_NAMES);
  const unit = UNIT_OF[closest];
  throw new MemoryConfigError(
    `unknown option ${JSON.stringify(unknown)}; did you mean ${closest}${unit ? ` (${unit})` : ''}? ` +
      `MemoryMounter takes ${OPTION_NAMES.join(', ')}`,
    unknown,
    closest,
  );
}

/**
 * The name nearest `key` by edit distance, compared without case or `_` first (so
 * `memory_sync_deletion` and `MemorySyncDeletion` both find their option), then as written.
 * A name that holds the key whole, or is held in it, counts as one edit away: `root` is
 * `memoryRoot`, `deleteGracePeriodMs` is `deleteGracePeriod`, not a short name a few edits off.
 */
function closestName<T extends string>(key: string, names: readonly T[]): T {
  const fold = (name: string) => name.toLowerCase().replaceAll('_', '');
  let best = names[0]!;
  let bestScore = [Infinity, Infinity];
  for (const name of names) {
    const [k, n] = [fold(key), fold(name)];
    const folded = Math.min(editDistance(k, n), k.includes(n) || n.includes(k) ? 1 : Infinity);
    const score = [folded, editDistance(key, name)];
    if (score[0]! < bestScore[0]! || (score[0] === bestScore[0] && score[1]! < bestScore[1]!)) [best, bestScore] = [name, score];
  }
  return best;
}

/** Levenshtein distance: insertions, deletions and substitutions, one each. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/** A value as a refusal shows it: `15`, `"15" (a string)`, `null`, `true (a boolean)`. */
function describeValue(value: unknown): string {
  if (typeof value === 'number' || value === undefined || value === null) return String(value);
  if (typeof value === 'string') return `${JSON.stringify(value)} (a string)`;
  if (typeof value === 'object') return `${Array.isArray(value) ? 'an array' : 'an object'}`;
  return `${String(value)} (a ${typeof value})`;
}

/** A count: an integer >= 1. */
function count(value: unknown, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new MemoryConfigError(`${option} must be an integer >= 1; got ${describeValue(value)}`, option);
  }
  return value;
}

/** Node timers fire at once past 2^31 - 1 ms, which would cut the bounded work off before it starts. */
const MAX_TIMER_S = Math.floor((2 ** 31 - 1) / 1000);

/** A time bound: seconds > 0 (>= 0 where `zeroAllowed`) that a Node timer can hold. */
function timerSeconds(value: unknown, fallback: number, option: string, zeroAllowed = false): number {
  const s = seconds(value, fallback, option, zeroAllowed);
  if (s > MAX_TIMER_S) {
    throw new MemoryConfigError(`${option} must be at most ${MAX_TIMER_S} seconds; got ${s}`, option);
  }
  return s;
}

function resolveMemoryRoot(root: unknown): string {
  if (typeof root !== 'string' || !root.startsWith('/') || root.includes('\0')) {
    throw new MemoryConfigError(`memoryRoot must be an absolute POSIX path; got ${JSON.stringify(root)}`, 'memoryRoot');
  }
  const normalised = posix.normalize(root);
  return normalised.length > 1 && normalised.endsWith('/') ? normalised.slice(0, -1) : normalised;
}

/**
 * An absolute path, normalised like memoryRoot. Not inside memoryRoot (nor memoryRoot itself):
 * what the agent can reach must never hold the records recovery trusts.
 */
function resolveStateDir(dir: unknown, memoryRoot: string): string {
  if (typeof dir !== 'string' || !dir.startsWith('/') || dir.includes('\0')) {
    throw new MemoryConfigError(`stateDir must be an absolute POSIX path; got ${JSON.stringify(dir)}`, 'stateDir');
  }
  const normalised = posix.normalize(dir);
  const stateDir = normalised.length > 1 && normalised.endsWith('/') ? normalised.slice(0, -1) : normalised;
  if (stateDir === memoryRoot || stateDir.startsWith(`${memoryRoot === '/' ? '' : memoryRoot}/`)) {
    throw new MemoryConfigError(
      `stateDir must lie outside memoryRoot (${memoryRoot}), where the agent cannot reach it; got ${JSON.stringify(dir)}`,
      'stateDir',
    );
  }
  return stateDir;
}

function resolveKeepUnpushed(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new MemoryConfigError(`keepUnpushed must be a boolean; got ${JSON.stringify(value)}`, 'keepUnpushed');
  return value;
}

function resolveBoolean(value: unknown, option: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new MemoryConfigError(`${option} must be a boolean; got ${describeValue(value)}`, option);
  return value;
}

function hasMethods(value: unknown, names: readonly string[]): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}
