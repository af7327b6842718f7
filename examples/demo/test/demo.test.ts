import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Expectations } from '../src/expectations.js';
import { runDemo } from '../src/run-demo.js';

describe('the offline demo', () => {
  it('runs the whole worker session and leaves the expected end state', async () => {
    let printed = '';
    // An empty environment: offline, whatever keys the machine running the tests has.
    const outcome = await runDemo({ out: { write: (text: string) => (printed += text) }, env: {} });

    expect(outcome.mismatches).toEqual([]);
    expect(outcome.passed).toBe(true);
    expect(printed).toBe(outcome.timeline.map((line) => `${line}\n`).join(''));

    const line = (pattern: RegExp) => outcome.timeline.find((l) => pattern.test(l));
    // A worker served it: claimed from the queue, secret decoded, lease kept, item released.
    expect(line(/worker +polled and claimed work_\w+; the secret decodes to a sessions token/)).toBeDefined();
    expect(line(/worker +lease heartbeat: extended/)).toBeDefined();
    expect(line(/worker +released work_\w+ \(work\.stop\)/)).toBeDefined();
    // Each tool call is followed by a reconcile, throttled by the 15 s interval.
    expect(line(/^ +0 s +agent +write \/mnt\/memory\/team-notes\/projects\/beta\/kickoff\.md/)).toBeDefined();
    expect(line(/^ +0 s +mounter +reconcile\(\) → null/)).toBeDefined();
    expect(line(/warn +conflict: .*store wins.* \/projects\/alpha\/decisions\.md in Team Notes \(memstore_demo_team_notes\)/)).toBeDefined();
    // The guarded writes come back to the agent as errors it can read.
    expect(line(/worker +→ error for the agent: write: refused: \/mnt\/memory\/style-guide\/tone\.md is in the read-only memory store/)).toBeDefined();
    expect(line(/worker +→ error for the agent: write: refused: \/mnt\/memory\/notes\.md is under the memory root/)).toBeDefined();
    // Seen missing at 15 s, still inside the 30 s grace at 30 s, sent at 45 s.
    expect(line(/^ +15 s +mounter .*deletion pending \(30 s grace\) \/scratch\/old-idea\.md/)).toBeDefined();
    expect(line(/^ +30 s +mounter .*deletion pending \(30 s grace\) \/scratch\/old-idea\.md/)).toBeDefined();
    expect(line(/^ +45 s +mounter .*deleted in the store \/scratch\/old-idea\.md/)).toBeDefined();
    expect(line(/finalize\('completed'\) · Team Notes: pushed \/projects\/beta\/kickoff\.md · removed 2 folders/)).toBeDefined();
    expect(outcome.timeline.filter((l) => /^ +removed \//.test(l))).toHaveLength(2);
    expect(outcome.timeline.at(-1)).toMatch(/^PASS: .*\(ran in \d+\.\d s of wall-clock time\)\.$/);

    // The temporary memoryRoot is gone too.
    const root = /^memoryRoot (\S+)/.exec(line(/^memoryRoot /) ?? '')?.[1];
    expect(root).toBeDefined();
    expect(existsSync(root!)).toBe(false);
  });
});

describe('Expectations', () => {
  it('lists every difference between two stores, not just the first', () => {
    const expect_ = new Expectations();
    const same = expect_.sameMemories({ '/a.md': 'A', '/b.md': 'changed', '/extra.md': 'x' }, { '/a.md': 'A', '/b.md': 'B', '/c.md': 'C' }, 'Team Notes');
    expect(same).toBe(false);
    expect(expect_.mismatches).toEqual([
      'Team Notes: /b.md holds "changed", expected "B"',
      'Team Notes: /c.md is missing',
      'Team Notes: /extra.md should not be there',
    ]);
  });
});
