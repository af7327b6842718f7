import { posix } from 'node:path';
import { MemoryConfigError } from './errors.js';
import type { FileSystem } from './file-system.js';
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
  MOUNT_PREFIX,
} from './limits.js';
import { asLogger, debugLogger } from './logger.js';
import type { StoreClient } from './store-client.js';
import type { DeletionMode, Logger, MemoryMounterOptions } from './types.js';

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
  now: () => number;
  logger: Logger;
}

const DELETION_MODES: readonly DeletionMode[] = ['enabled', 'log_only', 'disabled'];

/** Checks every option and throws MemoryConfigError naming the first one at fault. */
export function resolveOptions(options: MemoryMounterOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new MemoryConfigError('MemoryMounter needs an options object');
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
  // `undefined` means "use the default"; anything else, `null` included, must be valid.
  const deletionMode = options.memory_sync_deletions === undefined ? 'enabled' : options.memory_sync_deletions;
  if (!DELETION_MODES.includes(deletionMode)) {
    throw new MemoryConfigError(
      `memory_sync_deletions must be one of ${DELETION_MODES.join(', ')}; got ${JSON.stringify(deletionMode)}`,
      'memory_sync_deletions',
    );
  }
  const memoryRoot = resolveMemoryRoot(options.memoryRoot === undefined ? MOUNT_PREFIX : options.memoryRoot);
  return {
    storeClient,
    fileSystem,
    memoryRoot,
    syncIntervalMs: syncIntervalSeconds(options.memory_sync_interval) * 1000,
    deletionMode,
    deleteGraceMs: seconds(options.deleteGracePeriod, DEFAULT_DELETE_GRACE_S, 'deleteGracePeriod', true) * 1000,
    newFileSettleMs: seconds(options.newFileSettle, DEFAULT_NEW_FILE_SETTLE_S, 'newFileSettle', true) * 1000,
    finalSyncTimeoutMs: timerSeconds(options.finalSyncTimeout, DEFAULT_FINAL_SYNC_TIMEOUT_S, 'finalSyncTimeout') * 1000,
    requestTimeoutMs: timerSeconds(options.requestTimeout, DEFAULT_REQUEST_TIMEOUT_S, 'requestTimeout') * 1000,
    syncTimeoutMs: timerSeconds(options.syncTimeout, DEFAULT_SYNC_TIMEOUT_S, 'syncTimeout') * 1000,
    stateDir: options.stateDir === undefined ? undefined : resolveStateDir(options.stateDir, memoryRoot),
    keepUnpushed: resolveKeepUnpushed(options.keepUnpushed),
    conflictCopies: resolveBoolean(options.conflictCopies, 'conflictCopies'),
    transferConcurrency: count(options.transferConcurrency, DEFAULT_TRANSFER_CONCURRENCY, 'transferConcurrency'),
    fullListingEvery: count(options.fullListingEvery, DEFAULT_FULL_LISTING_EVERY, 'fullListingEvery'),
    fullListingIntervalMs: seconds(options.fullListingInterval, DEFAULT_FULL_LISTING_INTERVAL_S, 'fullListingInterval', false) * 1000,
    now: options.now ?? Date.now,
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

/** A time bound: seconds > 0 that a Node timer can hold. */
function timerSeconds(value: unknown, fallback: number, option: string): number {
  const s = seconds(value, fallback, option, false);
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
