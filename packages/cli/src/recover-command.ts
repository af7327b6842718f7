import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { MemoryMounter, type RecoveryReport } from '@memory-mounter/core';
import { connect } from './connect.js';
import { recordsIn } from './local-diff.js';
import type { Output } from './output.js';
import { EXIT, UsageError } from './usage.js';

/**
 * `memory-mounter recover [dir]`: the library's `MemoryMounter.recover` over the CLI's state dir.
 *
 * A CLI mount's memoryRoot is the folder that holds it, so records differ in memory root; the
 * library recovers one root at a time and leaves the records of other roots alone
 * (`outside_memory_root`), so it runs once per root the records name, and each run's report is
 * kept for its own root's folders only. With `dir`, only that folder's record: its root, and its
 * store (`memoryStoreIds`). Records whose process still runs are left (`owner_alive`).
 */
export async function recoverCommand(
  opts: { dirArg: string | undefined; stateDir: string; flags: { emulator?: boolean | undefined; 'base-url'?: string | undefined } },
  out: Output,
): Promise<number> {
  let records = await recordsIn(opts.stateDir);
  if (opts.dirArg !== undefined) {
    const wanted = resolve(opts.dirArg);
    // The folder may be gone while its record stays: compare with the path as given too.
    const real = await realpath(wanted).catch(() => wanted);
    records = records.filter((r) => r.host_path === real || r.host_path === wanted);
    if (records.length === 0) throw new UsageError(`no record of a mount at ${opts.dirArg} in ${opts.stateDir}: nothing to recover there`);
  }
  // Entries under a root that no record names are the user's own files there: not reported.
  const empty: RecoveryReport = { startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), timedOut: false, stores: [], unreadableRecords: [], unvouched: [] };
  if (records.length === 0) {
    out.recovered(empty, []);
    return EXIT.ok;
  }
  const connection = await connect(opts.flags);
  try {
    const roots = [...new Set(records.map((r) => r.memory_root))].sort();
    const stores: RecoveryReport['stores'] = [];
    let timedOut = false;
    const unreadable = new Map<string, RecoveryReport['unreadableRecords'][number]>();
    for (const root of roots) {
      const mine = records.filter((r) => r.memory_root === root);
      const report = await MemoryMounter.recover({
        storeClient: connection.storeClient,
        stateDir: opts.stateDir,
        memoryRoot: root,
        ...(opts.dirArg !== undefined && { memoryStoreIds: mine.map((r) => r.memory_store_id) }),
      });
      const paths = new Set(mine.map((r) => r.host_path));
      stores.push(...report.stores.filter((s) => paths.has(s.path)));
      timedOut ||= report.timedOut;
      for (const u of report.unreadableRecords) unreadable.set(u.file, u);
    }
    const merged = { ...empty, timedOut, stores, unreadableRecords: [...unreadable.values()] };
    return out.recovered(merged, stores) ? EXIT.syncProblems : EXIT.ok;
  } finally {
    await connection.close();
  }
}
