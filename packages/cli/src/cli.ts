import { main } from './main.js';

// The bin: run, then exit with what main says (0 ok, 1 sync problems, 2 usage or config).
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`memory-mounter: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
