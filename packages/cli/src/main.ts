import { watch, type FSWatcher } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  MemoryConfigError,
  MemoryMountError,
  MemoryMounter,
  type DeletionMode,
  type FinalizeReport,
  type SyncReport,
} from '@memory-mounter/core';
import { connect } from './connect.js';
import { handleItemCommand } from './handle-item.js';
import { diffFolder, findRecord, type FolderDiff } from './local-diff.js';
import { Output } from './output.js';
import { EXIT, HELP, UsageError } from './usage.js';

const COMMON = {
  emulator: { type: 'boolean' },
  'base-url': { type: 'string' },
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Runs one command line; resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const out = new Output(argv.includes('--json'));
  try {
    switch (command) {
      case 'mount':
        return await mountCommand(rest, out);
      case 'pull':
        return await pullCommand(rest, out);
      case 'status':
        return await statusCommand(rest, out);
      case 'push':
        return await pushCommand(rest, out);
      case 'handle-item':
        return await handleItem(rest, out);
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
    if (err instanceof MemoryMountError) {
      out.error(`${err.code}: ${err.message}`, err.code);
      // A folder already there, a root missing: the command line's to fix.
      return err.code === 'download_failed' ? EXIT.syncProblems : EXIT.usage;
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
function stateDirOf(flag: string | undefined): string {
  if (flag) return resolve(flag);
  if (process.env.MEMORY_MOUNTER_STATE_DIR) return resolve(process.env.MEMORY_MOUNTER_STATE_DIR);
  const base = process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(base, 'memory-mounter');
}

async function ensureStateDir(dir: string): Promise<string> {
  const { mkdir } = await import('node:fs/promises');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return realpath(dir);
}

/** The mounter for a store folder at `dir`: memoryRoot is its parent, the mount path its name. */
async function mounterFor(
  id: string | undefined,
  dirArg: string | undefined,
  values: { 'state-dir'?: string | undefined; interval?: string | undefined; deletions?: string | undefined; 'read-only'?: boolean | undefined },
  storeClient: import('@memory-mounter/core').StoreClient,
) {
  if (!id) throw new UsageError('a memory_store_id is needed');
  const dir = resolve(dirArg ?? id);
  const parent = await realpath(dirname(dir)).catch(() => {
    throw new UsageError(`${dirname(dir)} does not exist: create the folder that will hold ${basename(dir)}`);
  });
  const name = basename(dir);
  const interval = values.interval === undefined ? undefined : Number(values.interval);
  if (values.interval !== undefined && !(Number.isFinite(interval) && interval! > 0)) {
    throw new UsageError(`--interval takes seconds, a number > 0; got ${JSON.stringify(values.interval)}`);
  }
  const stateDir = await ensureStateDir(stateDirOf(values['state-dir']));
  const mounter = new MemoryMounter({
    storeClient,
    memoryRoot: parent,
    stateDir,
    ...(interval !== undefined && { memory_sync_interval: interval }),
    ...(values.deletions !== undefined && { memory_sync_deletions: values.deletions as DeletionMode }),
  });
  const resource = {
    type: 'memory_store' as const,
    memory_store_id: id,
    name,
    mount_path: `/mnt/memory/${name}`,
    access: values['read-only'] ? ('read_only' as const) : ('read_write' as const),
  };
  return { mounter, resource, dir: join(parent, name) };
}

async function mountCommand(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals, help } = parse(
    args,
    { interval: { type: 'string' }, 'read-only': { type: 'boolean' }, deletions: { type: 'string' } },
    'mount',
  );
  if (help) return out.text(help), EXIT.ok;
  const connection = await connect(values);
  try {
    if (connection.emulator) out.note(`emulator: ${connection.baseURL} (store memstore_demo)`, { event: 'emulator', baseURL: connection.baseURL });
    const { mounter, resource, dir } = await mounterFor(positionals[0], positionals[1], values, connection.storeClient);
    out.follow(mounter);
    const [mount] = await mounter.materialize([resource]);
    const files = mounter.status()[0];
    out.note(`mounted ${mount!.memoryStoreId} at ${dir} (${mount!.access}); syncing every ${intervalOf(values.interval)} s and on file changes; Ctrl-C to finish`, {
      event: 'mounted',
      memoryStoreId: mount!.memoryStoreId,
      dir,
      access: mount!.access,
      status: files,
    });
    const problems = await runUntilSignal(mounter, dir, intervalOf(values.interval), out);
    return problems ? EXIT.syncProblems : EXIT.ok;
  } finally {
    await connection.close();
  }
}

function intervalOf(flag: string | undefined): number {
  return flag === undefined ? 15 : Number(flag);
}

/** Syncs on the interval and on file changes until SIGINT/SIGTERM; then finalizes. Resolves to "problems were reported". */
async function runUntilSignal(mounter: MemoryMounter, dir: string, intervalS: number, out: Output): Promise<boolean> {
  let problems = false;
  let stopping = false;
  let again = false;
  let running: Promise<void> | null = null;
  const sync = (force: boolean) => {
    if (stopping) return;
    if (running) {
      again ||= force;
      return;
    }
    running = mounter
      .reconcile({ force })
      .then((report) => {
        if (report) problems = out.pass(report) || problems;
      })
      .catch((err: unknown) => out.error(`sync failed: ${err instanceof Error ? err.message : String(err)}`, 'sync_failed'))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          sync(true);
        }
      });
  };
  const timer = setInterval(() => sync(false), Math.min(1_000, intervalS * 1000));
  // fs.watch (recursive: Linux since Node 20, macOS, Windows): a change anywhere in the folder
  // asks for a pass soon after (debounced, so an editor's save is one pass, not five).
  let debounce: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(dir, { recursive: true }, () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => sync(true), 300);
    });
    watcher.on('error', () => undefined);
  } catch {
    out.note('file watching unavailable here: syncing on the interval only', { event: 'no_watch' });
  }
  await new Promise<void>((resolveSignal) => {
    const stop = () => resolveSignal();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  stopping = true;
  clearInterval(timer);
  clearTimeout(debounce);
  watcher?.close();
  await running;
  out.note('finishing: final sync, then removing the folder', { event: 'finalizing' });
  const report = await mounter.finalize({ outcome: 'completed' });
  return out.finalized(report) || problems;
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
  const connection = await connect(values);
  try {
    const { mounter, resource, dir } = await mounterFor(positionals[0], positionals[1], values, connection.storeClient);
    out.follow(mounter);
    await mounter.materialize([resource]);
    // Left mounted on purpose (not finalized): the folder stays, its record says what was pulled.
    const [s] = mounter.status();
    out.note(`pulled ${resource.memory_store_id} into ${dir}`, { event: 'pulled_store', memoryStoreId: resource.memory_store_id, dir, status: s });
    return EXIT.ok;
  } finally {
    await connection.close();
  }
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

/** The store is asked when it can be (--emulator, --base-url or ANTHROPIC_API_KEY) and --local is not given. */
async function localOrRemoteDiff(dir: string, values: { emulator?: boolean | undefined; 'base-url'?: string | undefined; 'state-dir'?: string | undefined; local?: boolean | undefined }): Promise<FolderDiff> {
  const stateDir = stateDirOf(values['state-dir']);
  if (!(await stat(stateDir).catch(() => null))) throw new UsageError(`no state dir ${stateDir}: nothing was mounted or pulled with it`);
  const record = await findRecord(stateDir, dir);
  const remote = !values.local && (values.emulator || values['base-url'] !== undefined || process.env.ANTHROPIC_API_KEY);
  if (!remote) return diffFolder(record, null);
  const connection = await connect({ ...(values.emulator && { emulator: true }), ...(values['base-url'] && { 'base-url': values['base-url'] }) });
  try {
    return await diffFolder(record, connection.storeClient);
  } finally {
    await connection.close();
  }
}

export type { SyncReport, FinalizeReport };
