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
  // The packages' CommonJS dependencies (debug, fs-extra) are bundled too, and they `require`
  // Node built-ins; an ESM bundle has no `require` unless it makes one.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  tsconfig: '../../tsconfig.json',
});
