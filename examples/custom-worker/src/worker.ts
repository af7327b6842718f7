import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { EnvironmentWorker, type EnvironmentWorkerOptions, type WorkerListeners } from '@memory-mounter/anthropic';
import { debugLogger, mountPathSlug, type Logger } from '@memory-mounter/core';

export interface CustomWorkerOptions
  extends Pick<EnvironmentWorkerOptions, 'environmentId' | 'environmentKey' | 'memorySyncIntervalMs' | 'maxIdleMs' | 'drain' | 'mounter' | 'stateDir'> {
  /** The worker's client: base URL, retries, timeout. Each item's calls swap its key for the item's sessions token. */
  client: Anthropic;
  /** The agent's working directory: relative tool paths resolve here. */
  workdir: string;
  /** Where `/mnt/memory` lies on this host (default `/mnt/memory`); the operator creates it. */
  memoryRoot?: string;
  logger?: Logger;
  /** More listeners, beside the operator's log lines this worker writes for each event. */
  on?: WorkerListeners;
}

/**
 * The SDK's `EnvironmentWorker` shape with memory by memory-mounter, plus what this worker adds:
 * - `save_note`, a tool of its own that writes a note into a store by the store's name; it goes
 *   through the same write guard as the toolset's `write` and `edit` (`writeGuard`), so a note
 *   for a read-only store, or for a name that is no store, comes back to the agent as an error;
 * - an operator's log line for each memory event (pushed, conflict, a failed item, ...);
 * - `stateDir`: a worker killed mid-session leaves a record, and the next start (or the next
 *   item at that mount path) pushes what the dead one had not.
 */
export function customWorker(options: CustomWorkerOptions): EnvironmentWorker {
  const logger = options.logger ?? debugLogger('custom-worker');
  const memoryRoot = options.memoryRoot ?? '/mnt/memory';
  const { on = {}, ...rest } = options;
  return new EnvironmentWorker({
    ...rest,
    memoryRoot,
    logger,
    tools: (ctx) => [...betaAgentToolset20260401(ctx), saveNoteTool(memoryRoot)],
    writeGuard: {
      writeTools: ['write', 'edit', 'save_note'],
      targetPath: (tool, input) => (tool === 'save_note' ? notePath(memoryRoot, input as SaveNoteInput) : filePathOf(input)),
    },
    on: {
      ...on,
      pushed: (e, item) => {
        logger.info('memory pushed', { session_id: item?.sessionId, memory_store_id: e.memoryStoreId, path: e.path });
        on.pushed?.(e, item);
      },
      conflict: (e, item) => {
        // The store's version wins; the agent's bytes are in the event, for a copy kept elsewhere.
        logger.warn('memory conflict: the store wins', { session_id: item?.sessionId, memory_store_id: e.memoryStoreId, path: e.path, lost_bytes: e.localContent.byteLength });
        on.conflict?.(e, item);
      },
      failed: (e, item) => {
        logger.warn('work item let go', { work_id: e.workId, code: e.code, session_id: item?.sessionId });
        on.failed?.(e, item);
      },
    },
  });
}

interface SaveNoteInput {
  /** The store's name as the session attached it (`Notes`); its folder is the name's slug. */
  store: string;
  /** The note's file name, without `.md`. */
  title: string;
  text: string;
}

/** Where a note lands: `<memoryRoot>/<slug of the store's name>/notes/<title>.md`. */
function notePath(memoryRoot: string, input: SaveNoteInput): string | undefined {
  if (typeof input?.store !== 'string' || typeof input.title !== 'string') return undefined;
  return join(memoryRoot, mountPathSlug(input.store), 'notes', `${input.title}.md`);
}

/**
 * `save_note { store, title, text }`: the agent keeps a note in a memory store without knowing
 * its folder. The worker's write guard has already checked the target when `run` is called.
 */
function saveNoteTool(memoryRoot: string): BetaRunnableTool<SaveNoteInput> {
  return {
    type: 'custom',
    name: 'save_note',
    description: 'Save a markdown note into one of the session\'s memory stores, by the store\'s name.',
    input_schema: {
      type: 'object',
      properties: { store: { type: 'string' }, title: { type: 'string' }, text: { type: 'string' } },
      required: ['store', 'title', 'text'],
    },
    parse: (input: unknown) => input as SaveNoteInput,
    run: async (input) => {
      const path = notePath(memoryRoot, input);
      if (!path) throw new Error('save_note needs store, title and text');
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, input.text);
      return `saved ${path}`;
    },
  };
}

function filePathOf(input: unknown): string | undefined {
  const path = (input as { file_path?: unknown } | null)?.file_path;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}
