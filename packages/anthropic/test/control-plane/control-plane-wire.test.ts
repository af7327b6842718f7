import type {
  BetaSelfHostedWork,
  BetaSelfHostedWorkHeartbeatResponse,
} from '@anthropic-ai/sdk/resources/beta/environments/work';
import type {
  BetaManagedAgentsAgentMessageEvent,
  BetaManagedAgentsAgentToolUseEvent,
  BetaManagedAgentsSessionEvent,
  BetaManagedAgentsSessionStatusIdleEvent,
  BetaManagedAgentsSessionStatusRunningEvent,
  BetaManagedAgentsSessionStatusTerminatedEvent,
  BetaManagedAgentsStreamSessionEvents,
  BetaManagedAgentsUserToolResultEventParams,
} from '@anthropic-ai/sdk/resources/beta/sessions/events';
import type { BetaSkillVersion } from '@anthropic-ai/sdk/resources/beta/skills/versions';
import type { BetaManagedAgentsSessionAgent } from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import { describe, expectTypeOf, it } from 'vitest';
import type {
  AgentMessageEventWire,
  AgentToolUseEventWire,
  SessionStatusIdleEventWire,
  SessionStatusRunningEventWire,
  SessionStatusTerminatedEventWire,
  UserToolResultEventWire,
  SessionWire,
  SkillVersionWire,
  WorkHeartbeatWire,
  WorkWire,
} from '@memory-mounter/testing';


// The emulator writes its control-plane shapes down itself (the testing package has no SDK);
// this file holds them to the SDK 1.14 types. It fails `pnpm typecheck`, not a test run.
describe('the emulated control plane speaks the SDK 1.14 wire', () => {
  it('a session’s agent and a skill version are what the SDK’s worker reads (setupSkills walks agent.skills)', () => {
    expectTypeOf<SessionWire['agent']>().toExtend<BetaManagedAgentsSessionAgent>();
    expectTypeOf<SkillVersionWire>().toExtend<BetaSkillVersion>();
  });

  it('work items and heartbeats are what the SDK reads', () => {
    expectTypeOf<WorkWire>().toExtend<BetaSelfHostedWork>();
    expectTypeOf<WorkHeartbeatWire>().toExtend<BetaSelfHostedWorkHeartbeatResponse>();
  });

  it('every session event it emits is a session event and a stream event of the SDK', () => {
    expectTypeOf<AgentToolUseEventWire>().toExtend<BetaManagedAgentsAgentToolUseEvent>();
    expectTypeOf<AgentMessageEventWire>().toExtend<BetaManagedAgentsAgentMessageEvent>();
    expectTypeOf<SessionStatusRunningEventWire>().toExtend<BetaManagedAgentsSessionStatusRunningEvent>();
    expectTypeOf<SessionStatusIdleEventWire>().toExtend<BetaManagedAgentsSessionStatusIdleEvent>();
    expectTypeOf<SessionStatusTerminatedEventWire>().toExtend<BetaManagedAgentsSessionStatusTerminatedEvent>();
    type Emitted =
      | AgentToolUseEventWire
      | AgentMessageEventWire
      | SessionStatusRunningEventWire
      | SessionStatusIdleEventWire
      | SessionStatusTerminatedEventWire;
    expectTypeOf<Emitted>().toExtend<BetaManagedAgentsSessionEvent>();
    expectTypeOf<Emitted>().toExtend<BetaManagedAgentsStreamSessionEvents>();
  });

  it('a tool result the SDK posts is one the emulator records', () => {
    expectTypeOf<BetaManagedAgentsUserToolResultEventParams & { id: string; processed_at: string }>().toExtend<UserToolResultEventWire>();
  });
});
