import { defineConfig } from 'tsup';

export default defineConfig({
  // Two entries, `@memory-mounter/core` and `@memory-mounter/core/engine`. Split into shared
  // chunks in both formats: each class (StoreError, StoreFolder, ...) then exists once, so
  // `instanceof` holds across the two entries in CommonJS too.
  entry: ['src/index.ts', 'src/engine.ts'],
  splitting: true,
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
