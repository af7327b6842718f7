#!/usr/bin/env node
// `pnpm run pack:all`: build the publishable packages and write one tarball each into
// ./tarballs/ (emptied first). `pnpm pack` rewrites `workspace:*` ranges to the packages' real
// versions, so the tarballs install with plain npm. `--no-build` packs what dist/ holds now
// (CI has just built it).
//
// `--install-into <project>` then installs them into a project of the host's, the way
// docs/install.md says: the tarballs are copied into <project>/vendor/memory-mounter/ (so the
// project keeps working when this checkout moves), and npm installs core and anthropic as
// dependencies and testing as a dev dependency. The SDK is their peer: npm keeps the project's
// own @anthropic-ai/sdk when it has one in range, else installs one.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'tarballs');

const intoFlag = process.argv.indexOf('--install-into');
const into = intoFlag === -1 ? null : process.argv[intoFlag + 1];
if (intoFlag !== -1 && !into) fail('--install-into needs the folder of your project');
// Relative to where the command was typed (pnpm runs scripts from the repo root, but keeps it in INIT_CWD).
const project = into === null ? null : isAbsolute(into) ? into : resolve(process.env.INIT_CWD ?? process.cwd(), into);
if (project !== null && !existsSync(join(project, 'package.json'))) fail(`${project} has no package.json: run \`npm init -y\` there first`);

function fail(message) {
  console.error(`pack:all: ${message}`);
  process.exit(1);
}

/** The pnpm that runs this script when it runs under pnpm; else pnpm 10.34.9 through npx. */
function pnpm(args) {
  const execPath = process.env.npm_execpath;
  const [cmd, ...pre] = execPath && /pnpm/.test(execPath) ? [process.execPath, execPath] : ['npx', '-y', 'pnpm@10.34.9'];
  const run = spawnSync(cmd, [...pre, ...args], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) fail(`pnpm ${args.join(' ')} failed`);
}

function npm(args, cwd) {
  console.log(`$ npm ${args.join(' ')}   (in ${cwd})`);
  const run = spawnSync('npm', args, { cwd, stdio: 'inherit' });
  if (run.status !== 0) fail(`npm ${args.join(' ')} failed`);
}

if (!process.argv.includes('--no-build')) pnpm(['run', 'build']);
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
pnpm(['-r', '--filter', './packages/*', 'pack', '--pack-destination', out]);

const tarballs = readdirSync(out).filter((name) => name.endsWith('.tgz'));
console.log(`\npack:all: ${tarballs.length} tarballs in ${out}`);
for (const name of tarballs.sort()) console.log(`  ${name}`);

if (project !== null) {
  const vendor = join(project, 'vendor', 'memory-mounter');
  mkdirSync(vendor, { recursive: true });
  // An older version's tarball would stay referenced by nothing: replace the folder's contents.
  for (const old of readdirSync(vendor).filter((name) => name.startsWith('memory-mounter-') && name.endsWith('.tgz'))) rmSync(join(vendor, old));
  for (const name of tarballs) copyFileSync(join(out, name), join(vendor, name));
  const local = (pkg) => {
    const name = tarballs.find((t) => t.startsWith(`memory-mounter-${pkg}-`));
    if (!name) fail(`no tarball for @memory-mounter/${pkg}`);
    return `./vendor/memory-mounter/${name}`;
  };
  npm(['install', '--no-audit', '--no-fund', local('core'), local('anthropic')], project);
  npm(['install', '--no-audit', '--no-fund', '--save-dev', local('testing')], project);
  console.log(`\npack:all: installed into ${project} (tarballs in vendor/memory-mounter/); check with: npm ls @anthropic-ai/sdk`);
}
