import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Expectations } from '../src/expectations.js';
import { runDemo } from '../src/run-demo.js';

describe('the offline demo', () => {
  it('runs the whole session and leaves the expected end state', async () => {
    let printed = '';
    // An empty environment: offline, whatever keys the machine running the tests has.
    const outcome = await runDemo({ out: { write: (text: string) => (printed += text) }, env: {} });

    expect(outcome.mismatches).toEqual([]);
    expect(outcome.passed).toBe(true);
    expect(printed).toBe(outcome.timeline.map((line) => `${line}\n`).join(''));

    const line = (pattern: RegExp) => outcome.timeline.find((l) => pattern.test(l));
    expect(line(/^ +0 s +mounter +reconcile\(\) → null/)).toBeDefined();
    expect(line(/warn +conflict: .*store wins.* \/projects\/alpha\/decisions\.md in Team Notes \(memstore_demo_team_notes\)/)).toBeDefined();
    expect(line(/guard +checkWrite refused \(read_only\): .*style-guide\/tone\.md/)).toBeDefined();
    expect(line(/guard +checkWrite refused \(outside_store\)/)).toBeDefined();
    // Seen missing at 15 s, still inside the 30 s grace at 30 s, sent at 45 s.
    expect(line(/^ +15 s +mounter .*deletion pending \(30 s grace\) \/scratch\/old-idea\.md/)).toBeDefined();
    expect(line(/^ +30 s +mounter .*deletion pending \(30 s grace\) \/scratch\/old-idea\.md/)).toBeDefined();
    expect(line(/^ +45 s +mounter .*deleted in the store \/scratch\/old-idea\.md/)).toBeDefined();
    expect(line(/finalize\('completed'\) · Team Notes: pushed \/projects\/beta\/kickoff\.md · removed 2 folders/)).toBeDefined();
    expect(outcome.timeline.filter((l) => /^ +removed \//.test(l))).toHaveLength(2);
    expect(outcome.timeline.at(-1)).toMatch(/^PASS/);

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
