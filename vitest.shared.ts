import { fileURLToPath } from 'node:url';

// Tests import the workspace packages by name; these aliases point the names at the sources so
// that no build is needed before a test run.
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// A subpath comes before its package: an alias also matches the names below it.
export const workspaceAliases = {
  '@memory-mounter/core/engine': here('./packages/core/src/engine.ts'),
  '@memory-mounter/core': here('./packages/core/src/index.ts'),
  '@memory-mounter/testing/anthropic': here('./packages/testing/src/anthropic/index.ts'),
  '@memory-mounter/testing': here('./packages/testing/src/index.ts'),
  '@memory-mounter/anthropic': here('./packages/anthropic/src/index.ts'),
  '@memory-mounter/cli': here('./packages/cli/src/main.ts'),
};
