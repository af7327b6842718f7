import { defineConfig } from 'tsup';

// The bin: one ESM file holding everything it runs (the workspace packages, the SDK,
// cli-progress), so the package's tarball has no dependency to install: `npm i -g` of it, or
// `npx` of it, works from any folder, offline, without the other packages published.
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  noExternal: [/.*/],
  // One file: the SDK's dynamic imports would otherwise become chunks beside it.
  splitting: false,
  // CommonJS modules in the bundle (cli-progress, debug...) call require() for Node's own
  // modules; an ESM file has no require of its own, so the banner makes one.
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __mmCreateRequire } from 'node:module';\nconst require = __mmCreateRequire(import.meta.url);" },
});
