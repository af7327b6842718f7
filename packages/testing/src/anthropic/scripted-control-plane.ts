import { toolErrorContent, toolName, type BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaSelfHostedWork } from '@anthropic-ai/sdk/resources/beta/environments/work';

/**
 * A claimed work item: the same type as `WorkItem` of `@memory-mounter/anthropic`, written from
 * the SDK's own type rather than imported, because `@memory-mounter/anthropic` tests with this
 * package (it depends on `@memory-mounter/testing`), and a dependency back would be a cycle.
 * Its tests assign a `ScriptedControlPlane` to its `ControlPlane`, so a drift fails to compile.
 */
export type WorkItem = Pick<BetaSelfHostedWork, 'id' | 'environment_id' | 'data' | 'secret'>;

/** One tool call as the scripted agent saw it: the result the live runner would post back. */
export interface ScriptedToolCall {
  /** The session the call was made in. */
  session: string;
  /** The tool's name. */
  name: string;
  /** The input the agent gave, before the tool parsed it. */
  input: Record<string, unknown>;
  /** The tool's result, or the error content a failed tool call posts. */
  content: Awaited<ReturnType<BetaRunnableTool['run']>>;
  /** Whether the tool failed (its `content` is then the error the agent reads). */
  isError: boolean;
}

/** What a scripted agent can do: call one of the session's tools, by name, and read the result. */
export interface ScriptedAgent {
  /** Runs the tool named `name` with `input`; rejects only when the session has no such tool. */
  call(name: string, input: Record<string, unknown>): Promise<ScriptedToolCall>;
}

/** A session played by a scripted agent: what the agent does, start to end. */
export type AgentScript = (agent: ScriptedAgent) => Promise<void>;

/**
 * The test double of `ControlPlane` (`@memory-mounter/anthropic`), for running a worker
 * offline. `claimWork` is a drained poll over a queue of prepared items; `runSession` plays the
 * session by running its script against the tools the worker built, in place of the live event
 * stream. Tool failures
 * become error results as `SessionToolRunner` makes them (`toolErrorContent`), so the agent
 * reads them and goes on. A session with no script ends at once, with no tool call.
 */
export class ScriptedControlPlane {
  /** Every tool call of every session, in order. */
  readonly calls: ScriptedToolCall[] = [];
  /** Session ids whose script ran, in order. */
  readonly sessionsRun: string[] = [];
  /** How many times the worker asked for work (`claimWork` calls). */
  claims = 0;
  readonly #queue: WorkItem[];
  readonly #scripts: Record<string, AgentScript>;

  /** `items` are queued in order (copied: the caller's array is left as it is); `scripts` are keyed by session id. */
  constructor(items: readonly WorkItem[], scripts: Record<string, AgentScript>) {
    this.#queue = [...items];
    this.#scripts = scripts;
  }

  /** Like a drained poll: yields what is still queued, and a claimed item leaves the queue. */
  async *claimWork(signal: AbortSignal): AsyncIterable<WorkItem> {
    this.claims++;
    let item: WorkItem | undefined;
    while (!signal.aborted && (item = this.#queue.shift()) !== undefined) yield item;
  }

  /** Runs the item's session script to its end; rejects when the script does. */
  async runSession(work: WorkItem, tools: BetaRunnableTool[]): Promise<void> {
    const session = work.data.id;
    this.sessionsRun.push(session);
    const script = this.#scripts[session] ?? (async () => {});
    await script({
      call: async (name, input) => {
        const tool = tools.find((t) => toolName(t) === name);
        if (!tool) throw new Error(`the session has no tool named ${name}`);
        let call: ScriptedToolCall;
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

/**
 * A work item's `secret` as the poll response carries it: base64url JSON with the sessions
 * token. The inverse of `sessionsTokenFromSecret` (`@memory-mounter/anthropic`), for preparing
 * items in tests.
 */
export function workSecretFor(sessionsToken: string): string {
  return Buffer.from(JSON.stringify({ sessions_token: sessionsToken })).toString('base64url');
}

/** A session work item in environment `env_test`, for {@link ScriptedControlPlane}'s queue. */
export function sessionWorkItem(id: string, sessionId: string, secret: string | null): WorkItem {
  return { id, environment_id: 'env_test', data: { type: 'session', id: sessionId }, secret };
}
