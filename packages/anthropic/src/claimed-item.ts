import type { HandleItemOptions } from '@anthropic-ai/sdk/helpers/beta/environments';
import { MemoryConfigError } from '@memory-mounter/core';
import type { WorkItem } from './control-plane.js';

export type { HandleItemOptions };

/** A claimed item, ready to serve: the item and the environment key its calls may fall back to. */
export interface ClaimedItem {
  work: WorkItem;
  environmentKey: string | undefined;
}

/**
 * The item `handleItem` serves, each field from its option or else the variable
 * `ant worker poll --on-work` sets for the process it starts:
 *
 * | field          | option           | then                    | then                        |
 * | -------------- | ---------------- | ----------------------- | --------------------------- |
 * | work id        | `workId`         | `ANTHROPIC_WORK_ID`     |                             |
 * | environment id | `environmentId`  | `ANTHROPIC_ENVIRONMENT_ID` |                          |
 * | session id     | `sessionId`      | `ANTHROPIC_SESSION_ID`  |                             |
 * | environment key| `environmentKey` | the worker's own        | `ANTHROPIC_ENVIRONMENT_KEY` |
 * | secret         | `workSecret`     | `ANTHROPIC_WORK_SECRET` |                             |
 *
 * An empty value counts as absent. The ids are required; a key only when there is no secret to
 * carry a sessions token. Throws `MemoryConfigError` naming the first value missing. Pure:
 * `env` is passed in (`process.env` by the caller).
 */
export function claimedItemFrom(
  options: HandleItemOptions,
  workerKey: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): ClaimedItem {
  const read = (name: string) => nonEmpty(env[name]);
  const workId = nonEmpty(options.workId) ?? read('ANTHROPIC_WORK_ID');
  const environmentId = nonEmpty(options.environmentId) ?? read('ANTHROPIC_ENVIRONMENT_ID');
  const sessionId = nonEmpty(options.sessionId) ?? read('ANTHROPIC_SESSION_ID');
  const environmentKey = nonEmpty(options.environmentKey) ?? nonEmpty(workerKey) ?? read('ANTHROPIC_ENVIRONMENT_KEY');
  const secret = nonEmpty(options.workSecret) ?? read('ANTHROPIC_WORK_SECRET') ?? null;
  if (workId === undefined) throw missing('workId', 'ANTHROPIC_WORK_ID');
  if (environmentId === undefined) throw missing('environmentId', 'ANTHROPIC_ENVIRONMENT_ID');
  if (sessionId === undefined) throw missing('sessionId', 'ANTHROPIC_SESSION_ID');
  if (environmentKey === undefined && secret === null) {
    throw new MemoryConfigError(
      'handleItem: with no work secret an environment key is needed: pass environmentKey, give it to the worker, or set ANTHROPIC_ENVIRONMENT_KEY',
      'environmentKey',
    );
  }
  return { work: { id: workId, environment_id: environmentId, data: { type: 'session', id: sessionId }, secret }, environmentKey };
}

function missing(option: string, variable: string): MemoryConfigError {
  return new MemoryConfigError(`handleItem: ${option} is required: pass it or set ${variable}`, option);
}

function nonEmpty(value: string | null | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
