import { defineConfig } from 'tsup';

// The bin: one ESM file; the library packages stay dependencies (built by the root build first).
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  sourcemap: true,
  clean: true,
  target: 'node20',
  banner: { js: '#!/usr/bin/env node' },
});
