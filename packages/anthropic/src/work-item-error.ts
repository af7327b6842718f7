import type { MountErrorCode } from '@memory-mounter/core';

/**
 * Why a work item failed:
 * - `lease_lost`: the lease lapsed or went to another worker while the session ran; the item
 *   was left to whoever holds it now (not stopped), memory finalized `aborted`;
 * - `mount_failed`: the session's stores could not be mounted (`mountCode` says why); no tool ran;
 * - `no_credential`: neither a sessions token in the item's secret nor an environment key;
 * - `session_failed`: fetching the session or serving its events failed (`cause` has the error).
 */
export type WorkItemErrorCode = 'lease_lost' | 'mount_failed' | 'no_credential' | 'session_failed';

/**
 * One work item could not be served. `EnvironmentWorker.run` logs it (`work item failed`, with
 * `code`) and goes on to the next item; `handleItem` throws it.
 */
export class WorkItemError extends Error {
  override name = 'WorkItemError';
  readonly code: WorkItemErrorCode;
  readonly workId: string;
  readonly sessionId: string | undefined;
  /** For `mount_failed`: the `MemoryMountError` code. */
  readonly mountCode: MountErrorCode | undefined;

  constructor(
    code: WorkItemErrorCode,
    message: string,
    details: { workId: string; sessionId?: string; mountCode?: MountErrorCode; cause?: unknown },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.workId = details.workId;
    this.sessionId = details.sessionId;
    this.mountCode = details.mountCode;
  }
}
