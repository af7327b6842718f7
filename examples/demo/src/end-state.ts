import { lstat, readdir } from 'node:fs/promises';
import type { Backend } from './backends.js';
import type { Expectations } from './expectations.js';
import { plural } from './report-lines.js';
import type { ExpectedEnd } from './session.js';
import type { Timeline } from './timeline.js';

/**
 * After the session: the store holds exactly what the script expects, the read-only store is as
 * it was, and nothing is left on disk. Each check prints one line; every miss goes to `expect`.
 */
export async function checkEndState(
  backend: Backend,
  memoryRoot: string,
  expected: ExpectedEnd,
  timeline: Timeline,
  expect: Expectations,
): Promise<void> {
  const team = backend.teamNotes;
  const teamNow = await backend.snapshot(team);
  const teamOk = expect.sameMemories(teamNow, expected.teamNotes, `${team.name} in the store`);
  report(timeline, teamOk, `${team.name} in the store holds the ${plural(Object.keys(expected.teamNotes).length, 'memory', 'memories')} the script expects`);

  const style = backend.styleGuide;
  if (style && expected.styleGuide) {
    const styleOk = expect.sameMemories(await backend.snapshot(style), expected.styleGuide, `${style.name} (read-only)`);
    report(timeline, styleOk, `${style.name} is untouched (${plural(Object.keys(expected.styleGuide).length, 'memory', 'memories')}, as before)`);
  }

  const left = [];
  for (const folder of expected.mountFolders) if (await lstat(folder).catch(() => null)) left.push(folder);
  const goneOk = expect.that(left.length === 0, `mount folders still on disk: ${left.join(', ')}`);
  report(timeline, goneOk, 'the mount folders are gone');

  const rest = await readdir(memoryRoot);
  const emptyOk = expect.that(rest.length === 0, `memoryRoot ${memoryRoot} is not empty: ${rest.join(', ')}`);
  report(timeline, emptyOk, 'memoryRoot is empty');
}

function report(timeline: Timeline, ok: boolean, claim: string): void {
  timeline.event('check', `${ok ? 'ok  ' : 'FAIL'}  ${claim}`);
}
