import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { invalidRequest } from './api-error.js';
import type {
  AgentToolUseEventWire,
  SessionEventWire,
  TextBlockWire,
  ToolResultBlockWire,
  UserEventWire,
  UserToolResultEventWire,
} from './control-plane-wire.js';

/** One tool call the scripted agent makes: a tool of the worker's, by name, and its input. */
export interface AgentToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** A call the agent made and the result the worker posted for it. */
export interface AgentToolOutcome {
  call: AgentToolCall;
  toolUseId: string;
  /** The `user.tool_result` content as posted. */
  content: ToolResultBlockWire[];
  /** The text blocks of `content`, joined: what the agent "reads". */
  text: string;
  isError: boolean;
}

/**
 * What the agent does next, given every outcome so far (oldest first): one call, several calls
 * in one turn (answered in any order before the agent goes on), or `null`/`undefined` to end
 * its turn.
 */
export type AgentStep = AgentToolCall | readonly AgentToolCall[] | null | undefined;

/**
 * A scripted agent: a list of steps played in order, or a function of the outcomes so far that
 * returns the next step. The function may be async, and may throw to fail the session.
 */
export type ScriptedAgentScript =
  | readonly (AgentToolCall | readonly AgentToolCall[])[]
  | ((outcomes: readonly AgentToolOutcome[]) => AgentStep | Promise<AgentStep>);

export interface PlaySessionOptions {
  /**
   * How the session ends once the agent is done: `idle` (default) goes idle with `end_turn`,
   * as a real session does, and the worker's `SessionToolRunner` lets go after its `maxIdleMs`;
   * `terminated` also terminates the session, which ends the runner at once.
   */
  end?: 'idle' | 'terminated';
  /** An `agent.message` the agent says when it is done. */
  finalMessage?: string;
}

/** What a session's agent is doing. */
export type ScriptedSessionState = 'waiting' | 'running' | 'requires_action' | 'idle' | 'terminated' | 'failed';

/** Callbacks the session makes to the emulator: new ids and timestamps, and what to announce. */
export interface SessionHost {
  newId(prefix: string): string;
  now(): string;
  announce(event: { kind: 'tool_use'; sessionId: string; toolUseId: string; call: AgentToolCall }): void;
  announce(event: { kind: 'tool_result'; sessionId: string; outcome: AgentToolOutcome }): void;
  announce(event: { kind: 'session_ended'; sessionId: string; state: 'idle' | 'terminated' | 'failed'; error?: string }): void;
}

/**
 * One emulated session: its event log (what `GET .../events` lists), the streams attached to
 * it (what `GET .../events/stream` sends on), and the scripted agent that turns tool results
 * into its next calls. The agent starts its turn when a worker first attaches (lists or
 * streams the events), so a test can set the session up before any worker runs.
 */
export class ScriptedSession {
  readonly events: SessionEventWire[] = [];
  readonly outcomes: AgentToolOutcome[] = [];
  state: ScriptedSessionState = 'waiting';
  /** Why the agent failed (its script threw), once `state` is `failed`. */
  error: unknown;
  /** Resolves once the agent is done (idle, terminated or failed). */
  readonly ended: Promise<void>;

  readonly #id: string;
  readonly #script: ScriptedAgentScript;
  readonly #options: PlaySessionOptions;
  readonly #host: SessionHost;
  readonly #streams = new Set<ServerResponse>();
  /** The connections streams were sent on, to be cut when the emulator closes. */
  readonly #sockets = new Set<Socket>();
  readonly #pending = new Map<string, AgentToolCall>();
  #step = 0;
  #markEnded!: () => void;

  constructor(id: string, script: ScriptedAgentScript, options: PlaySessionOptions, host: SessionHost) {
    this.#id = id;
    this.#script = script;
    this.#options = options;
    this.#host = host;
    this.ended = new Promise((resolve) => (this.#markEnded = resolve));
  }

  /** Tool uses the agent is waiting on, by id. */
  get pendingToolUses(): ReadonlyMap<string, AgentToolCall> {
    return this.#pending;
  }

  /** A worker attached: the agent's turn begins (once). */
  attach(): void {
    if (this.state !== 'waiting') return;
    this.state = 'running';
    this.#advance();
  }

  /** Sends every later event to `res` as server-sent events, until either side closes. */
  stream(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    if (this.state === 'terminated') {
      res.end();
      return;
    }
    this.#streams.add(res);
    const socket = res.socket;
    if (socket) {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    }
    res.on('close', () => this.#streams.delete(res));
  }

  /**
   * Ends every attached stream: `end` when the session is over, `destroy` (the connection too)
   * when the emulator closes, since a client that walked away may never read the end.
   */
  closeStreams(how: 'end' | 'destroy' = 'end'): void {
    for (const res of this.#streams) res.end();
    this.#streams.clear();
    // A client that aborted its stream may leave the connection open with the response
    // unfinished, which would hold the server's close until the client's keep-alive timeout.
    if (how === 'destroy') for (const socket of this.#sockets) socket.destroy();
  }

  /**
   * Records events a client posted. A `user.tool_result` must answer a tool use the agent is
   * waiting on; once every pending one is answered, the agent takes its next step. Validates
   * the whole batch before recording any of it.
   */
  post(events: readonly Record<string, unknown>[]): Array<UserToolResultEventWire | UserEventWire> {
    const answered = new Set<string>();
    for (const event of events) {
      const type = event['type'];
      if (typeof type !== 'string' || !type.startsWith('user.')) {
        throw invalidRequest(`events[].type must be a user event type, not ${JSON.stringify(type)}`);
      }
      if (type === 'user.tool_result') {
        const id = event['tool_use_id'];
        if (typeof id !== 'string' || !this.#pending.has(id) || answered.has(id)) {
          throw invalidRequest(`tool_use_id ${JSON.stringify(id)} names no tool use awaiting a result in session ${this.#id}`);
        }
        answered.add(id);
      }
    }
    const recorded = events.map((event) => this.#record({ ...event, id: this.#host.newId('sevt'), processed_at: this.#host.now() } as UserEventWire));
    for (const event of recorded) {
      if (event.type !== 'user.tool_result') continue;
      const result = event as unknown as UserToolResultEventWire;
      const call = this.#pending.get(result.tool_use_id)!;
      this.#pending.delete(result.tool_use_id);
      const content = result.content ?? [];
      const outcome: AgentToolOutcome = {
        call,
        toolUseId: result.tool_use_id,
        content,
        text: content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join(''),
        isError: result.is_error === true,
      };
      this.outcomes.push(outcome);
      this.#host.announce({ kind: 'tool_result', sessionId: this.#id, outcome });
    }
    if (answered.size > 0 && this.#pending.size === 0 && this.state === 'requires_action') {
      this.state = 'running';
      this.#advance();
    }
    return recorded as Array<UserToolResultEventWire | UserEventWire>;
  }

  /**
   * The agent's next step. A list script, or a function that answers at once, takes it
   * synchronously, so the events are in the log before the request that caused them is
   * answered; an async function's step lands when it resolves.
   */
  #advance(): void {
    this.#record({ type: 'session.status_running', id: this.#host.newId('sevt'), processed_at: this.#host.now() });
    let step: AgentStep | Promise<AgentStep>;
    try {
      step = typeof this.#script === 'function' ? this.#script(this.outcomes) : this.#script[this.#step++];
    } catch (err) {
      this.#fail(err);
      return;
    }
    if (step instanceof Promise) step.then((next) => this.#take(next), (err: unknown) => this.#fail(err));
    else this.#take(step);
  }

  #take(step: AgentStep): void {
    const calls = step === null || step === undefined ? [] : isCallList(step) ? [...step] : [step];
    if (calls.length === 0) {
      if (this.#options.finalMessage !== undefined) {
        const content: TextBlockWire[] = [{ type: 'text', text: this.#options.finalMessage }];
        this.#record({ type: 'agent.message', id: this.#host.newId('sevt'), content, processed_at: this.#host.now() });
      }
      this.#idle({ type: 'end_turn' });
      this.#end(this.#options.end === 'terminated' ? 'terminated' : 'idle');
      return;
    }
    const ids: string[] = [];
    for (const call of calls) {
      const event: AgentToolUseEventWire = {
        type: 'agent.tool_use',
        id: this.#host.newId('sevt'),
        name: call.name,
        input: call.input,
        processed_at: this.#host.now(),
        evaluated_permission: 'allow',
        evaluation: { type: 'always_allow' },
      };
      this.#pending.set(event.id, call);
      ids.push(event.id);
      this.#record(event);
      this.#host.announce({ kind: 'tool_use', sessionId: this.#id, toolUseId: event.id, call });
    }
    this.state = 'requires_action';
    this.#idle({ type: 'requires_action', event_ids: ids });
  }

  #fail(err: unknown): void {
    this.error = err;
    this.#end('failed', err instanceof Error ? err.message : String(err));
  }

  #idle(stop_reason: { type: 'requires_action'; event_ids: string[] } | { type: 'end_turn' }): void {
    this.#record({ type: 'session.status_idle', id: this.#host.newId('sevt'), processed_at: this.#host.now(), stop_details: null, stop_reason });
  }

  #end(state: 'idle' | 'terminated' | 'failed', error?: string): void {
    if (state !== 'idle') {
      this.#record({ type: 'session.status_terminated', id: this.#host.newId('sevt'), processed_at: this.#host.now() });
      this.closeStreams();
    }
    this.state = state;
    this.#host.announce({ kind: 'session_ended', sessionId: this.#id, state, ...(error !== undefined && { error }) });
    this.#markEnded();
  }

  #record<E extends SessionEventWire>(event: E): E {
    this.events.push(event);
    const frame = `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    for (const res of this.#streams) res.write(frame);
    return event;
  }
}

function isCallList(step: AgentToolCall | readonly AgentToolCall[]): step is readonly AgentToolCall[] {
  return Array.isArray(step);
}
