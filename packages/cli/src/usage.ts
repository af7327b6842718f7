/** A mistake in the command line or the configuration: exit code 2, with the message. */
export class UsageError extends Error {}

export const EXIT = { ok: 0, syncProblems: 1, usage: 2 } as const;

/** A command that cannot go on, with the code --json prints and the exit code. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Longest --interval the library takes, in seconds (an hour). */
export const MAX_INTERVAL_S = 3600;
/** Seconds a file stays missing before `mount` deletes its memory (the library's deleteGracePeriod). */
export const DELETE_GRACE_S = 30;

export const HELP: Record<string, string> = {
  main: `memory-mounter <command> [options]

Commands:
  mount <memory_store_id> [dir]   download a store into dir and keep it in sync until Ctrl-C
  pull <memory_store_id> <dir>    download a store into dir, once
  status <dir>                    what differs between dir and the store (writes nothing)
  push <dir> --dry-run            what a sync would send to the store
  recover [dir]                   finish what a killed mount (or a pull) left: push, then remove
  handle-item                     serve the work item \`ant worker poll --on-work\` claimed

Common options:
  --emulator        use the bundled emulator (store memstore_demo), offline
  --base-url <url>  API endpoint (credentials: ANTHROPIC_API_KEY)
  --state-dir <dir> where mount records are kept (default $MEMORY_MOUNTER_STATE_DIR,
                    else $XDG_STATE_HOME/memory-mounter, else ~/.local/state/memory-mounter)
  --json            machine-readable output (one JSON object per line)
  --verbose         name every path in a pass line, not the first few
  --help            help for a command

Paths are relative to the current folder. Exit codes: 0 ok, 1 sync problems reported, 2 usage
or configuration error; a download stopped by a signal: 128 + its number (130 for Ctrl-C).`,
  mount: `memory-mounter mount <memory_store_id> [dir] [options]

Downloads the store into dir (default ./<memory_store_id>; it must not exist, its parent must),
then keeps it in sync: every --interval seconds and soon after a file in dir changes. Prints one
line per pass that changed something (counts and a few paths; --verbose names all), and a line
for each deleted file with the seconds left before its memory is deleted too.

Ctrl-C, SIGTERM or SIGHUP during the download stops it and removes dir. Afterwards: a final
sync, dir removed, a summary. A second one cuts the final sync short (the session ends
aborted): what was not pushed stays in dir, for \`memory-mounter recover\`.

Options:
  --interval <seconds>   seconds between syncs (default 15; at most 3600)
  --read-only            never push nor delete in the store
  --deletions <mode>     enabled | log_only | disabled (default enabled)
  --verbose              every path in pass lines
  --emulator, --base-url, --state-dir, --json as for every command`,
  pull: `memory-mounter pull <memory_store_id> <dir> [options]

Downloads the store into dir (it must not exist) once and leaves it there, with a record in the
state dir so that \`status\` and \`push --dry-run\` can compare it with the store later.`,
  status: `memory-mounter status <dir> [options]

Compares dir with the baseline recorded when it was mounted or pulled (see --state-dir) and,
when the store can be reached, with the store: new, modified and deleted files, memories changed
in the store, and conflicts (both changed). Writes nothing.`,
  'handle-item': `memory-mounter handle-item [options]

Serves one claimed work item, for \`ant worker poll --on-work 'memory-mounter handle-item ...'\`:
reads ANTHROPIC_WORK_ID, ANTHROPIC_ENVIRONMENT_ID, ANTHROPIC_SESSION_ID and ANTHROPIC_WORK_SECRET
(and ANTHROPIC_ENVIRONMENT_KEY when the secret carries no sessions token), mounts the session's
memory stores, serves the agent's tool calls with the agent toolset, syncs, finalizes memory and
stops the item. A folder a killed run left (recorded in the state dir) is recovered first.

Options:
  --workdir <dir>        where the agent's tools work (default: the current directory)
  --memory-root <dir>    where /mnt/memory lies on this host (default /mnt/memory)
  --interval <seconds>   seconds between syncs (default 15)
  --deletions <mode>     enabled | log_only | disabled (default enabled)
  --base-url, --state-dir, --json as for every command

Exit codes: 0 served, 1 the item failed or changes were not pushed, 2 a value is missing.`,
  push: `memory-mounter push <dir> --dry-run [options]

Lists what a sync would send to the store: files to create, to update, memories to delete.
Only --dry-run is supported: to send, use \`mount\` (its sync pushes).`,
  recover: `memory-mounter recover [dir] [options]

Finishes what a mount killed before it could end (or a pull) left, from its record in the state
dir: pushes the folder's local changes (the store keeps its version where both changed; nothing
is deleted in the store), then removes the folder and its record. Without dir, every folder
recorded there whose process is gone. Needs the store: credentials, --base-url or --emulator.`,
};
