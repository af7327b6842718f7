import { posix } from 'node:path';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { withMemorySync } from '@memory-mounter/anthropic';
import { errorCode, type FileSystem, type MemoryMounter, type MountedStore } from '@memory-mounter/core';

export const JOURNAL_TOOL = 'append_journal';

export interface JournalToolOptions {
  /**
   * The filesystem the store folder lives on: `NodeFileSystem` in production, `MemfsFileSystem`
   * in tests. Going through the seam, rather than `node:fs`, is what lets a test run the tool
   * without a disk.
   */
  fileSystem: FileSystem;
  /** Host path of the journal file. */
  file: string;
  /** Clock in ms, for the date on each line. Default `Date.now`. */
  now?: () => number;
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** A worker's own tool: appends one dated line to a journal file. */
export function journalTool(options: JournalToolOptions): BetaRunnableTool {
  const { fileSystem, file, now = Date.now } = options;
  return betaTool({
    name: JOURNAL_TOOL,
    description: 'Append one line to the journal kept in memory, dated today.',
    inputSchema: { type: 'object', properties: { entry: { type: 'string' } }, required: ['entry'] },
    run: async ({ entry }) => {
      if (!entry.trim()) throw new ToolError(`${JOURNAL_TOOL}: entry is empty`);
      const day = new Date(now()).toISOString().slice(0, 10);
      try {
        const journal = await readText(fileSystem, file);
        // writeFile is atomic (temp file + rename): a sync never reads half a journal.
        await fileSystem.writeFile(file, utf8.encode(`${journal}- ${day} ${entry.trim()}\n`));
      } catch (err) {
        // An error result the agent can read, rather than a crashed tool call.
        throw new ToolError(`${JOURNAL_TOOL}: ${err instanceof Error ? err.message : String(err)}`);
      }
      return `added to ${posix.basename(file)}`;
    },
  });
}

/**
 * The journal tool for one session, keeping `journal.md` of `store` in sync: after each call
 * memory reconciles (at most once per interval), and a read-only store refuses the call.
 */
export function journalToolFor(
  mounter: MemoryMounter,
  store: MountedStore,
  options: Omit<JournalToolOptions, 'file'>,
): BetaRunnableTool {
  const file = posix.join(store.path, 'journal.md');
  // withMemorySync guards `write` and `edit` by their `file_path` out of the box; a custom tool
  // that writes says so, and names the file it writes. `realPath: false`: this tool writes the
  // mounter's own FileSystem (memfs in the tests), not the real disk, so the guard must not
  // resolve the path on the real disk; `checkWrite` resolves it through the mounter's FileSystem.
  const [tool] = withMemorySync([journalTool({ ...options, file })], mounter, {
    writeTools: [JOURNAL_TOOL],
    targetPath: () => file,
    realPath: false,
  });
  return tool!;
}

/** The file's text; empty when there is no file yet. */
async function readText(fileSystem: FileSystem, file: string): Promise<string> {
  try {
    return fromUtf8.decode(await fileSystem.readFile(file));
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return '';
    throw err;
  }
}
