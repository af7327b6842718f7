import { runDemo } from './run-demo.js';

// `pnpm demo`: the timeline goes to stdout, the exit code says whether the end state was right.
const outcome = await runDemo({ out: process.stdout });
process.exitCode = outcome.passed ? 0 : 1;
