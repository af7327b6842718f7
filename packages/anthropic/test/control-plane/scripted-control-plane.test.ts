import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { describe, expect, it } from 'vitest';
import { sessionsTokenFromSecret, type ControlPlane, type WorkItem } from '@memory-mounter/anthropic';
import { ScriptedControlPlane, sessionWorkItem, workSecretFor } from '@memory-mounter/testing/anthropic';

/** A runnable tool that echoes its input, or fails with `fail` as its message. */
function echoTool(): BetaRunnableTool {
  return {
    name: 'echo',
    description: 'echo the text back',
    input_schema: { type: 'object', properties: { text: { type: 'string' }, fail: { type: 'string' } } },
    parse: (x: unknown) => x,
    run: async ({ text, fail }: { text?: string; fail?: string }) => {
      if (fail === 'tool-error') throw new ToolError('refused by the tool');
      if (fail !== undefined) throw new Error(fail);
      return `echo: ${text}`;
    },
  } as BetaRunnableTool;
}

// Typed as this package's ControlPlane: the double lives in @memory-mounter/testing/anthropic,
// which cannot import this package's types (a dependency cycle), so it is written to the same
// shape, and passing it here (and its items as `WorkItem` below) is what keeps it so: a drift
// of either side fails the typecheck.
async function claimAll(plane: ControlPlane, signal = new AbortController().signal): Promise<string[]> {
  const ids: string[] = [];
  for await (const item of plane.claimWork(signal)) ids.push(item.id);
  return ids;
}

const never = new AbortController().signal;

describe('ScriptedControlPlane.claimWork', () => {
  it('yields the queued items in order, and a claimed item leaves the queue', async () => {
    const items = [sessionWorkItem('work_1', 'sesn_1', null), sessionWorkItem('work_2', 'sesn_2', null)];
    const plane = new ScriptedControlPlane(items, {});

    expect(await claimAll(plane)).toEqual(['work_1', 'work_2']);
    // Drained: a second claim finds the queue empty and ends at once.
    expect(await claimAll(plane)).toEqual([]);
    expect(plane.claims).toBe(2);
    // The caller's array is the caller's: the queue is a copy.
    expect(items.map((i) => i.id)).toEqual(['work_1', 'work_2']);
  });

  it('leaves what was not claimed for the next claim when the caller stops early', async () => {
    const plane = new ScriptedControlPlane([sessionWorkItem('work_1', 'sesn_1', null), sessionWorkItem('work_2', 'sesn_2', null)], {});

    for await (const item of plane.claimWork(never)) {
      expect(item.id).toBe('work_1');
      break;
    }

    expect(await claimAll(plane)).toEqual(['work_2']);
  });

  it('yields nothing once the signal has aborted, and stops after the current item when it aborts mid-loop', async () => {
    const items = () => [sessionWorkItem('work_1', 'sesn_1', null), sessionWorkItem('work_2', 'sesn_2', null)];
    expect(await claimAll(new ScriptedControlPlane(items(), {}), AbortSignal.abort())).toEqual([]);

    const plane = new ScriptedControlPlane(items(), {});
    const stop = new AbortController();
    const seen: string[] = [];
    for await (const item of plane.claimWork(stop.signal)) {
      seen.push(item.id);
      stop.abort();
    }
    expect(seen).toEqual(['work_1']);
  });
});

describe('ScriptedControlPlane.runSession', () => {
  const work: WorkItem = sessionWorkItem('work_1', 'sesn_1', null);

  it("plays the item's session script against the tools, recording every call and its result", async () => {
    const results: unknown[] = [];
    const plane = new ScriptedControlPlane([], {
      sesn_1: async (agent) => {
        results.push(await agent.call('echo', { text: 'hi' }));
        results.push(await agent.call('echo', { text: 'again' }));
      },
    });

    await plane.runSession(work, [echoTool()]);

    expect(plane.sessionsRun).toEqual(['sesn_1']);
    expect(plane.calls).toEqual([
      { session: 'sesn_1', name: 'echo', input: { text: 'hi' }, content: 'echo: hi', isError: false },
      { session: 'sesn_1', name: 'echo', input: { text: 'again' }, content: 'echo: again', isError: false },
    ]);
    // The agent reads the same records the test reads.
    expect(results).toEqual(plane.calls);
  });

  it('turns a failing tool into an error result the agent reads, and the script goes on', async () => {
    const plane = new ScriptedControlPlane([], {
      sesn_1: async (agent) => {
        await agent.call('echo', { fail: 'disk full' });
        await agent.call('echo', { fail: 'tool-error' });
        await agent.call('echo', { text: 'still here' });
      },
    });

    await plane.runSession(work, [echoTool()]);

    expect(plane.calls.map((c) => [c.isError, c.content])).toEqual([
      [true, 'Error: disk full'],
      [true, 'refused by the tool'],
      [false, 'echo: still here'],
    ]);
  });

  it('rejects when the script calls a tool the session does not have, or throws itself', async () => {
    const missing = new ScriptedControlPlane([], { sesn_1: async (agent) => void (await agent.call('rm', {})) });
    await expect(missing.runSession(work, [echoTool()])).rejects.toThrow('the session has no tool named rm');
    expect(missing.calls).toEqual([]);

    const failing = new ScriptedControlPlane([], {
      sesn_1: async () => {
        throw new Error('stream failed');
      },
    });
    await expect(failing.runSession(work, [echoTool()])).rejects.toThrow('stream failed');
  });

  it('ends a session with no script at once, with no tool call', async () => {
    const plane = new ScriptedControlPlane([], {});

    await plane.runSession(sessionWorkItem('work_9', 'sesn_9', null), [echoTool()]);

    expect(plane.sessionsRun).toEqual(['sesn_9']);
    expect(plane.calls).toEqual([]);
  });
});

describe('work item fixtures', () => {

  it('workSecretFor is read back by sessionsTokenFromSecret', () => {
    expect(sessionsTokenFromSecret(workSecretFor('sk-sess>>>?'))).toBe('sk-sess>>>?');
  });

  it('sessionWorkItem is a session item in the test environment', () => {
    expect(sessionWorkItem('work_1', 'sesn_1', 'secret')).toEqual({
      id: 'work_1',
      environment_id: 'env_test',
      data: { type: 'session', id: 'sesn_1' },
      secret: 'secret',
    });
  });
});
