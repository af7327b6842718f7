// The test projects. Vitest 4 no longer reads this file by itself: vitest.config.ts imports it
// into `test.projects`, so this list is the one place that says which folders hold tests.
export default ['packages/*', 'examples/*'];
