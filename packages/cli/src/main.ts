import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  MemoryConfigError,
  MemoryMounter,
  mountablePathProblem,
  type DeletionMode,
  type FinalizeReport,
  type StoreClient,
  type SyncReport,
} from '@memory-mounter/core';
import { connect, type Connection } from './connect.js';
import { handleItemCommand } from './handle-item.js';
import { diffFolder, findRecord, recordFor, type FolderDiff } from './local-diff.js';
import { explainMountError, type MountTargetWords } from './mount-errors.js';
import { Output } from './output.js';
import { recoverCommand } from './recover-command.js';
import { StopRequests } from './stop-requests.js';
import { CommandError, DELETE_GRACE_S, EXIT, HELP, MAX_INTERVAL_S, UsageError } from './usage.js';

const COMMON = {
  emulator: { type: 'boolean' },
  'base-url': { type: 'string' },
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const DELETION_MODES: readonly DeletionMode[] = ['enabled', 'log_only', 'disabled'];

/** Each command, by its name on the command line: given the arguments after the name, it resolves to the exit code. */
const COMMANDS: Readonly<Record<string, (args: readonly string[], out: Output) => Promise<number>>> = {
  mount: mountCommand,
  pull: pullCommand,
  status: statusCommand,
  push: pushCommand,
  recover,
  'handle-item': handleItem,
};

/** Runs one command line; resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const out = new Output(argv.includes('--json'), { verbose: argv.includes('--verbose') });
  try {
    // Own keys only: `constructor` or `toString` is an unknown command, not a property.
    const run = command !== undefined && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (run) return await run(rest, out);
    switch (command) {
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        out.text(HELP.main!);
        return command === undefined ? EXIT.usage : EXIT.ok;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}; run memory-mounter --help`);
    }
  } catch (err) {
    if (err instanceof UsageError || err instanceof MemoryConfigError || isParseError(err)) {
      out.error(err instanceof Error ? err.message : String(err), 'usage');
      return EXIT.usage;
    }
    if (err instanceof CommandError) {
      out.error(err.message, err.code);
      return err.exitCode;
    }
    throw err;
  }
}

/** Every flag any command takes; parseArgs (strict) refuses those a command does not list. */
interface Flags {
  emulator?: boolean;
  'base-url'?: string;
  'state-dir'?: string;
  json?: boolean;
  verbose?: boolean;
  help?: boolean;
  interval?: string;
  'read-only'?: boolean;
  deletions?: string;
  'dry-run'?: boolean;
  local?: boolean;
  workdir?: string;
  'memory-root'?: string;
}

function parse(args: readonly string[], extra: ParseArgsConfig['options'], command: string): { values: Flags; positionals: string[]; help: string | null } {
  const parsed = parseArgs({ args: [...args], options: { ...COMMON, ...extra }, allowPositionals: true, strict: true });
  const values = parsed.values as Flags;
  return { values, positionals: parsed.positionals, help: values.help === true ? HELP[command]! : null };
}

function isParseError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof TypeError && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

/** Where mount records are kept: --state-dir, $MEMORY_MOUNTER_STATE_DIR, $XDG_STATE_HOME/memory-mounter, ~/.local/state/memory-mounter. */
export function stateDirOf(flag: string | undefined): string {
  if (flag) return resolve(flag);
  if (process.env.MEMORY_MOUNTER_STATE_DIR) return resolve(process.env.MEMORY_MOUNTER_STATE_DIR);
  const base = process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(base, 'memory-mounter');
}

async function ensureStateDir(dir: string): Promise<string> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return await realpath(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new UsageError(`the state dir ${dir} cannot be made (${code}): give another with --state-dir or $MEMORY_MOUNTER_STATE_DIR`);
  }
}

/** `--interval` in seconds: a number > 0, at most an hour. */
function intervalOf(flag: string | undefined): number {
  if (flag === undefined) return 15;
  const s = Number(flag);
  if (!(flag.trim() !== '' && Number.isFinite(s) && s > 0)) throw new UsageError(`--interval takes seconds, a number > 0; got ${JSON.stringify(flag)}`);
  if (s > MAX_INTERVAL_S) {
    const hint = s / 1000 <= MAX_INTERVAL_S ? ` (--interval is in seconds: ${s / 1000} for ${s} ms)` : '';
    throw new UsageError(`--interval takes seconds, at most ${MAX_INTERVAL_S} (an hour); got ${flag}${hint}`);
  }
  return s;
}

function deletionsOf(flag: string | undefined): DeletionMode {
  if (flag === undefined) return 'enabled';
  if (!DELETION_MODES.includes(flag as DeletionMode)) throw new UsageError(`--deletions takes ${DELETION_MODES.join(', ')}; got ${JSON.stringify(flag)}`);
  return flag as DeletionMode;
}

/** A store folder to make, from a command line; every flag checked before anything starts. */
interface MountTarget extends MountTargetWords {
  /** The folder's real path: under the real path of the folder that holds it. */
  dir: string;
  /** The folder that holds it: the library's memoryRoot. */
  parent: string;
  name: string;
  intervalS: number;
  deletions: DeletionMode;
  readOnly: boolean;
}

/**
 * Checks a mount or pull command line without side effects beyond making the state dir: the
 * flags, the folder (relative to the current folder; it must not exist, its parent must), its
 * name, the state dir. An error here is a usage error, before any emulator or connection starts.
 */
async function mountTarget(id: string | undefined, dirArg: string | undefined, values: Flags): Promise<MountTarget> {
  if (!id) throw new UsageError('a memory_store_id is needed');
  const intervalS = intervalOf(values.interval);
  const deletions = deletionsOf(values.deletions);
  const shown = dirArg ?? `.${sep}${id}`;
  const wanted = resolve(dirArg ?? id);
  const parent = await realpath(dirname(wanted)).catch(() => {
    throw new UsageError(`${dirname(shown)} does not exist: create the folder that will hold ${basename(wanted)}`);
  });
  const name = basename(wanted);
  const problem = mountablePathProblem(`/${name}`);
  if (problem) throw new UsageError(`${shown} cannot hold a store: its name ${problem}`);
  // The library keeps its records out of reach of the folder it mounts into: checked as
  // written before the state dir is made, and as resolved after.
  const refuseInside = (stateDir: string) => {
    const inside = relative(parent, stateDir);
    if (inside !== '' && (inside.startsWith('..') || inside.startsWith(sep))) return;
    throw new UsageError(
      `the state dir ${stateDir} is inside ${parent}, the folder that holds ${shown}: ` +
        `mount into a folder that does not contain it, or give another state dir with --state-dir`,
    );
  };
  refuseInside(stateDirOf(values['state-dir']));
  const stateDir = await ensureStateDir(stateDirOf(values['state-dir']));
  refuseInside(stateDir);
  const dir = join(parent, name);
  if (await lstat(dir).catch(() => null)) {
    const record = await recordFor(stateDir, dir);
    throw new CommandError(
      record
        ? `${shown} already exists: a mount (or pull) of ${record.memory_store_id} left it, with its record in ${stateDir}. ` +
            '`memory-mounter recover` pushes what it holds and removes it; then mount again'
        : `${shown} already exists: mount and pull make the folder themselves; give one that does not exist yet`,
      'mount_path_exists',
      EXIT.usage,
    );
  }
  return { id, shown, stateDir, dir, parent, name, intervalS, deletions, readOnly: values['read-only'] === true };
}

/** The mounter and the resource for a target. */
function mounterFor(t: MountTarget, storeClient: StoreClient) {
  const mounter = new MemoryMounter({
    storeClient,
    memoryRoot: t.parent,
    stateDir: t.stateDir,
    memory_sync_interval: t.intervalS,
    memory_sync_deletions: t.deletions,
    deleteGracePeriod: DELETE_GRACE_S,
    // A final sync cut short (a second Ctrl-C) keeps what it did not push, for `recover`.
    keepUnpushed: true,
  });
  const resource = {
    type: 'memory_store' as const,
    memory_store_id: t.id,
    name: t.name,
    mount_path: `/mnt/memory/${t.name}`,
    access: t.readOnly ? ('read_only' as const) : ('read_write' as const),
  };
  return { mounter, resource };
}

/**
 * Downloads the target's store. Stop requests are in place before, so a Ctrl-C during the
 * download stops it and the library removes what it wrote (folder and record): resolves to
 * false then. Other failures throw, in the CLI's words.
 */
async function download(mounter: MemoryMounter, resource: object & { type: string }, t: MountTarget, stops: StopRequests, out: Output): Promise<boolean> {
  out.note(`downloading ${t.id} into ${t.dir}`, { event: 'downloading', memoryStoreId: t.id, dir: t.dir });
  if (stops.stop.aborted) return false;
  try {
    await mounter.materialize([resource], { signal: stops.stop });
    return true;
  } catch (err) {
    if (stops.stop.aborted) return false;
    throw explainMountError(err, t);
  }
}

function interrupted(t: MountTarget, stops: StopRequests, out: Output): number {
  out.note(`stopped by ${stops.firstReason} during the download: nothing was left behind`, {
    event: 'interrupted',
    memoryStoreId: t.id,
    dir: t.dir,
    by: stops.firstReason,
  });
  return stops.interruptedExitCode;
}

async function mountCommand(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals, help } = parse(
    args,
    { interval: { type: 'string' }, 'read-only': { type: 'boolean' }, deletions: { type: 'string' } },
    'mount',
  );
  if (help) return out.text(help), EXIT.ok;
  if (positionals.length < 1 || positionals.length > 2) throw new UsageError('mount takes <memory_store_id> [dir]');
  const target = await mountTarget(positionals[0], positionals[1], values);
  const announce = (connection: Connection) => {
    if (connection.emulator) out.note(`emulator: ${connection.baseURL} (store memstore_demo)`, { event: 'emulator', baseURL: connection.baseURL });
  };
  return downloadThen(target, values, out, announce, async (mounter, stops) => {
    const problems = await runUntilStopped(mounter, target, stops, out);
    return problems ? EXIT.syncProblems : EXIT.ok;
  });
}

/**
 * Connects (`connected` sees the connection first), downloads the target's store, then hands
 * the mounter to `next`: the connection and the stop requests last until `next` ends. A
 * download a stop request cut short ends as `interrupted` says, without `next`.
 */
async function downloadThen(
  t: MountTarget,
  values: Flags,
  out: Output,
  connected: (connection: Connection) => void,
  next: (mounter: MemoryMounter, stops: StopRequests) => Promise<number>,
): Promise<number> {
  const stops = new StopRequests();
  out.onClosed = () => stops.request('stdout closed');
  try {
    const connection = await connect(values);
    try {
      connected(connection);
      const { mounter, resource } = mounterFor(t, connection.storeClient);
      out.follow(mounter);
      if (!(await download(mounter, resource, t, stops, out))) return interrupted(t, stops, out);
      return await next(mounter, stops);
    } finally {
      await connection.close();
    }
  } finally {
    stops.dispose();
  }
}

/**
 * Syncs on the interval and on file changes until the first stop request; then finalizes, cut
 * short by a second one. Resolves to "problems were reported".
 */
async function runUntilStopped(mounter: MemoryMounter, t: MountTarget, stops: StopRequests, out: Output): Promise<boolean> {
  let problems = false;
  let again = false;
  let running: Promise<void> | null = null;
  const passInfo = { graceS: DELETE_GRACE_S, deletions: t.deletions };
  const sync = (force: boolean) => {
    if (stops.stop.aborted) return;
    if (running) {
      again ||= force;
      return;
    }
    const startedAt = performance.now();
    running = mounter
      .reconcile({ force })
      .then((report) => {
        if (report) problems = out.pass(report, { ...passInfo, startedAt }) || problems;
      })
      .catch((err: unknown) => {
        if (!stops.stop.aborted) out.error(`sync failed: ${err instanceof Error ? err.message : String(err)}`, 'sync_failed');
      })
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          sync(true);
        }
      });
  };
  const timer = setInterval(() => sync(false), Math.min(1_000, t.intervalS * 1000));
  // fs.watch (recursive: Linux since Node 20, macOS, Windows): a change anywhere in the folder
  // asks for a pass soon after (debounced, so an editor's save is one pass, not five).
  let debounce: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(t.dir, { recursive: true }, () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => sync(true), 300);
    });
    watcher.on('error', () => undefined);
  } catch {
    out.note('file watching unavailable here: syncing on the interval only', { event: 'no_watch' });
  }
  // Said once the watcher is in place: an edit made after this line is seen.
  const [mount] = mounter.mounts;
  out.note(`mounted ${t.id} at ${t.dir} (${mount!.access}); syncing every ${t.intervalS} s and on file changes; Ctrl-C to finish`, {
    event: 'mounted',
    memoryStoreId: t.id,
    dir: t.dir,
    access: mount!.access,
    status: mounter.status()[0],
  });
  if (!stops.stop.aborted) await new Promise<void>((resolveStop) => stops.stop.addEventListener('abort', () => resolveStop(), { once: true }));
  clearInterval(timer);
  clearTimeout(debounce);
  watcher?.close();
  out.note(`finishing (${stops.firstReason}): final sync, then removing the folder; again to cut it short`, { event: 'finalizing', by: stops.firstReason });
  // finalize stops a pass still running itself; a second request cuts the final sync short.
  const report: FinalizeReport = await mounter.finalize({ outcome: 'completed', signal: stops.hurry });
  await running;
  return out.finalized(report, { cutShort: stops.secondReason, dir: t.shown }) || problems;
}

async function handleItem(args: readonly string[], out: Output): Promise<number> {
  const { values, help } = parse(
    args,
    { workdir: { type: 'string' }, 'memory-root': { type: 'string' }, interval: { type: 'string' }, deletions: { type: 'string' } },
    'handle-item',
  );
  if (help) return out.text(help), EXIT.ok;
  if (values.emulator) throw new UsageError('handle-item serves an item the service handed out: --emulator has none (point --base-url at an emulator instead)');
  const stateDir = await ensureStateDir(stateDirOf(values['state-dir']));
  return handleItemCommand(values, stateDir, out);
}

async function pullCommand(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals, help } = parse(args, {}, 'pull');
  if (help) return out.text(help), EXIT.ok;
  if (positionals.length !== 2) throw new UsageError('pull takes <memory_store_id> <dir>');
  const target = await mountTarget(positionals[0], positionals[1], values);
  return downloadThen(target, values, out, () => {}, async (mounter) => {
    // Left mounted on purpose (not finalized): the folder stays, its record says what was pulled.
    const [s] = mounter.status();
    out.note(`pulled ${target.id} into ${target.dir}`, { event: 'pulled_store', memoryStoreId: target.id, dir: target.dir, status: s });
    return EXIT.ok;
  });
}

async function statusCommand(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals, help } = parse(args, { local: { type: 'boolean' } }, 'status');
  if (help) return out.text(help), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError('status takes <dir>');
  const diff = await localOrRemoteDiff(positionals[0]!, values);
  out.diff(diff);
  return EXIT.ok;
}

async function pushCommand(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals, help } = parse(args, { 'dry-run': { type: 'boolean' }, local: { type: 'boolean' } }, 'push');
  if (help) return out.text(help), EXIT.ok;
  if (!values['dry-run']) throw new UsageError('push sends nothing by itself: run `push <dir> --dry-run` to see what a sync would send, and `mount` to sync');
  if (positionals.length !== 1) throw new UsageError('push takes <dir>');
  const diff = await localOrRemoteDiff(positionals[0]!, values);
  out.dryRun(diff);
  return EXIT.ok;
}

async function recover(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals, help } = parse(args, {}, 'recover');
  if (help) return out.text(help), EXIT.ok;
  if (positionals.length > 1) throw new UsageError('recover takes at most one <dir>');
  return recoverCommand({ dirArg: positionals[0], stateDir: stateDirOf(values['state-dir']), flags: values }, out);
}

/** The store is asked when it can be (--emulator, --base-url or ANTHROPIC_API_KEY) and --local is not given. */
async function localOrRemoteDiff(dir: string, values: Flags): Promise<FolderDiff> {
  const stateDir = stateDirOf(values['state-dir']);
  if (!(await stat(stateDir).catch(() => null))) throw new UsageError(`no state dir ${stateDir}: nothing was mounted or pulled with it`);
  const record = await findRecord(stateDir, dir);
  const remote = !values.local && (values.emulator || values['base-url'] !== undefined || process.env.ANTHROPIC_API_KEY);
  if (!remote) return diffFolder(record, null);
  const connection = await connect(values);
  try {
    return await diffFolder(record, connection.storeClient);
  } finally {
    await connection.close();
  }
}

export type { SyncReport, FinalizeReport };
