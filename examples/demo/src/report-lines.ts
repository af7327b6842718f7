import type { FinalizeReport, StoreSyncReport, SyncReport } from '@memory-mounter/core';

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** One store's pass in a line: what moved, which way. Empty when nothing happened. */
export function storeSummary(s: StoreSyncReport, graceSeconds?: number): string {
  const parts: string[] = [];
  const list = (label: string, paths: readonly string[]) => {
    if (paths.length > 0) parts.push(`${label} ${paths.join(', ')}`);
  };
  // A conflict is also a pull; name it once, as what it is.
  list('pulled', s.pulled.filter((p) => !s.conflicts.includes(p)));
  list('store won conflict on', s.conflicts);
  list('pushed', s.pushed);
  list('deleted locally', s.deletedLocal);
  list('deleted in the store', s.deletedRemote);
  list(graceSeconds === undefined ? 'deletion pending' : `deletion pending (${graceSeconds} s grace)`, s.pendingDeletions);
  for (const e of s.errors) parts.push(`${e.operation} ${e.path ?? ''} failed (${e.kind})`);
  if (s.status !== 'synced') parts.push(`${s.status}${s.reason ? `: ${s.reason}` : ''}`);
  return parts.length > 0 ? `${s.name}: ${parts.join(' · ')}` : '';
}

/** Lines for a whole pass; one line saying so when nothing moved. */
export function syncLines(report: SyncReport, graceSeconds?: number): string[] {
  const lines = report.stores.map((s) => storeSummary(s, graceSeconds)).filter(Boolean);
  return lines.length > 0 ? lines : ['nothing moved'];
}

/** The finalize report in a line, plus the folders it removed or left. */
export function finalizeLines(report: FinalizeReport): { summary: string; details: string[] } {
  const moved = [report.sync, report.flush]
    .flatMap((pass) => pass?.stores ?? [])
    .map((s) => storeSummary(s))
    .filter(Boolean);
  const cut = report.timedOut.sync || report.timedOut.flush ? 'TIMED OUT' : 'nothing cut off';
  const summary = [`finalize('${report.outcome}')`, ...moved, `removed ${plural(report.removed.length, 'folder')}`, cut].join(' · ');
  const details = [
    ...report.removed.map((path) => `removed ${path}`),
    ...report.leftInPlace.map(({ path, reason }) => `left in place ${path}: ${reason}`),
  ];
  return { summary, details };
}
