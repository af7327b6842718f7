import { describe, expect, it } from 'vitest';
import { runEmulatedWebhook } from '../src/emulated.js';

// `start --emulator` in-process: the handler's EnvironmentWorker (a draining WorkPoller,
// SessionToolRunner, the lease heartbeat) against the emulator, woken by a signed delivery.
describe('the webhook handler against the emulated service', () => {
  it('refuses a forged delivery, answers a signed one at once, and serves the session behind it with memory', async () => {
    let printed = '';
    const outcome = await runEmulatedWebhook({ out: { write: (text: string) => (printed += text) } });

    expect(outcome.mismatches).toEqual([]);
    expect(outcome.passed).toBe(true);
    expect(printed).toBe(outcome.timeline.map((line) => `${line}\n`).join(''));
    expect(outcome.answers).toEqual({ forged: 400, signed: 202 });
    expect(outcome.inFlightAfterAnswer).toBe(1);
    expect(outcome.outcomes.map((o) => [o.call.name, o.isError])).toEqual([
      ['edit', false],
      ['write', false],
      ['write', true],
    ]);
    expect(outcome.finalize).toMatchObject({ outcome: 'completed', leftInPlace: [] });
    // Only the signed delivery claimed anything: one claim, after the 202.
    const claimed = outcome.timeline.findIndex((l) => /worker +polled: claimed/.test(l));
    const accepted = outcome.timeline.findIndex((l) => /hook +session\.status_run_started, signed → 202/.test(l));
    expect(outcome.timeline.filter((l) => /polled: claimed/.test(l))).toHaveLength(1);
    expect(accepted).toBeGreaterThanOrEqual(0);
    expect(claimed).toBeGreaterThan(outcome.timeline.findIndex((l) => /→ 400/.test(l)));
  });
});
