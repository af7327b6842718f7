import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global setup: the bin under test is the built one, so the packages are built once,
 * before any test file runs (files run in parallel: each building would race on dist/).
 */
export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
  const build = spawnSync('npx', ['-y', 'pnpm@10.34.9', 'run', 'build'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`build failed:\n${build.stdout}\n${build.stderr}`);
}
