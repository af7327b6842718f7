import { fileURLToPath } from 'node:url';

// Tests import the workspace packages by name; these aliases point the names at the sources so
// that no build is needed before a test run.
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export const workspaceAliases = {
  '@memory-mounter/core': here('./packages/core/src/index.ts'),
  '@memory-mounter/testing': here('./packages/testing/src/index.ts'),
  '@memory-mounter/anthropic': here('./packages/anthropic/src/index.ts'),
  '@memory-mounter/cli': here('./packages/cli/src/main.ts'),
};
