import { MemoryConfigError, MemoryMountError, StoreError, errorCode } from '@memory-mounter/core';
import { CommandError, EXIT, UsageError } from './usage.js';

/** What a mount or pull was asked to do, in the words of its command line. */
export interface MountTargetWords {
  /** The store id as given. */
  id: string;
  /** The folder as the user wrote it (`./demo`), or `./<id>` when none was given. */
  shown: string;
  /** The state dir in use. */
  stateDir: string;
}

/**
 * A library error of `materialize` in the CLI's words: its folder argument and its flags, not a
 * worker's mount paths (`/mnt/memory/...`) and options. The code stays the library's where it
 * has one, so --json readers can tell the cases apart.
 */
export function explainMountError(err: unknown, t: MountTargetWords): unknown {
  if (err instanceof MemoryConfigError) return new UsageError(configInFlags(err));
  if (!(err instanceof MemoryMountError)) return err;
  const cause = err.cause;
  switch (err.code) {
    case 'mount_path_exists':
      return new CommandError(
        `${t.shown} already exists: mount and pull make the folder themselves. Give a folder that does not exist yet; ` +
          `if a killed mount left this one, \`memory-mounter recover\` pushes what it holds and removes it`,
        err.code,
        EXIT.usage,
      );
    case 'mount_path_invalid':
      return new CommandError(`${t.shown} cannot be made: a link or a file is in its place or on the way to it`, err.code, EXIT.usage);
    case 'mount_path_unwritable':
      return new CommandError(`${t.shown} cannot be made (${errorCode(cause) ?? 'not writable'}): the folder that holds it must be writable`, err.code, EXIT.usage);
    case 'state_dir_unusable':
      return new CommandError(
        `the state dir ${t.stateDir} cannot be used (${errorCode(cause) ?? 'not a writable folder'}): give another with --state-dir or $MEMORY_MOUNTER_STATE_DIR`,
        err.code,
        EXIT.usage,
      );
    case 'download_failed': {
      if (cause instanceof StoreError && cause.kind === 'not_found') {
        return new CommandError(`no memory store ${t.id}: the service does not know this id (check it); nothing was written`, 'store_not_found', EXIT.usage);
      }
      if (cause instanceof StoreError && cause.kind === 'unauthorized') {
        return new CommandError(`the service refused the credentials for ${t.id} (ANTHROPIC_API_KEY); nothing was written`, 'unauthorized', EXIT.usage);
      }
      const why = cause instanceof Error ? cause.message : String(cause);
      return new CommandError(`${t.id} could not be downloaded into ${t.shown} (${why}); nothing was left behind`, err.code, EXIT.syncProblems);
    }
    default:
      return new CommandError(`${err.code}: ${err.message}`, err.code, EXIT.usage);
  }
}

/** The flag that sets each library option the CLI passes. */
const FLAG_OF: Record<string, string> = {
  memory_sync_interval: '--interval',
  memory_sync_deletions: '--deletions',
  stateDir: '--state-dir',
  memoryRoot: 'the folder that holds dir',
};

function configInFlags(err: MemoryConfigError): string {
  const flag = err.option === undefined ? undefined : FLAG_OF[err.option];
  return flag ? `${flag}: ${err.message}` : err.message;
}
