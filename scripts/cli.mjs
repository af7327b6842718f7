// `npx -y pnpm@10.34.9 -s cli <command> ...`: runs the built memory-mounter bin (the one its
// package ships), building the packages first when the bin is missing or older than any package
// source (no global install).
//
// - Paths are the user's: pnpm runs scripts in the repository root, so the bin runs in the
//   folder pnpm was started from ($INIT_CWD), and `./notes` lands there, not in the checkout.
// - stdout is the bin's alone: a build's output goes to stderr, and only when it fails. pnpm's
//   own `> … cli` banner is pnpm's: `-s` (`--silent`) drops it; without it, when stdout is not
//   a terminal (`--json | jq`), a line on stderr says so.
// - Signals reach the bin once each: it runs in its own process group, so a terminal's Ctrl-C
//   reaches this script only, which passes it on (a second Ctrl-C is then the bin's second
//   signal, as it would be without this script, not its third).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { constants } from 'node:os';
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

if (process.env.npm_lifecycle_event === 'cli' && process.env.npm_config_reporter !== 'silent' && !process.stdout.isTTY) {
  process.stderr.write('memory-mounter: pnpm wrote its "> cli" banner on stdout before this; `pnpm -s cli` leaves stdout to the CLI alone\n');
}

// `pnpm cli -- --help` hands the `--` on; the bin takes none.
const args = process.argv.slice(2);
if (args[0] === '--') args.shift();
const cwd = process.env.INIT_CWD || process.cwd();
const posix = process.platform !== 'win32';
const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: 'inherit', detached: posix });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 0)));
