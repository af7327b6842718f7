import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { EnvironmentWorker, WorkItemError } from '@memory-mounter/anthropic';
import type { DeletionMode, FinalizeReport } from '@memory-mounter/core';
import type { Output } from './output.js';
import { EXIT, UsageError } from './usage.js';

export interface HandleItemFlags {
  workdir?: string | undefined;
  'memory-root'?: string | undefined;
  'state-dir'?: string | undefined;
  'base-url'?: string | undefined;
  interval?: string | undefined;
  deletions?: string | undefined;
}

/**
 * `memory-mounter handle-item`: serves the one work item `ant worker poll --on-work` claimed
 * for this process, from the `ANTHROPIC_*` variables it sets (`ANTHROPIC_WORK_ID`,
 * `ANTHROPIC_ENVIRONMENT_ID`, `ANTHROPIC_SESSION_ID`, `ANTHROPIC_WORK_SECRET`, and
 * `ANTHROPIC_ENVIRONMENT_KEY` when the secret carries no sessions token): the session's memory
 * mounted, its tool calls served with the agent toolset, memory finalized, the item stopped.
 * `stateDir` is the one the other commands use: a process killed mid-session leaves a record,
 * and the next item at that mount path recovers it first.
 *
 * Exit 0 served; 1 the item failed (`WorkItemError`, its code printed); 2 a value missing.
 */
export async function handleItemCommand(flags: HandleItemFlags, stateDir: string, out: Output): Promise<number> {
  const interval = flags.interval === undefined ? undefined : Number(flags.interval);
  if (interval !== undefined && !(Number.isFinite(interval) && interval > 0)) {
    throw new UsageError(`--interval takes seconds, a number > 0; got ${JSON.stringify(flags.interval)}`);
  }
  const memoryRoot = flags['memory-root'] === undefined ? undefined : await realDir(flags['memory-root'], '--memory-root');
  const workdir = flags.workdir === undefined ? process.cwd() : await realDir(flags.workdir, '--workdir');
  const baseURL = flags['base-url'];
  // The process's own credential only where the item's secret gives none: the worker scopes
  // every call of the item to the secret's sessions token when there is one.
  const key = process.env['ANTHROPIC_ENVIRONMENT_KEY'] || null;
  const client = new Anthropic({ apiKey: null, authToken: key, ...(baseURL !== undefined && { baseURL }) });
  let report: FinalizeReport | undefined;
  const worker = new EnvironmentWorker({
    client,
    workdir,
    stateDir,
    ...(memoryRoot !== undefined && { memoryRoot }),
    ...(interval !== undefined && { memorySyncIntervalMs: interval * 1000 }),
    ...(flags.deletions !== undefined && { memorySyncDeletions: flags.deletions as DeletionMode }),
    on: { finalized: (r) => (report = r) },
  });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await worker.handleItem({ signal: stop.signal });
  } catch (err) {
    if (!(err instanceof WorkItemError)) throw err;
    out.error(`work item ${err.workId} failed (${err.code}${err.mountCode ? `: ${err.mountCode}` : ''}): ${err.message}`, err.code);
    return EXIT.syncProblems;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const workId = process.env['ANTHROPIC_WORK_ID'];
  const finalized = report as FinalizeReport | undefined;
  out.note(
    finalized
      ? `served work item ${workId}: memory finalized ${finalized.outcome}${finalized.unpushed.length > 0 ? `, ${finalized.unpushed.length} change(s) not pushed` : ''}`
      : `served work item ${workId} (no memory)`,
    { event: 'served', workId, outcome: finalized?.outcome ?? null, unpushed: finalized?.unpushed ?? [] },
  );
  return finalized && finalized.unpushed.length > 0 ? EXIT.syncProblems : EXIT.ok;
}

async function realDir(dir: string, flag: string): Promise<string> {
  return realpath(resolve(dir)).catch(() => {
    throw new UsageError(`${flag} ${dir} does not exist`);
  });
}
