/**
 * The JSON shapes of the control-plane endpoints a self-hosted worker calls (the environment
 * work queue and a session's events), as the SDK's 1.14 types describe them. Written down here,
 * not imported, so the testing package needs no SDK; packages/anthropic checks them against the
 * SDK's types (test/control-plane/control-plane-wire.test-d.ts).
 */

export type WorkState = 'queued' | 'starting' | 'active' | 'stopping' | 'stopped';

/** A work item (`BetaSelfHostedWork`). `secret` is set on the poll answer only. */
export interface WorkWire {
  type: 'work';
  id: string;
  environment_id: string;
  data: { type: 'session'; id: string };
  secret: string | null;
  state: WorkState;
  metadata: Record<string, string>;
  created_at: string;
  acknowledged_at: string | null;
  started_at: string | null;
  latest_heartbeat_at: string | null;
  stop_requested_at: string | null;
  stopped_at: string | null;
}

/** A heartbeat's answer (`BetaSelfHostedWorkHeartbeatResponse`). */
export interface WorkHeartbeatWire {
  type: 'work_heartbeat';
  /** The heartbeat now on record, or `''` when there has been none. */
  last_heartbeat: string;
  lease_extended: boolean;
  state: WorkState;
  ttl_seconds: number;
}

export interface TextBlockWire {
  type: 'text';
  text: string;
}

/** `agent.tool_use`: a call of one of the worker's tools. The emulated policy is always_allow. */
export interface AgentToolUseEventWire {
  type: 'agent.tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  processed_at: string;
  evaluated_permission: 'allow';
  evaluation: { type: 'always_allow' };
}

export interface AgentMessageEventWire {
  type: 'agent.message';
  id: string;
  content: TextBlockWire[];
  processed_at: string;
}

export interface SessionStatusRunningEventWire {
  type: 'session.status_running';
  id: string;
  processed_at: string;
}

/** The agent stopped: waiting on tool results (`requires_action`), or done with its turn. */
export interface SessionStatusIdleEventWire {
  type: 'session.status_idle';
  id: string;
  processed_at: string;
  stop_details: null;
  stop_reason: { type: 'requires_action'; event_ids: string[] } | { type: 'end_turn' };
}

export interface SessionStatusTerminatedEventWire {
  type: 'session.status_terminated';
  id: string;
  processed_at: string;
}

/** A block of a tool result's content: text, or an image, document or search result (read as its `type`). */
export interface ToolResultBlockWire {
  type: string;
  text?: string;
}

/** `user.tool_result` as the session records it: the posted params plus `id` and `processed_at`. */
export interface UserToolResultEventWire {
  type: 'user.tool_result';
  id: string;
  tool_use_id: string;
  content?: ToolResultBlockWire[];
  is_error?: boolean | null;
  processed_at: string;
}

/** Any other `user.*` event a client posted, recorded as sent plus `id` and `processed_at`. */
export interface UserEventWire {
  type: `user.${string}`;
  id: string;
  processed_at: string;
  [field: string]: unknown;
}

export type SessionEventWire =
  | AgentToolUseEventWire
  | AgentMessageEventWire
  | SessionStatusRunningEventWire
  | SessionStatusIdleEventWire
  | SessionStatusTerminatedEventWire
  | UserToolResultEventWire
  | UserEventWire;

/** `GET /v1/sessions/{id}/events`: a cursor page, oldest first by default. */
export interface SessionEventsPageWire {
  data: SessionEventWire[];
  next_page: string | null;
}

/** `POST /v1/sessions/{id}/events`: the events as recorded. */
export interface SentSessionEventsWire {
  data: Array<UserToolResultEventWire | UserEventWire>;
}
