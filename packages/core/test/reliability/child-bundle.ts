import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Bundles a child-process script for the crash and permission tests.
 *
 * Tests import `@memory-mounter/*` through vitest aliases to the sources; a plain `node` child
 * has no such aliases, and a package's `dist` may be missing (no build before `pnpm test`) or
 * stale (built before the last edit). So the child runs a bundle of the *sources*, built here
 * with esbuild in a few hundred milliseconds. esbuild is not a dependency of the workspace, but
 * it is tsup's bundler: it is resolved through tsup, which the root package.json pins.
 */
const repo = (p: string) => fileURLToPath(new URL(`../../../../${p}`, import.meta.url));

interface EsbuildApi {
  build(options: Record<string, unknown>): Promise<{ errors: unknown[] }>;
}

function esbuild(): EsbuildApi {
  const fromHere = createRequire(import.meta.url);
  const fromTsup = createRequire(fromHere.resolve('tsup/package.json'));
  return fromTsup('esbuild') as EsbuildApi;
}

/** Writes a self-contained CommonJS bundle of `entry` (a .ts file) to `outfile`. */
export async function bundleChild(entry: string, outfile: string): Promise<void> {
  await esbuild().build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    // CommonJS: several dependencies are CommonJS and require Node built-ins, which an ESM
    // bundle cannot do.
    format: 'cjs',
    logLevel: 'silent',
    alias: {
      '@memory-mounter/core': repo('packages/core/src/index.ts'),
      '@memory-mounter/testing': repo('packages/testing/src/index.ts'),
      '@memory-mounter/anthropic': repo('packages/anthropic/src/index.ts'),
    },
    // Where the packages' own dependencies live (pnpm keeps them per package).
    nodePaths: [repo('packages/core/node_modules'), repo('packages/testing/node_modules'), repo('packages/anthropic/node_modules')],
  });
}
