/**
 * The one sessions endpoint a worker calls before mounting memory: `GET /v1/sessions/{id}`,
 * answered from sessions a test seeds. Only the fields a worker reads are meaningful; the rest
 * are filled so the SDK's types hold.
 */
export interface SessionSeed {
  /** Session resources as the API returns them (memory_store, file, github_repository, ...). */
  resources: Array<{ type: string } & Record<string, unknown>>;
  status?: 'rescheduling' | 'running' | 'idle' | 'terminated';
  environment_id?: string;
  /**
   * The skills on the session's agent, as the API lists them; a worker downloads each one
   * (`MemoryApiServer.seedSkill` serves them). Default none.
   */
  skills?: Array<{ type: 'anthropic' | 'custom'; skill_id: string; version: string }>;
}

export type SessionWire = ReturnType<typeof sessionWire>;

const SESSION_PATH = /^\/v1\/sessions\/([^/]+)\/?$/;

/** The session id of a `GET /v1/sessions/{id}` request, or undefined. */
export function matchSessionRoute(method: string | undefined, pathname: string): string | undefined {
  if (method !== 'GET') return undefined;
  const segment = SESSION_PATH.exec(pathname)?.[1];
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

export function sessionWire(id: string, seed: SessionSeed, at: string) {
  return {
    type: 'session' as const,
    id,
    status: seed.status ?? 'running',
    environment_id: seed.environment_id ?? 'env_emulated',
    resources: seed.resources,
    // The resolved agent as the service snapshots it at session creation: every field the SDK's
    // type requires, so a worker that walks it (the skills, say) finds what it would there.
    agent: {
      type: 'agent' as const,
      id: 'agent_emulated',
      version: 1,
      name: 'Emulated agent',
      description: null as string | null,
      system: null as string | null,
      model: { id: 'claude-emulated' },
      mcp_servers: [] as never[],
      multiagent: null,
      execution_identity: { type: 'service_account' as const },
      skills: [...(seed.skills ?? [])],
      tools: [] as never[],
    },
    archived_at: null,
    budget: null,
    created_at: at,
    updated_at: at,
    metadata: {},
    outcome_evaluations: [],
    stats: {},
    title: null,
  };
}
