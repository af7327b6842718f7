import { defineProject } from 'vitest/config';
import { workspaceAliases } from '../../vitest.shared.ts';

export default defineProject({
  resolve: { alias: workspaceAliases },
  test: {
    name: 'example-testing-with-memfs',
    include: ['test/**/*.test.ts'],
  },
});
