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

  return tools.map((tool) => {
    const name = 'name' in tool && typeof tool.name === 'string' ? tool.name : undefined;
    const run: BetaRunnableTool['run'] = async (input, context) => {
      try {
        const target = name !== undefined && writeTools.has(name) ? targetPath(name, input) : undefined;
        if (target !== undefined) refuseIfGuarded(mounter, name!, posix.resolve(workdir, target));
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

function filePathOf(_toolName: string, input: unknown): string | undefined {
  const path = (input as { file_path?: unknown } | null)?.file_path;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}
