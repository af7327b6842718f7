import { asLogger, debugLogger, type FinalizeReport, type Logger, type MemoryMounter } from '@memory-mounter/core';

export interface RunSessionWithMemoryOptions {
  /** The session's abort signal: aborted by the end of the body means an `aborted` finalize. */
  signal?: AbortSignal;
  /** Called with the finalize report (after it is logged). */
  onFinalize?: (report: FinalizeReport) => void;
  logger?: Logger;
}

/**
 * Runs a session's body, then always tears its memory down, so a worker cannot forget to:
 * `finalize('completed')` when the body returns and the session was not aborted,
 * `finalize('aborted')` when it throws or the signal was aborted. Finalize is bounded by the
 * mounter's `finalSyncTimeout` and never throws for sync problems; its report is logged.
 * Gives back the body's result, or rethrows its error. A `null` mounter just runs the body.
 */
export async function runSessionWithMemory<T>(
  mounter: MemoryMounter | null,
  body: () => Promise<T>,
  options: RunSessionWithMemoryOptions = {},
): Promise<T> {
  if (!mounter) return body();
  const logger = options.logger === undefined ? debugLogger() : asLogger(options.logger);
  let outcome: 'completed' | 'aborted' = 'aborted';
  try {
    const result = await body();
    if (!options.signal?.aborted) outcome = 'completed';
    return result;
  } finally {
    try {
      const report = await mounter.finalize({ outcome });
      logFinalize(logger, report);
      options.onFinalize?.(report);
    } catch (err) {
      // Only a lifecycle misuse (finalize already called) lands here; the body's own result or
      // error is what the caller gets.
      logger.error('memory finalize failed', { error: err instanceof Error ? err.message : String(err) });
    }
  }
}

/** Logs a finalize report: `info` when all went through, `warn` when work was cut off or a folder left. */
export function logFinalize(logger: Logger, report: FinalizeReport): void {
  const cutOff = report.timedOut.sync || report.timedOut.flush;
  const fields = {
    outcome: report.outcome,
    removed: report.removed,
    left_in_place: report.leftInPlace,
    timed_out: report.timedOut,
    unpushed: report.unpushed,
  };
  if (cutOff || report.leftInPlace.length > 0 || report.unpushed.length > 0) {
    logger.warn('memory finalized with work cut off or folders left in place', fields);
  }
  else logger.info('memory finalized', fields);
}
