import { defineConfig } from 'tsup';

export default defineConfig({
  // The main entry, and `@memory-mounter/testing/anthropic` (the control-plane doubles, which
  // need the SDK; the main entry does not).
  entry: { index: 'src/index.ts', anthropic: 'src/anthropic/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
