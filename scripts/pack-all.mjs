#!/usr/bin/env node
// `pnpm run pack:all`: build the publishable packages and write one tarball each into
// ./tarballs/ (emptied first). `pnpm pack` rewrites `workspace:*` ranges to the packages' real
// versions, so the tarballs install with plain npm. `--no-build` packs what dist/ holds now
// (CI has just built it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'tarballs');

/** The pnpm that runs this script when it runs under pnpm; else pnpm 10.34.9 through npx. */
function pnpm(args) {
  const execPath = process.env.npm_execpath;
  const [cmd, ...pre] = execPath && /pnpm/.test(execPath) ? [process.execPath, execPath] : ['npx', '-y', 'pnpm@10.34.9'];
  const run = spawnSync(cmd, [...pre, ...args], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`pack:all: pnpm ${args.join(' ')} failed`);
    process.exit(run.status ?? 1);
  }
}

if (!process.argv.includes('--no-build')) pnpm(['run', 'build']);
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
pnpm(['-r', '--filter', './packages/*', 'pack', '--pack-destination', out]);

const tarballs = readdirSync(out).filter((name) => name.endsWith('.tgz'));
console.log(`\npack:all: ${tarballs.length} tarballs in ${out}`);
for (const name of tarballs.sort()) console.log(`  ${name}`);
