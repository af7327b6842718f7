import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importViolations, LAYERS } from './import-rules.js';

const SRC = join(import.meta.dirname, '../../src');

function sourceTree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(SRC, path), readFileSync(path, 'utf8'));
  }
  return files;
}

/** The real tree with one file replaced or added. */
function planted(file: string, text: string): Map<string, string> {
  const files = sourceTree(SRC);
  files.set(file, text);
  return files;
}

describe('the import rules of packages/core/src (docs/architecture.md)', () => {
  it('hold for the tree as it is', () => {
    const files = sourceTree(SRC);
    expect([...files.keys()].some((f) => f.startsWith('decide/'))).toBe(true);
    expect(importViolations(files)).toEqual([]);
  });

  it('every layer folder exists and holds code', () => {
    const folders = new Set([...sourceTree(SRC).keys()].filter((f) => f.includes('/')).map((f) => f.split('/')[0]));
    expect([...folders].sort()).toEqual([...LAYERS].sort());
  });

  const refused: [string, string, string, RegExp][] = [
    ['decide/ imports code from local/', 'decide/plan.ts', "import { scanStore } from '../local/scan.js';", /decide\/ imports code only from model\/, decide\//],
    ['decide/ imports a builtin', 'decide/settle.ts', "import { readFileSync } from 'node:fs';", /decide\/ is pure/],
    ['model/ imports code from decide/', 'model/reports.ts', "import { foldVersions } from '../decide/feed-fold.js';", /model\/ imports code only from model\//],
    ['local/ imports remote/, even a type', 'local/scan.ts', "import type { StoreClient } from '../remote/store-client.js';", /local\/ imports types only from/],
    ['remote/ imports local/', 'remote/remote-view.ts', "import { StoreFolder } from '../local/store-folder.js';", /remote\/ imports code only from/],
    ['remote/ imports pass/', 'remote/store-listing.ts', "import { StoreSync } from '../pass/store-sync.js';", /remote\/ imports code only from/],
    ['local/ names a type of session/', 'local/marker.ts', "import type { ResolvedOptions } from '../session/options.js';", /local\/ imports types only from/],
    ['pass/ imports session/', 'pass/apply.ts', "import { MemoryMounter } from '../session/mounter.js';", /pass\/ imports code only from/],
    ['a dynamic import of pass/ from decide/', 'decide/unpushed.ts', "export const later = () => import('../pass/apply.js');", /decide\/ imports code only from/],
    ['the disk reached outside NodeFileSystem', 'pass/store-sync.ts', "import { promises } from 'node:fs';", /only local\/node-file-system\.ts touches the disk/],
    ['an import of an entry point', 'session/status.ts', "import { MemoryMounter } from '../index.js';", /never an entry point/],
  ];

  it.each(refused)('a planted forbidden import fails them: %s', (_name, file, line, rule) => {
    const original = sourceTree(SRC).get(file) ?? '';
    const violations = importViolations(planted(file, `${line}\n${original}`));
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatchObject({ file });
    expect(violations[0]!.rule).toMatch(rule);
  });

  it('a file outside the layer folders fails them', () => {
    const violations = importViolations(planted('helpers.ts', 'export const x = 1;\n'));
    expect(violations).toEqual([expect.objectContaining({ file: 'helpers.ts' })]);
  });

  it('a type-only import from the seams is allowed where code would not be', () => {
    const line = "import type { LocalFile } from '../local/scan.js';";
    expect(importViolations(planted('decide/absence.ts', `${line}\n${sourceTree(SRC).get('decide/absence.ts')}`))).toEqual([]);
    const code = "import { scanStore } from '../local/scan.js';";
    expect(importViolations(planted('decide/absence.ts', `${code}\n${sourceTree(SRC).get('decide/absence.ts')}`))).toHaveLength(1);
  });
});
