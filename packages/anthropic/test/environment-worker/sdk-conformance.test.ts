import { join } from 'node:path';
import { EnvironmentWorker as SdkEnvironmentWorker } from '@anthropic-ai/sdk/helpers/beta/environments';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentToolCall, MemoryApiServer } from '@memory-mounter/testing';
import { EnvironmentWorker } from '../../src/environment-worker.js';
import { emulator, ENV_ID, ENV_KEY, nextEvent, recordingLogger, tempWorkdir, TOKEN, workerClient, type LogLine } from './harness.js';

// The emulator as a stand-in the SDK's own worker accepts, and this library's worker as a
// drop-in for it: one scripted session, played once through each worker on a fresh emulator,
// must leave the same memories in the store, and the SDK's worker must log no error or warning.

const NOTES = { type: 'memory_store', memory_store_id: 'memstore_notes', name: 'notes' };
const STYLE = { type: 'memory_store', memory_store_id: 'memstore_style', name: 'style', access: 'read_only' };

/** The session both workers serve: read, edit, write a new file, try the read-only store, read the skill. */
function script(workdir: string): AgentToolCall[] {
  const notes = join(workdir, 'memory', 'notes');
  return [
    { name: 'read', input: { file_path: join(notes, 'todo.md') } },
    { name: 'edit', input: { file_path: join(notes, 'todo.md'), old_string: 'milk', new_string: 'oat milk' } },
    { name: 'write', input: { file_path: join(notes, 'journal', 'day-1.md'), content: 'Met the team.\n' } },
    { name: 'write', input: { file_path: join(workdir, 'memory', 'style', 'tone.md'), content: 'Be verbose.\n' } },
    { name: 'bash', input: { command: `rm ${join(notes, 'old.md')}` } },
    { name: 'read', input: { file_path: join(workdir, 'skills', 'greeter', 'SKILL.md') } },
  ];
}

interface Played {
  notes: Record<string, string>;
  style: Record<string, string>;
  outcomes: Array<[string, boolean]>;
  skillText: string;
  logged: LogLine[];
  stopped: boolean;
}

/** Seeds a fresh emulator, queues the session, runs `serve` until the item is stopped. */
async function play(serve: (args: { baseURL: string; workdir: string; server: MemoryApiServer; logger: ReturnType<typeof recordingLogger>['logger'] }) => Promise<void>): Promise<Played> {
  const dirs = await tempWorkdir();
  const { server, baseURL } = await emulator();
  const { logger, lines } = recordingLogger();
  try {
    server.seed('memstore_notes', { '/todo.md': '- buy milk\n', '/old.md': 'stale\n' });
    server.seed('memstore_style', { '/tone.md': 'Be brief.\n' });
    server.seedSkill('skill_greet', { name: 'greeter', files: { 'SKILL.md': '# Greeter\n' } });
    server.seedSession('sesn_1', { resources: [NOTES, STYLE], skills: [{ type: 'custom', skill_id: 'skill_greet', version: 'latest' }] });
    server.controlPlane.playSession('sesn_1', script(dirs.workdir));
    const work = server.controlPlane.enqueue({ id: 'work_1', sessionId: 'sesn_1', sessionsToken: TOKEN });
    await serve({ baseURL, workdir: dirs.workdir, server, logger });
    const outcomes = server.controlPlane.session('sesn_1')!.outcomes;
    return {
      notes: server.snapshot('memstore_notes'),
      style: server.snapshot('memstore_style'),
      outcomes: outcomes.map((o) => [o.call.name, o.isError]),
      skillText: outcomes.at(-1)!.text,
      logged: lines,
      stopped: server.controlPlane.work(work.id).state === 'stopped',
    };
  } finally {
    await server.close();
    await dirs.cleanup();
  }
}

/** Warnings and errors, with the SDK's request lines (info) left out. */
const problems = (lines: LogLine[]) => lines.filter((l) => l.level === 'warn' || l.level === 'error').map((l) => `${l.level} ${l.msg}`);

describe('one scripted session through the SDK\'s EnvironmentWorker and through this one', () => {
  let results: { sdk?: Played; ours?: Played } = {};
  afterEach(() => void (results = {}));

  it('the SDK\'s worker runs it against the emulator with nothing logged as a warning or an error, and both leave the same store', async () => {
    results.sdk = await play(async ({ baseURL, workdir, server, logger }) => {
      // The SDK's worker never drains: stop it once it has stopped the item.
      const stop = new AbortController();
      void nextEvent(server, (e) => e.kind === 'stopped').then(() => stop.abort());
      const sdk = new SdkEnvironmentWorker({
        client: workerClient(baseURL, logger),
        environmentId: ENV_ID,
        environmentKey: ENV_KEY,
        workdir,
        maxIdleMs: 50,
        // The SDK refuses an interval under 5 s; both workers take the same, and finalize syncs the rest.
        memorySyncIntervalMs: 5_000,
      });
      await sdk.run(stop.signal);
    });
    results.ours = await play(async ({ baseURL, workdir, logger }) => {
      await new EnvironmentWorker({
        client: workerClient(baseURL),
        environmentId: ENV_ID,
        environmentKey: ENV_KEY,
        workdir,
        memoryRoot: join(workdir, 'memory'),
        maxIdleMs: 50,
        memorySyncIntervalMs: 5_000,
        drain: true,
        logger,
        // The deletion waits out its grace period at finalize either way; no settle for the new file.
        mounter: { newFileSettle: 0 },
      }).run();
    });

    const { sdk, ours } = results;
    expect(problems(sdk!.logged)).toEqual([]);
    expect(sdk!.stopped).toBe(true);
    expect(ours!.stopped).toBe(true);
    // What reached the store, and what the agent read, are the same.
    expect(sdk!.notes).toEqual({ '/journal/day-1.md': 'Met the team.\n', '/todo.md': '- buy oat milk\n' });
    expect(ours!.notes).toEqual(sdk!.notes);
    expect(ours!.style).toEqual(sdk!.style);
    expect(sdk!.style).toEqual({ '/tone.md': 'Be brief.\n' });
    expect(ours!.outcomes).toEqual(sdk!.outcomes);
    expect(sdk!.skillText).toContain('# Greeter');
    expect(ours!.skillText).toEqual(sdk!.skillText);
  });
});
