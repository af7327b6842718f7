import ts from 'typescript';

/**
 * The import rules of `packages/core/src` (docs/architecture.md), as a pure check over source
 * texts, so that the test can run it on the real tree and on planted violations alike.
 *
 * A "code" import is one that survives compilation: any binding not marked `type`. Type-only
 * imports compile away, so the pure layers may name the seams' shapes (`LocalFile`,
 * `StoreMemory`) without depending on the code behind them; they still may not name anything of
 * the orchestration (`pass/`, `session/`, `recovery/`).
 */

/** The layers, each a folder of `src`. The two entry points (`index.ts`, `engine.ts`) are `entry`. */
export const LAYERS = ['model', 'decide', 'local', 'remote', 'pass', 'session', 'recovery'] as const;
export type Layer = (typeof LAYERS)[number] | 'entry';

/** Where each layer may import code from (its own folder always). */
const CODE_FROM: Record<Layer, readonly Layer[]> = {
  model: ['model'],
  decide: ['model', 'decide'],
  local: ['model', 'decide', 'local'],
  remote: ['model', 'decide', 'remote'],
  pass: ['model', 'decide', 'local', 'remote', 'pass'],
  session: ['model', 'decide', 'local', 'remote', 'pass', 'session', 'recovery'],
  recovery: ['model', 'decide', 'local', 'remote', 'pass', 'session', 'recovery'],
  entry: [...LAYERS],
};

/** Where each layer may import types from: code's places, plus the shared vocabulary below the orchestration. */
const TYPES_FROM: Record<Layer, readonly Layer[]> = {
  model: ['model', 'decide', 'local', 'remote'],
  decide: ['model', 'decide', 'local', 'remote'],
  // The two seams' sides never see each other, not even as types.
  local: ['model', 'decide', 'local'],
  remote: ['model', 'decide', 'remote'],
  pass: CODE_FROM.pass,
  session: CODE_FROM.session,
  recovery: CODE_FROM.recovery,
  entry: CODE_FROM.entry,
};

/** Modules outside `src` a layer may import. `decide/` is pure: nothing. The disk is reached only by NodeFileSystem. */
const DISK_MODULES = new Set(['node:fs', 'node:fs/promises', 'fs', 'fs/promises', 'fs-extra']);
const DISK_FILE = 'local/node-file-system.ts';

export interface Violation {
  file: string;
  imports: string;
  rule: string;
}

export function layerOf(file: string): Layer | null {
  if (file === 'index.ts' || file === 'engine.ts') return 'entry';
  const folder = file.split('/')[0] as Layer;
  return file.includes('/') && (LAYERS as readonly string[]).includes(folder) ? folder : null;
}

/** `../model/limits.js` imported by `decide/plan.ts` -> `model/limits.ts`; null for a package or builtin. */
function resolveWithin(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const parts = file.split('/').slice(0, -1);
  for (const part of specifier.split('/')) {
    if (part === '..') parts.pop();
    else if (part !== '.') parts.push(part);
  }
  return parts.join('/').replace(/\.js$/, '.ts');
}

interface ImportEdge {
  specifier: string;
  typeOnly: boolean;
}

function importsOf(file: string, text: string): ImportEdge[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const edges: ImportEdge[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : null;
      const typeOnly =
        !!clause && (clause.isTypeOnly || (!clause.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
      edges.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : null;
      const typeOnly = node.isTypeOnly || (!!named && named.length > 0 && named.every((e) => e.isTypeOnly));
      edges.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) edges.push({ specifier: arg.text, typeOnly: false });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      edges.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

/** Every import of `files` (paths relative to `src`, with their text) that breaks a rule. */
export function importViolations(files: ReadonlyMap<string, string>): Violation[] {
  const violations: Violation[] = [];
  for (const [file, text] of files) {
    const layer = layerOf(file);
    if (layer === null) {
      violations.push({ file, imports: '', rule: `every file of src is in a layer folder (${LAYERS.join(', ')}) or is an entry point` });
      continue;
    }
    for (const edge of importsOf(file, text)) {
      const target = resolveWithin(file, edge.specifier);
      if (target === null) {
        if (layer === 'decide') violations.push({ file, imports: edge.specifier, rule: 'decide/ is pure: it imports no package and no builtin' });
        else if (DISK_MODULES.has(edge.specifier) && file !== DISK_FILE) {
          violations.push({ file, imports: edge.specifier, rule: `only ${DISK_FILE} touches the disk: everything else goes through the FileSystem seam` });
        }
        continue;
      }
      const targetLayer = layerOf(target);
      if (targetLayer === null || targetLayer === 'entry') {
        violations.push({ file, imports: edge.specifier, rule: 'imports reach layer folders only, never an entry point' });
        continue;
      }
      const allowed = edge.typeOnly ? TYPES_FROM[layer] : CODE_FROM[layer];
      if (!allowed.includes(targetLayer)) {
        const what = edge.typeOnly ? 'types' : 'code';
        violations.push({ file, imports: edge.specifier, rule: `${layer}/ imports ${what} only from ${allowed.map((l) => `${l}/`).join(', ')}` });
      }
    }
  }
  return violations;
}
