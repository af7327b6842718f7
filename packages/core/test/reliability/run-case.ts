import fc from 'fast-check';
import { scenarioArbitrary, stepArbitrary, type Step } from './commands.js';
import { Case, type Sabotage, type Scenario } from './world.js';

/** Steps per random case: short sequences, many of them, suit a 2-core machine best. */
export const MAX_STEPS = 30;

/**
 * One case: open it, run the steps (each checked by the oracle), then, unless a step finalized,
 * drain the faults, run two forced passes, check convergence and finalize.
 */
export async function runCase(scenario: Scenario, steps: Iterable<Step>, sabotage?: Sabotage): Promise<void> {
  const c = await Case.open(scenario, sabotage);
  try {
    await fc.asyncModelRun(() => ({ model: c.oracle, real: c }), steps);
    if (!c.oracle.finalized) await c.quiesce();
  } finally {
    await c.close();
  }
}

/** The disks of `pnpm test:fuzz`: one case in five on the real disk, the rest on memfs. */
export const FUZZ_DISKS = fc.constantFrom<Scenario['disk']>('node', 'memfs', 'memfs', 'memfs', 'memfs');

/** The property of the random runs: every violation fails. */
export function randomCases(disk: fc.Arbitrary<Scenario['disk']>) {
  return randomCasesReplaying(disk);
}

/** `randomCases`, with the steps of a counterexample replayed exactly (`replayPath`, as fast-check prints it) when given. */
export function randomCasesReplaying(disk: fc.Arbitrary<Scenario['disk']>, replayPath?: string) {
  return fc.asyncProperty(
    scenarioArbitrary(disk),
    fc.commands([stepArbitrary], { maxCommands: MAX_STEPS, size: 'medium', ...(replayPath !== undefined && { replayPath }) }),
    (scenario, steps) => runCase(scenario, steps),
  );
}
