import { defineProject } from 'vitest/config';
import { workspaceAliases } from '../../vitest.shared.ts';

export default defineProject({
  resolve: { alias: workspaceAliases },
  test: {
    name: 'cli',
    include: ['test/**/*.test.ts'],
    // The tests run the built bin as a child process: give each its time.
    testTimeout: 30_000,
  },
});
