// `npx -y pnpm@10.34.9 cli <command> ...`: runs the built memory-mounter bin, building the
// packages first when the bin is missing or older than any package source (no global install).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = join(root, 'packages/cli/dist/cli.js');

function newest(dir) {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    t = Math.max(t, entry.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const built = (() => {
  try {
    return statSync(bin).mtimeMs;
  } catch {
    return 0;
  }
})();
const sources = Math.max(...['core', 'anthropic', 'testing', 'cli'].map((p) => newest(join(root, 'packages', p, 'src'))));
if (built < sources) {
  // Quiet unless it fails: the command's own output is what the user asked for.
  const build = spawnSync('npx', ['-y', 'pnpm@10.34.9', 'run', 'build'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) {
    process.stderr.write(build.stdout + build.stderr);
    process.exit(2);
  }
}
// Signals go to the bin, which finalizes (a terminal's Ctrl-C reaches both; a kill only us).
const child = spawn(process.execPath, [bin, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
