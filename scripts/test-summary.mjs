#!/usr/bin/env node
// Prints the closing line CI reads, `N passed, N failed`, from vitest's JSON report, and fails
// when any test failed or none ran (a green run that tested nothing is not a pass).
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-report.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`no vitest JSON report at ${file}: ${err.message}`);
  console.log('0 passed, 0 failed');
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const failed = (report.numFailedTests ?? 0) + (report.numRuntimeErrorTestSuites ?? 0);
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
if (passed === 0) console.log('no test ran');
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
