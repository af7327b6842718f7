import { defineConfig } from 'tsup';

// `start` runs one bundle of the example's sources and the workspace packages' sources, so it
// needs no prior build of the packages (the same setup as examples/demo).
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
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  tsconfig: '../../tsconfig.json',
});
