import cliProgress from 'cli-progress';
import { escapeForTerminal as shown } from '@memory-mounter/core';
import type { FinalizeReport, MemoryMounter, ProgressEvent, StoreSyncReport, SyncReport } from '@memory-mounter/core';
import type { FolderDiff } from './local-diff.js';

/**
 * Everything the CLI prints. Human lines on stdout (errors on stderr); with --json, one JSON
 * object per line instead, each with an `event`. A progress bar (cli-progress) on stdout only
 * when it is a TTY and not --json, cleared when the phase completes.
 *
 * Every path and reason in a human line goes through `shown` (core's `escapeForTerminal`) as the
 * line is built: a file name may hold ESC sequences, CR and LF, bidi controls. The lines' own
 * newlines are joined after. JSON lines keep JSON's escaping.
 */
export class Output {
  readonly #tty: boolean;
  #bar: cliProgress.SingleBar | null = null;

  constructor(readonly json: boolean) {
    this.#tty = !json && process.stdout.isTTY === true;
  }

  text(s: string): void {
    process.stdout.write(`${s}\n`);
  }

  note(line: string, data: Record<string, unknown>): void {
    this.#clearBar();
    if (this.json) this.#json(data);
    else this.text(line);
  }

  error(message: string, code: string): void {
    this.#clearBar();
    if (this.json) this.#json({ event: 'error', code, message });
    else process.stderr.write(`memory-mounter: ${shown(message)}\n`);
  }

  /** Per-file lines (--json) and the progress bar (TTY) from the mounter's events. */
  follow(mounter: MemoryMounter): void {
    mounter.on('progress', (p) => this.#progress(p));
    if (!this.json) return;
    for (const event of ['pulled', 'pushed', 'deleted', 'refused'] as const) {
      mounter.on(event, (e: { path: string }) => this.#json({ event, ...e }));
    }
    mounter.on('conflict', ({ localContent, ...e }) => this.#json({ event: 'conflict', ...e, localBytes: localContent.byteLength }));
  }

  /** One line for a pass that changed something; returns whether it reported problems. */
  pass(report: SyncReport): boolean {
    let problems = false;
    for (const s of report.stores) {
      problems ||= hasProblems(s);
      const parts = counts(s);
      if (this.json) {
        if (parts.length > 0 || hasProblems(s)) this.#json({ event: 'pass', at: new Date(report.finishedAt).toISOString(), ...summary(s) });
        continue;
      }
      if (parts.length === 0 && !hasProblems(s)) continue;
      const problemText = hasProblems(s) ? `; problems: ${problemsOf(s).join('; ')}` : '';
      this.note(`${clock(report.finishedAt)} ${parts.join(', ') || 'no changes'}${problemText}`, {});
    }
    return problems;
  }

  /** The summary at the end of `mount`; returns whether it reports problems. */
  finalized(report: FinalizeReport): boolean {
    const stores = [...(report.sync?.stores ?? []), ...report.flush.stores];
    const total = (key: 'pulled' | 'pushed' | 'deletedLocal' | 'deletedRemote' | 'conflicts') => stores.reduce((n, s) => n + s[key].length, 0);
    const problems = report.unpushed.length > 0 || report.leftInPlace.length > 0 || report.timedOut.sync || report.timedOut.flush;
    const data = {
      event: 'finalized',
      outcome: report.outcome,
      pushed: total('pushed'),
      pulled: total('pulled'),
      conflicts: total('conflicts'),
      unpushed: report.unpushed,
      removed: report.removed,
      leftInPlace: report.leftInPlace,
      timedOut: report.timedOut,
    };
    const left = report.leftInPlace.map((l) => `${shown(l.path)} left in place (${shown(l.reason)})`);
    const lost = report.unpushed.map((u) => `${shown(u.path)} not pushed (${shown(u.reason)})`);
    this.note(
      [
        `finalized (${report.outcome}): final sync pushed ${data.pushed}, pulled ${data.pulled}, ${data.conflicts} conflict(s); removed ${report.removed.map(shown).join(', ') || 'nothing'}`,
        ...left,
        ...lost,
      ].join('\n'),
      data,
    );
    return problems;
  }

  diff(d: FolderDiff): void {
    if (this.json) return this.#json({ event: 'status', ...d });
    const lines = [`${shown(d.dir)} (${shown(d.memoryStoreId)})`];
    const list = (label: string, paths: readonly string[] | null) => {
      if (paths) for (const p of paths) lines.push(`  ${label.padEnd(15)} ${shown(p)}`);
    };
    list('new', d.new);
    list('modified', d.modified);
    list('deleted', d.deleted);
    list('changed remote', d.remoteChanged);
    list('conflict', d.conflicts);
    list('not readable', d.blocked);
    const clean = d.new.length + d.modified.length + d.deleted.length + (d.remoteChanged?.length ?? 0) === 0;
    if (clean) lines.push('  in sync with its baseline' + (d.remoteChanged ? ' and the store' : ' (store not asked)'));
    else if (!d.remoteChanged) lines.push('  (store not asked: local changes only)');
    this.text(lines.join('\n'));
  }

  dryRun(d: FolderDiff): void {
    const conflicts = new Set(d.conflicts ?? []);
    const create = d.new.filter((p) => !conflicts.has(p));
    const update = d.modified.filter((p) => !conflicts.has(p));
    const remove = d.deleted.filter((p) => !conflicts.has(p));
    if (this.json) return this.#json({ event: 'dry_run', memoryStoreId: d.memoryStoreId, dir: d.dir, create, update, delete: remove, conflicts: d.conflicts });
    const lines = [`${shown(d.dir)} (${shown(d.memoryStoreId)}): a sync would send`];
    for (const p of create) lines.push(`  create  ${shown(p)}`);
    for (const p of update) lines.push(`  update  ${shown(p)}`);
    for (const p of remove) lines.push(`  delete  ${shown(p)}   (after the deletion grace period)`);
    for (const p of conflicts) lines.push(`  (none)  ${shown(p)}   conflict: the store's version wins`);
    if (create.length + update.length + remove.length === 0) lines.push('  nothing');
    this.text(lines.join('\n'));
  }

  #progress(p: ProgressEvent): void {
    if (!this.#tty || p.total === 0) return;
    if (!this.#bar) {
      const verb = p.phase === 'materialize' ? 'downloading' : 'final sync';
      this.#bar = new cliProgress.SingleBar(
        { format: `${verb} [{bar}] {value}/{total}`, barsize: 24, clearOnComplete: true, stream: process.stdout },
        cliProgress.Presets.legacy,
      );
      this.#bar.start(p.total, p.done);
    }
    this.#bar.setTotal(p.total);
    this.#bar.update(p.done);
    if (p.done >= p.total) this.#clearBar();
  }

  #clearBar(): void {
    this.#bar?.stop();
    this.#bar = null;
  }

  #json(data: Record<string, unknown>): void {
    process.stdout.write(`${JSON.stringify(data)}\n`);
  }
}

function counts(s: StoreSyncReport): string[] {
  const parts: string[] = [];
  const add = (label: string, paths: readonly string[]) => {
    if (paths.length > 0) parts.push(`${label} ${paths.length} (${paths.map(shown).join(' ')})`);
  };
  add('pushed', s.pushed);
  add('pulled', s.pulled);
  add('deleted locally', s.deletedLocal);
  add('deleted in the store', s.deletedRemote);
  add('renamed', s.renamed.map((r) => `${r.from} -> ${r.to}`));
  add('conflicts', s.conflicts);
  return parts;
}

function hasProblems(s: StoreSyncReport): boolean {
  return s.status === 'failed' || s.errors.length > 0 || (s.status === 'skipped' && s.reason !== undefined);
}

function problemsOf(s: StoreSyncReport): string[] {
  return [...(s.reason && s.status !== 'synced' ? [shown(s.reason)] : []), ...s.errors.map((e) => `${shown(e.path ?? '')} ${e.operation}: ${e.kind}`)];
}

function summary(s: StoreSyncReport) {
  return {
    memoryStoreId: s.memoryStoreId,
    status: s.status,
    pushed: s.pushed,
    pulled: s.pulled,
    deletedLocal: s.deletedLocal,
    deletedRemote: s.deletedRemote,
    renamed: s.renamed,
    conflicts: s.conflicts,
    errors: s.errors,
  };
}

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}
