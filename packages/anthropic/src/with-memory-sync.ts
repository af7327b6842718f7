import { realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { debugLogger, MemoryWriteRefusedError, type Logger, type MemoryMounter } from '@memory-mounter/core';

export interface WithMemorySyncOptions {
  /** What relative tool paths are relative to (the tools' workdir). Default `process.cwd()`. */
  workdir?: string;
  /** Names of the tools that write files. Default `['write', 'edit']` (the agent toolset's). */
  writeTools?: readonly string[];
  /** The path a write tool targets, from its input. Default: `input.file_path`. */
  targetPath?: (toolName: string, input: unknown) => string | undefined;
  /** Where a failed sync is reported. Default: the `debug` logger. */
  logger?: Logger;
  /**
   * Where a path really lands once symlinks on the way are followed, for the guard to check as
   * well as the path as written. Default: the real disk's `realpath` of the deepest existing
   * folder, plus the rest. Pass `false` when the tools do not write to the real disk.
   */
  realPath?: ((path: string) => Promise<string>) | false;
}

/**
 * Wraps runnable tools (the SDK's `BetaRunnableTool` shape) so that memory follows the agent:
 * - before a write tool runs, its target goes through `mounter.checkWrite`; a refused write
 *   becomes an error result the agent can read (a `ToolError`), and the file is not touched;
 * - after every tool run, `mounter.reconcile()` (throttled by `memory_sync_interval`). A sync
 *   problem is logged, never turned into a failed tool call.
 * With a `null` mounter (memory disabled or no stores) the tools are returned as they are.
 */
export function withMemorySync<T extends BetaRunnableTool>(tools: readonly T[], mounter: MemoryMounter | null, options: WithMemorySyncOptions = {}): T[] {
  if (!mounter) return [...tools];
  const writeTools = new Set(options.writeTools ?? ['write', 'edit']);
  const targetPath = options.targetPath ?? filePathOf;
  const workdir = options.workdir ?? process.cwd();
  const logger = options.logger ?? debugLogger();
  const realPath = options.realPath === undefined ? realPathOnDisk : options.realPath;

  return tools.map((tool) => {
    const name = 'name' in tool && typeof tool.name === 'string' ? tool.name : undefined;
    const run: BetaRunnableTool['run'] = async (input, context) => {
      try {
        const target = name !== undefined && writeTools.has(name) ? targetPath(name, input) : undefined;
        if (target !== undefined) {
          const written = posix.resolve(workdir, target);
          refuseIfGuarded(mounter, name!, written);
          // checkWrite is lexical; a link in the way (workdir/link -> a read-only store) would
          // slip past it, so the place the write would really land is checked too.
          if (realPath) refuseIfGuarded(mounter, name!, await realPath(written));
        }
        return await tool.run(input, context);
      } finally {
        await mounter.reconcile().catch((err: unknown) => {
          logger.warn('memory sync after a tool call failed', { tool: name, error: err instanceof Error ? err.message : String(err) });
        });
      }
    };
    return { ...tool, run };
  });
}

function refuseIfGuarded(mounter: MemoryMounter, toolName: string, hostPath: string): void {
  try {
    mounter.checkWrite(hostPath);
  } catch (err) {
    if (err instanceof MemoryWriteRefusedError) throw new ToolError(`${toolName}: refused: ${err.message}`);
    throw err;
  }
}

/** The real path of the deepest folder of `path` that exists, with the rest of `path` after it. */
async function realPathOnDisk(path: string): Promise<string> {
  const rest: string[] = [];
  let existing = path;
  for (;;) {
    try {
      return posix.join(await realpath(existing), ...rest);
    } catch {
      const parent = posix.dirname(existing);
      if (parent === existing) return path;
      rest.unshift(posix.basename(existing));
      existing = parent;
    }
  }
}

function filePathOf(_toolName: string, input: unknown): string | undefined {
  const path = (input as { file_path?: unknown } | null)?.file_path;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}
