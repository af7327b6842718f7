import { defineConfig } from 'tsup';

// The demo runs from a single bundle of its own sources and the workspace packages' sources,
// so `pnpm demo` needs no prior build of the packages.
export default defineConfig({
  entry: ['src/main.ts'],
  format: ['esm'],
  outDir: 'dist',
  target: 'node20',
  clean: true,
  silent: true,
  noExternal: [/^@memory-mounter\//],
  tsconfig: '../../tsconfig.json',
});
