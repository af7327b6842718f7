import { setMaxListeners } from 'node:events';
import type { StoreSyncReport } from '../model/reports.js';
import type { MountedStore } from '../model/types.js';
import { emptyReport, type PassOptions } from '../pass/store-sync.js';
import type { RemoteReadMode } from '../remote/remote-view.js';

/**
 * The time bounds over store passes, one rule for the mounter (materialize's download, each
 * reconcile pass, finalize's final window) and for `MemoryMounter.recover` (its final window):
 * the deadline, what a final pass waives, the wind-down a pass gets once the deadline has fired,
 * and the report that stands for a pass left running past it.
 */

/** After a time bound aborts a pass, how long its calls get to wind down before the pass is left. */
export const ABORT_SETTLE_MS = 1_000;

/** What a cut-off report says of a pass left running past the wind-down. */
const LEFT_RUNNING = 'cut off by the time bound; calls still in flight were abandoned';

export interface TimeBound {
  controller: AbortController;
  /** Aborts `ms` after the bound was made (or sooner, through `controller`). */
  signal: AbortSignal;
  /** The work is over: the timer goes. */
  clear: () => void;
}

/** A deadline: its signal aborts `ms` from now, with a reason naming the option. */
export function timeBound(option: string, ms: number, controller = new AbortController()): TimeBound {
  // Every store call in flight listens to its deadline (each removes its listener when done):
  // with a pool of transfers and several stores, far more than Node's default 10 is normal.
  setMaxListeners(0, controller.signal);
  const timer = setTimeout(() => controller.abort(new Error(`${option} (${ms / 1000} s) ran out`)), ms);
  return { controller, signal: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * The options of a final pass (finalize's final sync and flush, recover's pass): the deletion
 * grace and the new-file settle waived, so every file is taken as it is, and what the scan
 * could not read is read again a few times within the deadline before it is named unpushed.
 */
export function finalPassOptions(now: number, signal: AbortSignal, pushOnly: boolean, remote?: RemoteReadMode): PassOptions {
  return { now, graceMs: 0, settleMs: 0, pushOnly, signal, ...(remote !== undefined && { remote }), rereadUnreadable: true };
}

/**
 * The passes' reports, in order: all of them when they end before `signal` aborts; otherwise
 * each one that ends within ABORT_SETTLE_MS of the abort, and null for one still running then
 * (it is left to wind down on its own; its report never comes). `interrupted`: the signal
 * aborted before every pass had ended, so some may still be winding down.
 */
export async function passesWithin(
  pending: readonly Promise<StoreSyncReport>[],
  signal: AbortSignal,
): Promise<{ reports: (StoreSyncReport | null)[]; interrupted: boolean }> {
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<null>((resolve) => {
    if (signal.aborted) return resolve(null);
    onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  let all: StoreSyncReport[] | null;
  try {
    all = await Promise.race([Promise.all(pending), aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
  if (all) return { reports: all, interrupted: false };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ABORT_SETTLE_MS);
  });
  try {
    return { reports: await Promise.all(pending.map((pass) => Promise.race([pass, late]))), interrupted: true };
  } finally {
    clearTimeout(timer);
  }
}

/** The report of a store's pass that a time bound stopped before it could report itself. */
export function cutOffReport(mount: MountedStore, reason: string = LEFT_RUNNING): StoreSyncReport {
  const cut = emptyReport(mount);
  cut.status = 'skipped';
  cut.code = 'time_bound';
  cut.reason = reason;
  return cut;
}
