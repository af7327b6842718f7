import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The codes' documentation keeps up with their type: every code reasons.ts defines has a row in docs/reports.md. */
const read = (relative: string) => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), 'utf8');

describe('report codes', () => {
  const source = read('../src/model/reasons.ts');
  const codes = [...source.matchAll(/^\s*\| '([a-z0-9_]+)'/gm)].map((m) => m[1]!);

  it('reasons.ts defines the codes this test reads', () => {
    expect(codes).toEqual(expect.arrayContaining(['distrusted', 'time_bound', 'is_symlink', 'not_regular', 'too_large', 'not_utf8']));
  });

  it('docs/reports.md has a row for every code', () => {
    const doc = read('../../../docs/reports.md');
    const rows = new Set([...doc.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]));
    expect(codes.filter((code) => !rows.has(code))).toEqual([]);
  });
});
