import { describe, expect, it } from 'vitest';
import { runEmulatedSession } from '../src/emulated.js';

// `start --emulator` in-process: the worker's EnvironmentWorker (WorkPoller, SessionToolRunner,
// lease heartbeat) serving a scripted session against the emulator, memory included.
describe('the custom worker against the emulated service', () => {
  it('claims the item, serves the scripted agent with memory synced after each call, finalizes and releases it', async () => {
    let printed = '';
    const outcome = await runEmulatedSession({ out: { write: (text: string) => (printed += text) }, leaseTtlSeconds: 1, thinkMs: 700 });

    expect(outcome.mismatches).toEqual([]);
    expect(outcome.passed).toBe(true);
    expect(printed).toBe(outcome.timeline.map((line) => `${line}\n`).join(''));
    // Each call's reconcile ran before its result was posted: the store moved call by call.
    expect(outcome.calls.map((c) => [c.outcome.call.name, c.outcome.isError, Object.keys(c.notesWhenAnswered).sort()])).toEqual([
      ['read', false, ['/todo.md']],
      ['edit', false, ['/todo.md']],
      ['write', false, ['/journal/day-1.md', '/todo.md']],
      ['write', true, ['/journal/day-1.md', '/todo.md']],
      ['save_note', false, ['/journal/day-1.md', '/notes/met.md', '/todo.md']],
      ['save_note', true, ['/journal/day-1.md', '/notes/met.md', '/todo.md']],
    ]);
    expect(outcome.calls[1]!.notesWhenAnswered['/todo.md']).toBe('- buy oat milk\n');
    // The refusal is withMemorySync's ToolError text, which the SDK's runner only posts when the
    // ToolError is its own class (one SDK copy).
    expect(outcome.calls[3]!.outcome.text).toMatch(/^write: refused: .*house-style\/tone\.md.* read-only/);
    expect(outcome.calls[5]!.outcome.text).toMatch(/^save_note: refused: .*house-style\/notes\/tone\.md.* read-only/);
    // A 1 s lease over a session that runs past 0.7 s: renewed at least once after the first beat.
    expect(outcome.heartbeats).toBeGreaterThanOrEqual(2);
    expect(outcome.finalize).toMatchObject({ outcome: 'completed', leftInPlace: [] });
    const line = (pattern: RegExp) => outcome.timeline.some((l) => pattern.test(l));
    expect(line(/worker +polled: claimed work_\w+ \(session sesn_emulated\); its secret carries a sessions token/)).toBe(true);
    expect(line(/worker +mounted Notes at \/mnt\/memory\/notes \(read_write\), House Style at \/mnt\/memory\/house-style \(read_only\)/)).toBe(true);
    expect(line(/worker +released work_\w+ \(work\.stop\)/)).toBe(true);
  });
});
