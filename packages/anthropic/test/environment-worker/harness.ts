import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import type { Logger } from '@memory-mounter/core';
import { MemoryApiServer, type ControlPlaneEvent } from '@memory-mounter/testing';

export const ENV_ID = 'env_emulated';
export const ENV_KEY = 'environment-key';
export const TOKEN = 'sessions-token';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields?: Record<string, unknown>;
}

/** A logger that keeps its lines, in the shape both this library and the SDK take. */
export function recordingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, ...(fields !== undefined && { fields }) });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

/**
 * A temp base with `work` (the agent's workdir) and `work/memory` (the memory root): a store
 * named `notes` lands at `work/memory/notes` for this library (memoryRoot + slug) and for the
 * SDK's worker (a store without `mount_path` goes to `<workdir>/memory/<name>`).
 */
export async function tempWorkdir(): Promise<{ base: string; workdir: string; memoryRoot: string; cleanup: () => Promise<void> }> {
  // realpath: the SDK's file tools canonicalize paths, so the roots must be canonical too.
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-env-worker-')));
  const workdir = join(base, 'work');
  const memoryRoot = join(workdir, 'memory');
  await mkdir(memoryRoot, { recursive: true });
  return { base, workdir, memoryRoot, cleanup: () => rm(base, { recursive: true, force: true }) };
}

/**
 * The emulator as the service stands: the memory endpoints take only the sessions token, the
 * work queue only the environment key (or the item's token, for its own calls).
 */
export async function emulator(leaseTtlSeconds = 300): Promise<{ server: MemoryApiServer; baseURL: string; events: ControlPlaneEvent[] }> {
  const server = new MemoryApiServer({ apiKey: TOKEN, controlPlane: { environmentKey: ENV_KEY, leaseTtlSeconds } });
  const baseURL = await server.start();
  const events: ControlPlaneEvent[] = [];
  server.controlPlane.on((event) => events.push(event));
  return { server, baseURL, events };
}

/**
 * The worker's client: the environment key, the emulator's URL, no SDK retries. With `logger`,
 * the SDK logs to it from `info` up (the SDK's worker logs through its client).
 */
export function workerClient(baseURL: string, logger?: Logger): Anthropic {
  const sdkLogger = logger && {
    debug: (msg: string, ...rest: unknown[]) => logger.debug(msg, fieldsOf(rest)),
    info: (msg: string, ...rest: unknown[]) => logger.info(msg, fieldsOf(rest)),
    warn: (msg: string, ...rest: unknown[]) => logger.warn(msg, fieldsOf(rest)),
    error: (msg: string, ...rest: unknown[]) => logger.error(msg, fieldsOf(rest)),
  };
  return new Anthropic({ apiKey: null, authToken: ENV_KEY, baseURL, maxRetries: 0, ...(sdkLogger && { logger: sdkLogger, logLevel: 'info' as const }) });
}

function fieldsOf(rest: unknown[]): Record<string, unknown> | undefined {
  const first = rest[0];
  return typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : rest.length > 0 ? { args: rest } : undefined;
}

/** Resolves once the control plane announces an event `matches` accepts. */
export function nextEvent(server: MemoryApiServer, matches: (event: ControlPlaneEvent) => boolean): Promise<ControlPlaneEvent> {
  return new Promise((resolve) => {
    const off = server.controlPlane.on((event) => {
      if (!matches(event)) return;
      off();
      resolve(event);
    });
  });
}
