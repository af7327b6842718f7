import { toolErrorContent, toolName, type BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { ControlPlane, WorkItem } from '../src/control-plane.js';

/** One tool call as the agent saw it: the result the live runner would post back. */
export interface ToolCall {
  session: string;
  name: string;
  input: Record<string, unknown>;
  content: Awaited<ReturnType<BetaRunnableTool['run']>>;
  isError: boolean;
}

/** What a scripted agent can do: call one of the session's tools, by name, and read the result. */
export interface ScriptedAgent {
  call(name: string, input: Record<string, unknown>): Promise<ToolCall>;
}

export type AgentScript = (agent: ScriptedAgent) => Promise<void>;

/**
 * The test double of the seam: hands out prepared work items, and plays each session by running
 * its script against the tools the worker built, in place of the live event stream. Tool
 * failures become error results exactly as SessionToolRunner makes them (`toolErrorContent`).
 */
export class ScriptedControlPlane implements ControlPlane {
  readonly calls: ToolCall[] = [];
  /** Session ids whose script ran, in order. */
  readonly sessionsRun: string[] = [];
  readonly #items: WorkItem[];
  readonly #scripts: Record<string, AgentScript>;

  constructor(items: WorkItem[], scripts: Record<string, AgentScript>) {
    this.#items = items;
    this.#scripts = scripts;
  }

  async *claimWork(signal: AbortSignal): AsyncIterable<WorkItem> {
    for (const item of this.#items) {
      if (signal.aborted) return;
      yield item;
    }
  }

  async runSession(work: WorkItem, tools: BetaRunnableTool[]): Promise<void> {
    const session = work.data.id;
    this.sessionsRun.push(session);
    const script = this.#scripts[session] ?? (async () => {});
    await script({
      call: async (name, input) => {
        const tool = tools.find((t) => toolName(t) === name);
        if (!tool) throw new Error(`the session has no tool named ${name}`);
        let call: ToolCall;
        try {
          const content = await tool.run(tool.parse(input));
          call = { session, name, input, content, isError: false };
        } catch (err) {
          call = { session, name, input, content: toolErrorContent(err), isError: true };
        }
        this.calls.push(call);
        return call;
      },
    });
  }
}

/** A work item's `secret` as the poll response carries it: base64url JSON with the sessions token. */
export function secretFor(sessionsToken: string): string {
  return Buffer.from(JSON.stringify({ sessions_token: sessionsToken })).toString('base64url');
}

export function sessionItem(id: string, sessionId: string, secret: string | null): WorkItem {
  return { id, environment_id: 'env_test', data: { type: 'session', id: sessionId }, secret };
}
