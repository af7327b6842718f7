import { describe, expect, it } from 'vitest';
import { clearedByRedownload, takeUpAgreed } from '../src/decide/redownload-rule.js';

const cleared = new Map([
  ['/a.md', 'sha-a'],
  ['/b.md', 'sha-b'],
]);

describe('the re-download rule, row by row', () => {
  it('restores an entry where a file stands and the store still holds the agreed sha', () => {
    const { restored, waiting } = takeUpAgreed(cleared, new Map(), (p) => cleared.get(p), (p) => p === '/a.md');
    expect([...restored]).toEqual([['/a.md', 'sha-a']]);
    expect(waiting && [...waiting]).toEqual([['/b.md', 'sha-b']]);
  });

  it('keeps an entry waiting while no file stands there and the store is unchanged', () => {
    const { restored, waiting } = takeUpAgreed(cleared, new Map(), (p) => cleared.get(p), () => false);
    expect(restored.size).toBe(0);
    expect(waiting && [...waiting.keys()]).toEqual(['/a.md', '/b.md']);
  });

  it('drops an entry once the store holds anything else there, file or not', () => {
    const { restored, waiting } = takeUpAgreed(cleared, new Map(), (p) => (p === '/a.md' ? 'sha-other' : undefined), () => true);
    expect(restored.size).toBe(0);
    expect(waiting).toBeNull();
  });

  it('drops an entry once its path is in the baseline again (the download pulled it)', () => {
    const { restored, waiting } = takeUpAgreed(cleared, new Map([['/a.md', 'sha-new']]), (p) => cleared.get(p), () => true);
    expect([...restored]).toEqual([['/b.md', 'sha-b']]);
    expect(waiting).toBeNull();
  });

  it("keeps an entry whose path the download's listing did not show at all, waiting, and says it went unseen (B40)", () => {
    // The listing showed /b.md only; /a.md may be a memory it missed, and a file there may be the agent's.
    const shown = new Set(['/b.md']);
    const { restored, waiting, unseen } = takeUpAgreed(cleared, new Map(), (p) => (p === '/b.md' ? 'sha-b' : undefined), () => true, (p) => !shown.has(p));
    expect([...restored]).toEqual([['/b.md', 'sha-b']]);
    expect(waiting && [...waiting]).toEqual([['/a.md', 'sha-a']]);
    expect(unseen && [...unseen]).toEqual([['/a.md', 'sha-a']]);
  });

  it('without `unseen` (a pass, judging against its whole view), a path the store does not show is moot', () => {
    const { waiting, unseen } = takeUpAgreed(cleared, new Map(), () => undefined, () => true);
    expect(waiting).toBeNull();
    expect(unseen).toBeNull();
    // Shown with other content, a path is moot whatever `unseen` says.
    expect(takeUpAgreed(cleared, new Map(), () => 'sha-other', () => true, () => true).waiting).toBeNull();
  });

  it('a second re-download clears what was agreed and what the first left waiting, the newer agreement winning', () => {
    const cleared2 = clearedByRedownload(new Map([['/a.md', 'old'], ['/c.md', 'sha-c']]), new Map([['/a.md', 'sha-a']]));
    expect(cleared2 && Object.fromEntries(cleared2)).toEqual({ '/a.md': 'sha-a', '/c.md': 'sha-c' });
    expect(clearedByRedownload(null, new Map())).toBeNull();
  });
});
