import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBackend, wantsRealApi, type Backend, type Env } from './backends.js';
import { ManualClock } from './clock.js';
import { checkEndState } from './end-state.js';
import { Expectations } from './expectations.js';
import { runSession } from './session.js';
import { Timeline, type Output } from './timeline.js';
import { runWorkerSession } from './worker-session.js';

const DEMO_FOLDER = '/<demo>';

export interface DemoOutcome {
  passed: boolean;
  /** Every way the run differed from the script; empty when it passed. */
  mismatches: string[];
  /** The printed timeline, line by line. */
  timeline: string[];
}

/**
 * The whole demo: pick the backend, run the scripted session under a fresh temporary
 * memoryRoot, check the end state, clean up. Offline (the default) the session is a whole
 * self-hosted worker session against the emulator (src/worker-session.ts); on the real API,
 * which needs a self-hosted environment for that, the same story is told with the mounter's
 * calls made directly (src/session.ts). Returns the outcome instead of exiting, so a test can
 * run it in-process. Whatever happens, the temporary folder is removed and the backend closed
 * (which, on the real API, deletes what the demo wrote).
 */
export async function runDemo(opts: { out?: Output; env?: Env } = {}): Promise<DemoOutcome> {
  const env = opts.env ?? process.env;
  const clock = new ManualClock();
  const timeline = new Timeline(opts.out ?? process.stdout, clock);
  const expect = new Expectations();
  let backend: Backend | undefined;
  let base: string | undefined;
  const started = Date.now();

  try {
    if (!wantsRealApi(env) && (env.ANTHROPIC_API_KEY || env.MEMORY_STORE_ID)) {
      timeline.say('(set both ANTHROPIC_API_KEY and MEMORY_STORE_ID to run against the real API; running offline)');
    }
    backend = await openBackend(env);
    // realpath: on macOS the temp folder is reached through a symlink (/var -> /private/var),
    // and the mounter compares host paths as given.
    base = await realpath(await mkdtemp(join(tmpdir(), 'memory-mounter-demo-')));
    const memoryRoot = join(base, 'mnt-memory');
    const workdir = join(base, 'workdir');
    await mkdir(memoryRoot);
    await mkdir(workdir);
    timeline.say(`memory-mounter demo · ${backend.description}`);
    timeline.say(`memoryRoot ${memoryRoot} (stands for /mnt/memory)`);
    const { prefix } = backend.teamNotes;
    if (prefix) {
      timeline.say(`${DEMO_FOLDER} below stands for ${prefix}, the folder this run writes in and deletes at the end`);
      timeline.abbreviate(prefix, DEMO_FOLDER);
    }
    if (backend.emulator) {
      timeline.say(`below, ${memoryRoot} is shown as /mnt/memory, as the agent sees it; the clock is the session's, moved by hand`);
      timeline.abbreviate(memoryRoot, '/mnt/memory');
    }
    timeline.say();
    const expected = backend.emulator
      ? await runWorkerSession({ backend, emulator: backend.emulator, memoryRoot, workdir, clock, timeline, expect })
      : await runSession({ backend, memoryRoot, clock, timeline, expect });
    await checkEndState(backend, memoryRoot, expected, timeline, expect);
  } catch (err) {
    expect.that(false, `the demo stopped early: ${describe(err)}`);
  } finally {
    if (base) await rm(base, { recursive: true, force: true });
    await backend?.close().catch((err: unknown) => expect.that(false, `cleanup failed: ${describe(err)}`));
  }

  timeline.say();
  const took = `ran in ${((Date.now() - started) / 1000).toFixed(1)} s of wall-clock time`;
  if (expect.mismatches.length === 0) {
    timeline.say(`PASS: the store holds what the session wrote, and nothing is left on disk (${took}).`);
  } else {
    timeline.say(`FAIL: ${expect.mismatches.length} mismatch(es) (${took}):`);
    for (const mismatch of expect.mismatches) timeline.say(`  - ${mismatch}`);
  }
  return { passed: expect.mismatches.length === 0, mismatches: expect.mismatches, timeline: timeline.lines };
}

/**
 * The library's typed errors (a `kind` or `code`) say what went wrong in their message; anything
 * else is a bug in the demo or the library, and its stack is what a reader needs.
 */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const typed = 'kind' in err || 'code' in err;
  return typed ? `${err.name}: ${err.message}` : (err.stack ?? err.message);
}
