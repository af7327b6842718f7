import { defineConfig } from 'vitest/config';
import { workspaceAliases } from '../../../vitest.shared.ts';

/**
 * `pnpm bench:outage` (issue 19's "Done when"): the outage bench alone, outside `pnpm test` and
 * `pnpm bench`. It prints its table; it asserts nothing a loaded machine could fail.
 */
export default defineConfig({
  resolve: { alias: workspaceAliases },
  test: {
    name: 'bench-outage',
    root: new URL('.', import.meta.url).pathname,
    include: ['outage.run.ts'],
    testTimeout: 1_800_000,
    hookTimeout: 120_000,
  },
});
