export { MemoryApiServer } from './memory-api-server.js';
export type { MemoryApiServerOptions, RecordedRequest } from './memory-api-server.js';
export type { RouteName } from './routes.js';
export { sessionWire, type SessionSeed, type SessionWire } from './sessions.js';
export { tarArchive, type SkillSeed, type SkillVersionWire } from './skills.js';
export { RandomWriteFaults, WRITE_ROUTES, type AppliedFault, type Fault, type RandomWriteFaultOptions } from './faults.js';
export {
  ControlPlaneEmulator,
  type ControlPlaneOptions,
  type ControlRouteName,
  type ControlRequest,
  type ControlPlaneEvent,
  type EnqueueWorkOptions,
} from './control-plane.js';
export {
  ScriptedSession,
  type AgentToolCall,
  type AgentToolOutcome,
  type AgentStep,
  type ScriptedAgentScript,
  type PlaySessionOptions,
  type ScriptedSessionState,
  type SessionHost,
} from './scripted-session.js';
export type {
  WorkState,
  WorkWire,
  WorkHeartbeatWire,
  TextBlockWire,
  ToolResultBlockWire,
  AgentToolUseEventWire,
  AgentMessageEventWire,
  SessionStatusRunningEventWire,
  SessionStatusIdleEventWire,
  SessionStatusTerminatedEventWire,
  UserToolResultEventWire,
  UserEventWire,
  SessionEventWire,
  SessionEventsPageWire,
  SentSessionEventsWire,
} from './control-plane-wire.js';
export type {
  MemoryWire,
  MemoryPrefixWire,
  MemoryListItemWire,
  MemoryListPageWire,
  DeletedMemoryWire,
  ErrorBodyWire,
  MemoryView,
  MemoryVersionWire,
  MemoryVersionListPageWire,
  ActorWire,
} from './wire.js';
