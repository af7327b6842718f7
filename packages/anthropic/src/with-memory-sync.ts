import { readlinkSync } from 'node:fs';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { asLogger, debugLogger, errorCode, MemoryWriteRefusedError, resolveKernelPath, type Logger, type MemoryMounter } from '@memory-mounter/core';

export interface WithMemorySyncOptions {
  /** What relative tool paths are relative to (the tools' workdir). Default `process.cwd()`. */
  workdir?: string;
  /** Names of the tools that write files. Default `['write', 'edit']` (the agent toolset's). */
  writeTools?: readonly string[];
  /** The path a write tool targets, from its input. Default: `input.file_path`. */
  targetPath?: (toolName: string, input: unknown) => string | undefined;
  /** Where a failed sync and every refused write are reported. Default: the `debug` logger. */
  logger?: Logger;
  /**
   * Where a path really lands on the disk the tools write, for the guard to check as well. The
   * path as written always goes to `mounter.checkWrite`, which resolves it through the mounter's
   * own FileSystem; this is a second resolution, for tools that write somewhere else. Default:
   * the real disk's, resolved as the kernel does (`resolveKernelPath` over readlink(2)). Pass
   * `false` when the tools write the mounter's FileSystem and not the real disk (memfs in tests):
   * then `checkWrite`'s own resolution is the only one. A resolver that throws refuses the write.
   */
  realPath?: ((path: string) => Promise<string>) | false;
}

/**
 * Wraps runnable tools (the SDK's `BetaRunnableTool` shape) so that memory follows the agent:
 * - before a write tool runs, its target goes through `mounter.checkWrite`; a refused write
 *   becomes an error result the agent can read (a `ToolError`), and the file is not touched;
 * - after every tool run, `mounter.reconcile()` (throttled by `memory_sync_interval`), which
 *   holds the call at most the mounter's `syncWait` (1.9 s): a pass still running goes on in the
 *   background. A sync problem is logged, never turned into a failed tool call.
 * With a `null` mounter (memory disabled or no stores) the tools are returned as they are.
 */
export function withMemorySync<T extends BetaRunnableTool>(tools: readonly T[], mounter: MemoryMounter | null, options: WithMemorySyncOptions = {}): T[] {
  if (!mounter) return [...tools];
  const writeTools = new Set(options.writeTools ?? ['write', 'edit']);
  const targetPath = options.targetPath ?? filePathOf;
  const workdir = options.workdir ?? process.cwd();
  const logger = options.logger === undefined ? debugLogger() : asLogger(options.logger);
  const realPath = options.realPath === undefined ? realPathOnDisk : options.realPath;

  return tools.map((tool) => {
    const name = 'name' in tool && typeof tool.name === 'string' ? tool.name : undefined;
    const run: BetaRunnableTool['run'] = async (input, context) => {
      try {
        const target = name !== undefined && writeTools.has(name) ? targetPath(name, input) : undefined;
        if (target !== undefined) {
          // Joined, never normalised: `link/..` is the parent of the link's target, not workdir.
          const written = target.startsWith('/') ? target : `${absolute(workdir)}/${target}`;
          refuseIfGuarded(mounter, name!, written, logger);
          if (realPath) refuseIfGuarded(mounter, name!, await landing(realPath, name!, written, logger), logger);
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

function refuseIfGuarded(mounter: MemoryMounter, toolName: string, hostPath: string, logger: Logger): void {
  try {
    mounter.checkWrite(hostPath);
  } catch (err) {
    if (err instanceof MemoryWriteRefusedError) {
      // The agent reads the refusal as a tool error; the operator reads it here.
      logger.warn('write tool refused', { tool: toolName, path: hostPath, reason: err.reason, error: err.message });
      throw new ToolError(`${toolName}: refused: ${err.message}`);
    }
    throw err;
  }
}

/** Where `path` lands by `realPath`; a resolver that fails refuses the write. */
async function landing(realPath: (path: string) => Promise<string>, toolName: string, path: string, logger: Logger): Promise<string> {
  try {
    return await realPath(path);
  } catch (err) {
    const why = errorCode(err) ?? (err instanceof Error ? err.message : String(err));
    logger.warn('write tool refused', { tool: toolName, path, reason: 'unresolvable', error: why });
    throw new ToolError(`${toolName}: refused: ${path} cannot be resolved (${why}), so where it lands is unknown`);
  }
}

/** The real disk's answer: every link on the way followed, as open(2) will. */
async function realPathOnDisk(path: string): Promise<string> {
  return resolveKernelPath(path, readLinkOnDisk);
}

function readLinkOnDisk(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch (err) {
    const code = errorCode(err);
    // Not a link, or nothing there.
    if (code === 'EINVAL' || code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
}

function absolute(dir: string): string {
  return dir.startsWith('/') ? dir : `${process.cwd()}/${dir}`;
}

function filePathOf(_toolName: string, input: unknown): string | undefined {
  const path = (input as { file_path?: unknown } | null)?.file_path;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}
