/**
 * Lint rule `no-unused-imports`: an imported name never used. Fixed: the
 * name is removed from its import; a whole import of a package other than
 * svc, typebox or a Node builtin becomes `import 'pkg'` (its side effects kept).
 */
import ts from 'typescript';
import type { Edit } from './finding.ts';

/** Identifier texts used outside import declarations, as references (not member names). */
function usedNames(sf: ts.SourceFile): Set<string> {
  const used = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n)) return;
    if (ts.isIdentifier(n)) {
      const p = n.parent;
      const memberName =
        (ts.isPropertyAccessExpression(p) && p.name === n) ||
        (ts.isPropertyAssignment(p) && p.name === n) ||
        ((ts.isMethodDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isPropertySignature(p) || ts.isMethodSignature(p) || ts.isGetAccessor(p) || ts.isSetAccessor(p)) && p.name === n) ||
        (ts.isQualifiedName(p) && p.right === n);
      if (!memberName) used.add(n.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return used;
}

const SIDE_EFFECT_FREE = (spec: string) => spec === 'svc' || spec.startsWith('svc/') || spec === 'typebox' || spec.startsWith('node:');

/** `no-unused-imports` over the module, with one fix per import declaration. */
export function unusedImports(sf: ts.SourceFile): { start: number; rule: string; message: string; fix: Edit[] }[] {
  const used = usedNames(sf);
  const out: { start: number; rule: string; message: string; fix: Edit[] }[] = [];
  for (const stmt of sf.statements) {
    if (!ts.isImportDeclaration(stmt) || !stmt.importClause || !ts.isStringLiteral(stmt.moduleSpecifier)) continue;
    const clause = stmt.importClause;
    const spec = stmt.moduleSpecifier.text;
    const bindings: ts.Identifier[] = [];
    if (clause.name) bindings.push(clause.name);
    if (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings)) bindings.push(clause.namedBindings.name);
    const named = clause.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : [];
    for (const el of named) bindings.push(el.name);
    const unused = bindings.filter((b) => !used.has(b.text));
    if (unused.length === 0) continue;
    // One edit for the whole declaration, so the edits of its bindings never overlap.
    let text: string;
    if (unused.length === bindings.length) {
      text = SIDE_EFFECT_FREE(spec) || clause.isTypeOnly ? '' : `import ${stmt.moduleSpecifier.getText(sf)};`;
    } else {
      const keepDefault = clause.name && used.has(clause.name.text) ? clause.name.text : undefined;
      const keepNs = clause.namedBindings && ts.isNamespaceImport(clause.namedBindings) && used.has(clause.namedBindings.name.text) ? `* as ${clause.namedBindings.name.text}` : undefined;
      const keptNamed = named.filter((el) => used.has(el.name.text)).map((el) => el.getText(sf));
      const parts = [keepDefault, keepNs, keptNamed.length > 0 ? `{ ${keptNamed.join(', ')} }` : undefined].filter(Boolean);
      const attributes = stmt.attributes ? ` ${stmt.attributes.getText(sf)}` : '';
      text = `import ${clause.isTypeOnly ? 'type ' : ''}${parts.join(', ')} from ${stmt.moduleSpecifier.getText(sf)}${attributes};`;
    }
    let end = stmt.end;
    if (text === '') while (end < sf.text.length && (sf.text[end] === '\n' || sf.text[end] === '\r')) end++;
    const fix = [{ start: stmt.getStart(sf), end: text === '' ? end : stmt.end, text }];
    unused.forEach((b, i) => out.push({ start: b.getStart(sf), rule: 'no-unused-imports', message: `${b.text} is imported but never used`, fix: i === 0 ? fix : [] }));
  }
  return out;
}
