// `@memory-mounter/testing/anthropic`: the test doubles of `@memory-mounter/anthropic`'s control
// plane. A subpath of its own because it needs `@anthropic-ai/sdk` (an optional peer of this
// package), which the main entry does not.
export {
  ScriptedControlPlane,
  workSecretFor,
  sessionWorkItem,
  type WorkItem,
  type AgentScript,
  type ScriptedAgent,
  type ScriptedToolCall,
} from './scripted-control-plane.js';
