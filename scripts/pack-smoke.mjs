#!/usr/bin/env node
// CI's pack smoke: the packages as a project outside this repository gets them.
//
//  1. pack: one tarball per publishable package into ./tarballs/ (`--no-build`: CI has built);
//  2. read each tarball's package.json: no `workspace:` range left, the SDK a peer only;
//  3. a scratch project in a temp folder installs all tarballs at once with npm, with the
//     host's own @anthropic-ai/sdk, then typechecks scripts/pack-smoke/*.{mts,cts} strictly
//     (skipLibCheck off) and runs them: ESM import and CommonJS require, one
//     materialize/finalize against the emulator, the host's ToolError;
//  4. a second scratch project installs the tarballs one at a time, in dependency order, and
//     runs the same compiled smoke;
//  5. an app on a newer SDK (1.15.0) installs them with the command docs/install.md gives
//     (`pack:all --install-into`), then the CLI's tarball: `npm ls` must find one SDK copy.
// Third-party dependencies come from the npm registry; nothing from this workspace's
// node_modules is reachable from the scratch projects (they live under the OS temp folder).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const tarballDir = join(root, 'tarballs');
const smokeSrc = join(root, 'scripts', 'pack-smoke');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// The versions the host pins: the SDK this repository is tested against, Node 20's types.
const HOST_DEPS = ['@anthropic-ai/sdk@1.14.0', '@types/node@20.19.43'];
// Dependency order: each tarball's @memory-mounter dependencies come before it.
const ORDER = ['core', 'anthropic', 'testing'];
// Every publishable package, the CLI too: each manifest is checked.
const ALL = [...ORDER, 'cli'];
// A host a minor version ahead of the SDK tested against: the peer range must take its copy.
const NEWER_SDK = '@anthropic-ai/sdk@1.15.0';
const started = Date.now();

function run(cmd, args, cwd) {
  const shown = `${cmd === process.execPath ? 'node' : cmd} ${args.map((a) => a.replace(root, '<repo>')).join(' ')}`;
  console.log(`$ ${shown}`);
  const t0 = Date.now();
  const result = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0) fail(`${shown} exited with ${result.status ?? result.signal}`);
  console.log(`     (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

function fail(message) {
  console.error(`pack smoke FAILED: ${message}`);
  process.exit(1);
}

function npmInstall(cwd, specs) {
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs], cwd);
}

function scratchProject(label) {
  const dir = mkdtempSync(join(tmpdir(), `mm-pack-smoke-${label}-`));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `mm-smoke-${label}`, private: true, type: 'module' }, null, 2));
  return dir;
}

// 1. Pack.
run(process.execPath, [join(root, 'scripts', 'pack-all.mjs'), '--no-build'], root);
const tarballs = Object.fromEntries(
  ALL.map((name) => {
    const file = readdirSync(tarballDir).find((f) => f.startsWith(`memory-mounter-${name}-`) && f.endsWith('.tgz'));
    if (!file) fail(`no tarball for @memory-mounter/${name} in ${tarballDir}`);
    return [name, join(tarballDir, file)];
  }),
);

// 2. The manifests as published.
for (const [name, file] of Object.entries(tarballs)) {
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', file, 'package/package.json'], { encoding: 'utf8' }));
  const files = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).split('\n');
  const ranges = { ...manifest.dependencies, ...manifest.peerDependencies, ...manifest.optionalDependencies };
  const leftover = Object.entries(ranges).filter(([, range]) => String(range).startsWith('workspace:'));
  if (leftover.length > 0) fail(`${name}: workspace ranges left in the tarball: ${JSON.stringify(leftover)}`);
  if (manifest.dependencies?.['@anthropic-ai/sdk']) fail(`${name}: @anthropic-ai/sdk must be a peer dependency, not a dependency`);
  // A command-line package (the CLI) ships its `bin` files and no entry points.
  for (const bin of Object.values(manifest.bin ?? {})) {
    if (!files.includes(`package/${bin.replace(/^\.\//, '')}`)) fail(`${name}: the tarball lacks its bin ${bin}`);
  }
  // Every entry of `exports` (the main one, and a subpath such as `./engine`), in both formats.
  const entries = Object.keys(manifest.exports ?? (manifest.bin ? {} : { '.': null }))
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? 'index' : key.slice(2)));
  for (const entry of entries.flatMap((e) => [`dist/${e}.js`, `dist/${e}.cjs`, `dist/${e}.d.ts`, `dist/${e}.d.cts`])) {
    if (!files.includes(`package/${entry}`)) fail(`${name}: the tarball lacks ${entry}`);
  }
  for (const field of ['repository', 'license', 'engines']) if (!manifest[field]) fail(`${name}: no "${field}" in package.json`);
  console.log(`ok   ${manifest.name}@${manifest.version}: ${files.filter(Boolean).length} files, deps ${JSON.stringify(manifest.dependencies ?? {})}`);
}
if (!JSON.parse(execFileSync('tar', ['-xzOf', tarballs.anthropic, 'package/package.json'], { encoding: 'utf8' })).peerDependencies?.['@anthropic-ai/sdk']) {
  fail('anthropic: @anthropic-ai/sdk is not a peer dependency');
}

// 3. All tarballs at once; typecheck; run.
const together = scratchProject('together');
const oneByOne = scratchProject('one-by-one');
const newerHost = scratchProject('newer-sdk');
try {
  npmInstall(together, [...ORDER.map((name) => tarballs[name]), ...HOST_DEPS]);
  for (const file of ['tsconfig.json', 'smoke.mts', 'smoke-require.cts']) cpSync(join(smokeSrc, file), join(together, file));
  run(process.execPath, [tsc, '-p', together], together);
  run(process.execPath, [join(together, 'out', 'smoke.mjs')], together);
  run(process.execPath, [join(together, 'out', 'smoke-require.cjs')], together);

  // 4. One tarball at a time, in dependency order, after the host's own SDK.
  npmInstall(oneByOne, HOST_DEPS.slice(0, 1));
  for (const name of ORDER) npmInstall(oneByOne, [tarballs[name]]);
  mkdirSync(join(oneByOne, 'out'));
  cpSync(join(together, 'out'), join(oneByOne, 'out'), { recursive: true });
  run(process.execPath, [join(oneByOne, 'out', 'smoke.mjs')], oneByOne);
  run(process.execPath, [join(oneByOne, 'out', 'smoke-require.cjs')], oneByOne);

  // 5. The documented install into an app that already has a newer SDK, and the CLI beside it.
  npmInstall(newerHost, [NEWER_SDK]);
  run(process.execPath, [join(root, 'scripts', 'pack-all.mjs'), '--no-build', '--install-into', newerHost], root);
  npmInstall(newerHost, [tarballs.cli]);
  const sdkCopies = sdkVersions(JSON.parse(execFileSync('npm', ['ls', '@anthropic-ai/sdk', '--all', '--json'], { cwd: newerHost, encoding: 'utf8' })));
  if (sdkCopies.size !== 1 || !sdkCopies.has('1.15.0')) fail(`an app on ${NEWER_SDK} has SDK copies ${JSON.stringify([...sdkCopies])}, not one`);
  console.log(`ok   one @anthropic-ai/sdk (1.15.0) beside core, anthropic, testing and the CLI`);
} finally {
  rmSync(together, { recursive: true, force: true });
  rmSync(oneByOne, { recursive: true, force: true });
  rmSync(newerHost, { recursive: true, force: true });
}

/** Every version of @anthropic-ai/sdk in an `npm ls --json` tree. */
function sdkVersions(tree, found = new Set()) {
  for (const [name, dep] of Object.entries(tree.dependencies ?? {})) {
    if (name === '@anthropic-ai/sdk' && dep.version) found.add(dep.version);
    sdkVersions(dep, found);
  }
  return found;
}
console.log(`\npack smoke passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
