import { defineProject } from 'vitest/config';
import { workspaceAliases } from '../../vitest.shared.ts';

export default defineProject({
  resolve: { alias: workspaceAliases },
  test: {
    name: 'cli',
    include: ['test/**/*.test.ts'],
    // Most tests run the built bin as a child process: built once for all of them.
    globalSetup: ['test/build-bin.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
