import { escapeForTerminal } from '@memory-mounter/core';
import cliProgress from 'cli-progress';
import type { FinalizeReport, MemoryMounter, ProgressEvent, RecoveryReport, StoreSyncReport, SyncReport } from '@memory-mounter/core';
import type { FolderDiff } from './local-diff.js';


/** How a write fails once the reader is gone: a closed pipe, a terminal that went away (EIO after SIGHUP). */
const READER_GONE = new Set(['EPIPE', 'EIO', 'ERR_STREAM_DESTROYED']);
const onStdoutClosed = new Set<() => void>();
let stdoutWatched = false;

/** Listens once per process (main may run more than once in one, in tests) for stdout going away. */
function watchStdout(callback: () => void): void {
  onStdoutClosed.add(callback);
  if (stdoutWatched) return;
  stdoutWatched = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (!READER_GONE.has(err.code ?? '')) throw err;
    for (const closed of onStdoutClosed) closed();
  });
  // A closed stderr (`2>&1 | head`) is as quiet: what it would have shown has nowhere to go.
  process.stderr.on('error', () => undefined);
}

/** Paths a pass line names per kind of change before it says "+N more" (all with --verbose). */
const PATHS_PER_LINE = 3;

/**
 * Everything the CLI prints. Human lines on stdout (errors on stderr), each escaped for the
 * terminal; with --json, one JSON object per line instead, each with an `event`. A progress bar
 * (cli-progress) on stdout only when it is a TTY and not --json, cleared when the phase completes.
 *
 * A stdout that closes under the CLI (`| head`, a reader that quit) is no error: the write's EPIPE
 * marks it closed, nothing more is written to it, and `onClosed` tells the command (a mount then
 * finishes as on SIGTERM).
 */
export class Output {
  readonly #tty: boolean;
  readonly #verbose: boolean;
  #bar: cliProgress.SingleBar | null = null;
  #closed = false;
  #onClosed: (() => void) | null = null;
  /** Pending deletions already shown, with the monotonic instant they were first reported. */
  readonly #pendingShown = new Map<string, number>();

  constructor(
    readonly json: boolean,
    opts: { verbose?: boolean } = {},
  ) {
    this.#tty = !json && process.stdout.isTTY === true;
    this.#verbose = opts.verbose === true;
    watchStdout(() => this.#closeStdout());
  }

  /** Whether stdout has closed under the CLI. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Called once, when stdout closes. */
  set onClosed(callback: (() => void) | null) {
    this.#onClosed = callback;
    if (callback && this.#closed) callback();
  }

  /** The CLI's own text (help), written as it is. */
  text(s: string): void {
    this.#write(`${s}\n`);
  }

  /** Human lines (each escaped for the terminal; a line never spans two), or `data` with --json. */
  note(lines: string | readonly string[], data: Record<string, unknown>): void {
    this.#clearBar();
    if (this.json) this.#json(data);
    else this.#lines(typeof lines === 'string' ? [lines] : lines);
  }

  error(message: string, code: string): void {
    this.#clearBar();
    if (this.json) this.#json({ event: 'error', code, message });
    else process.stderr.write(`memory-mounter: ${escapeForTerminal(message)}\n`);
  }

  /** Per-file lines (--json) and the progress bar (TTY) from the mounter's events. */
  follow(mounter: MemoryMounter): void {
    mounter.on('progress', (p) => this.#progress(p));
    if (!this.json) return;
    for (const event of ['pulled', 'pushed', 'deleted', 'renamed', 'refused'] as const) {
      mounter.on(event, (e: { path: string }) => this.#json({ event, ...e }));
    }
    mounter.on('conflict', ({ localContent, ...e }) => this.#json({ event: 'conflict', ...e, localBytes: localContent.byteLength }));
  }

  /**
   * After a pass: one line per store that changed something or had problems (counts, a few
   * paths of each kind, all with --verbose), and one line per local deletion the pass did not
   * send yet, when it first shows up: with the seconds of grace it has left, or why it is never
   * sent (`--deletions log_only|disabled`). `startedAt` is the monotonic instant the pass was
   * asked for (the engine starts a deletion's grace at its pass's start). Returns whether the
   * pass reported problems.
   */
  pass(report: SyncReport, pass: { startedAt: number; graceS: number; deletions: string }): boolean {
    let problems = false;
    const now = performance.now();
    for (const s of report.stores) {
      problems ||= hasProblems(s);
      const parts = counts(s, this.#verbose ? Infinity : PATHS_PER_LINE);
      if (this.json) {
        if (parts.length > 0 || hasProblems(s)) this.#json({ event: 'pass', at: report.finishedAt, ...summary(s) });
      } else if (parts.length > 0 || hasProblems(s)) {
        const problemText = hasProblems(s) ? `; problems: ${problemsOf(s).join('; ')}` : '';
        this.note(`${clock(Date.parse(report.finishedAt))} ${parts.join(', ') || 'no changes'}${problemText} ${cost(s)}`, {});
      }
      this.#pendingDeletions(s, Date.parse(report.finishedAt), now, pass);
    }
    return problems;
  }

  #pendingDeletions(s: StoreSyncReport, at: number, now: number, pass: { startedAt: number; graceS: number; deletions: string }): void {
    const pending = new Set(s.pendingDeletions);
    // A deletion sent, or a file that came back: shown again if it goes missing again.
    for (const path of this.#pendingShown.keys()) if (!pending.has(path)) this.#pendingShown.delete(path);
    for (const path of s.pendingDeletions) {
      if (this.#pendingShown.has(path)) continue;
      this.#pendingShown.set(path, pass.startedAt);
      if (pass.deletions !== 'enabled') {
        this.note(`${clock(at)} ${path} deleted locally: not deleted in the store (--deletions ${pass.deletions})`, {
          event: 'pending_deletion',
          memoryStoreId: s.memoryStoreId,
          path,
          deleteInS: null,
          mode: pass.deletions,
        });
        continue;
      }
      const left = Math.max(0, Math.ceil(pass.graceS - (now - pass.startedAt) / 1000));
      this.note(`${clock(at)} ${path} deleted locally: deleted in the store in ${left} s unless it comes back (Ctrl-C deletes it now)`, {
        event: 'pending_deletion',
        memoryStoreId: s.memoryStoreId,
        path,
        deleteInS: left,
        mode: pass.deletions,
      });
    }
  }

  /**
   * The summary at the end of `mount`; returns whether it reports problems. `cutShort` names
   * what ended the final sync early (a second signal): the session then ends `aborted`.
   */
  finalized(report: FinalizeReport, opts: { cutShort?: string | null; dir: string }): boolean {
    const stores = [...(report.sync?.stores ?? []), ...report.flush.stores];
    const total = (key: 'pulled' | 'pushed' | 'deletedLocal' | 'deletedRemote' | 'conflicts') => stores.reduce((n, s) => n + s[key].length, 0);
    const problems = report.unpushed.length > 0 || report.leftInPlace.length > 0 || report.timedOut.sync || report.timedOut.flush;
    const outcome = opts.cutShort ? 'aborted' : report.outcome;
    const data = {
      event: 'finalized',
      outcome,
      ...(opts.cutShort && { cutShort: opts.cutShort }),
      pushed: total('pushed'),
      pulled: total('pulled'),
      deletedRemote: total('deletedRemote'),
      conflicts: total('conflicts'),
      unpushed: report.unpushed,
      removed: report.removed,
      leftInPlace: report.leftInPlace,
      timedOut: report.timedOut,
    };
    const kept = report.leftInPlace.some((l) => l.code === 'unpushed_kept' || l.code === 'unreadable_kept');
    this.note(
      [
        `finalized (${outcome}${opts.cutShort ? `: final sync cut short by ${opts.cutShort}` : ''}): final sync pushed ${data.pushed}, pulled ${data.pulled}, ` +
          `deleted ${data.deletedRemote} in the store, ${data.conflicts} conflict(s); removed ${report.removed.join(', ') || 'nothing'}`,
        ...report.leftInPlace.filter((l) => l.code === undefined).map((l) => `${l.path} left in place (${l.reason})`),
        ...report.unpushed.map((u) => `${u.path} not pushed (${u.reason})`),
        ...(kept
          ? [`${opts.dir} is kept with what was not pushed (and its record): \`memory-mounter recover\` pushes what it can and removes it once all is in the store`]
          : []),
      ],
      data,
    );
    return problems;
  }

  /** What `recover` did, folder by folder; returns whether something was left to do. */
  recovered(report: RecoveryReport, stores: RecoveryReport['stores']): boolean {
    if (this.json) {
      this.#json({ event: 'recovered', timedOut: report.timedOut, stores, unreadableRecords: report.unreadableRecords });
    } else {
      const lines: string[] = [];
      for (const s of stores) {
        const pushed = s.pushed.length > 0 ? `pushed ${s.pushed.length} (${shortList(s.pushed, this.#verbose ? Infinity : PATHS_PER_LINE)})` : 'nothing to push';
        if (s.outcome === 'recovered') lines.push(`${s.path} (${s.memoryStoreId}): ${s.neverMounted ? 'never finished downloading' : pushed}; removed`);
        else if (s.outcome === 'gone') lines.push(`${s.path} (${s.memoryStoreId}): already gone; its record removed`);
        else lines.push(`${s.path} (${s.memoryStoreId}): ${pushed}; left in place: ${s.left?.reason ?? 'unknown'}`);
        for (const p of s.conflicts) lines.push(`  ${p} changed in the store too: the store's version is kept`);
        for (const p of s.deletionsNotSent) lines.push(`  ${p} missing locally: still in the store (recover never deletes)`);
        for (const u of s.unpushed) lines.push(`  ${u.path} not pushed (${u.reason})`);
      }
      for (const r of report.unreadableRecords) lines.push(`record ${r.file} not used: ${r.reason}`);
      if (lines.length === 0) lines.push('nothing to recover: no folder a mount or pull left is recorded in the state dir');
      this.#lines(lines);
    }
    return report.timedOut || stores.some((s) => s.outcome === 'left') || report.unreadableRecords.length > 0;
  }

  diff(d: FolderDiff): void {
    if (this.json) return this.#json({ event: 'status', ...d });
    const lines = [`${d.dir} (${d.memoryStoreId})`];
    const list = (label: string, paths: readonly string[] | null) => {
      if (paths) for (const p of paths) lines.push(`  ${label.padEnd(15)} ${p}`);
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
    this.#lines(lines);
  }

  dryRun(d: FolderDiff): void {
    const conflicts = new Set(d.conflicts ?? []);
    const create = d.new.filter((p) => !conflicts.has(p));
    const update = d.modified.filter((p) => !conflicts.has(p));
    const remove = d.deleted.filter((p) => !conflicts.has(p));
    if (this.json) return this.#json({ event: 'dry_run', memoryStoreId: d.memoryStoreId, dir: d.dir, create, update, delete: remove, conflicts: d.conflicts });
    const lines = [`${d.dir} (${d.memoryStoreId}): a sync would send`];
    for (const p of create) lines.push(`  create  ${p}`);
    for (const p of update) lines.push(`  update  ${p}`);
    for (const p of remove) lines.push(`  delete  ${p}   (after the deletion grace period)`);
    for (const p of conflicts) lines.push(`  (none)  ${p}   conflict: the store's version wins`);
    if (create.length + update.length + remove.length === 0) lines.push('  nothing');
    this.#lines(lines);
  }

  #progress(p: ProgressEvent): void {
    if (!this.#tty || this.#closed || p.total === 0) return;
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
    // A download's total grows as each folder's listing answers, so its writes may catch up
    // with it before the last folder is listed: its bar goes with the next line printed.
    if (p.done >= p.total && p.phase !== 'materialize') this.#clearBar();
  }

  #clearBar(): void {
    if (!this.#closed) this.#bar?.stop();
    this.#bar = null;
  }

  #lines(lines: readonly string[]): void {
    this.#write(lines.map((l) => `${escapeForTerminal(l)}\n`).join(''));
  }

  #json(data: Record<string, unknown>): void {
    this.#write(`${JSON.stringify(data)}\n`);
  }

  #write(s: string): void {
    if (this.#closed) return;
    process.stdout.write(s);
  }

  #closeStdout(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#bar = null;
    this.#onClosed?.();
  }
}

/** `pushed 3 (/a.md /b.md /c.md)`, with at most `max` paths of each kind named. */
function counts(s: StoreSyncReport, max: number): string[] {
  const parts: string[] = [];
  const add = (label: string, paths: readonly string[]) => {
    if (paths.length > 0) parts.push(`${label} ${paths.length} (${shortList(paths, max)})`);
  };
  add('pushed', s.pushed);
  add('pulled', s.pulled);
  add('deleted locally', s.deletedLocal);
  add('deleted in the store', s.deletedRemote);
  add('renamed', s.renamed.map((r) => `${r.from} -> ${r.to}`));
  add('conflicts', s.conflicts);
  return parts;
}

function shortList(paths: readonly string[], max: number): string {
  if (paths.length <= max) return paths.join(' ');
  return `${paths.slice(0, max).join(' ')} +${paths.length - max} more; --verbose lists all`;
}

function hasProblems(s: StoreSyncReport): boolean {
  return s.status === 'failed' || s.errors.length > 0 || (s.status === 'skipped' && s.reason !== undefined);
}

function problemsOf(s: StoreSyncReport): string[] {
  return [...(s.reason && s.status !== 'synced' ? [s.reason] : []), ...s.errors.map((e) => `${e.path ?? ''} ${e.operation}: ${e.kind}`)];
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
    pendingDeletions: s.pendingDeletions,
    errors: s.errors,
    read: s.read ?? null,
    requests: s.requests,
  };
}

/** `[feed, 2 requests]`: how the pass read the store and what it cost it (`listing: interval`, `1 retried`...). */
function cost(s: StoreSyncReport): string {
  const read = s.read === undefined ? null : s.read.kind === 'listing' ? `listing: ${s.read.reason}` : s.read.kind;
  const { total, retries } = s.requests;
  const requests = `${total} request${total === 1 ? '' : 's'}${retries > 0 ? `, ${retries} retried` : ''}`;
  return `[${read === null ? requests : `${read}, ${requests}`}]`;
}

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}
