/**
 * Lint rule `no-var`: a `var` declaration. Fixed to `let` when every use
 * is inside the block `let` would scope, after the declaration, and not
 * captured per loop iteration.
 */
import ts from 'typescript';
import type { Edit } from './finding.ts';

/** Every identifier of the file by the symbol it names. */
function referencesBySymbol(sf: ts.SourceFile, checker: ts.TypeChecker): Map<ts.Symbol, ts.Identifier[]> {
  const map = new Map<ts.Symbol, ts.Identifier[]>();
  const visit = (n: ts.Node): void => {
    if (ts.isIdentifier(n)) {
      const s = ts.isShorthandPropertyAssignment(n.parent) ? checker.getShorthandAssignmentValueSymbol(n.parent) : checker.getSymbolAtLocation(n);
      if (s) {
        const list = map.get(s) ?? [];
        list.push(n);
        map.set(s, list);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return map;
}

/** `no-var` over the module. */
export function varDeclarations(sf: ts.SourceFile, checker: ts.TypeChecker): { start: number; rule: string; message: string; fix: Edit[] }[] {
  const out: { start: number; rule: string; message: string; fix: Edit[] }[] = [];
  let refs: Map<ts.Symbol, ts.Identifier[]> | undefined;
  const visit = (n: ts.Node): void => {
    if (ts.isVariableDeclarationList(n) && (n.flags & ts.NodeFlags.BlockScoped) === 0 && !(ts.isVariableStatement(n.parent) && (ts.getModifiers(n.parent) ?? []).some((m) => m.kind === ts.SyntaxKind.DeclareKeyword))) {
      refs ??= referencesBySymbol(sf, checker);
      const start = n.getStart(sf);
      const safe = letIsSafe(n, checker, refs);
      out.push({ start, rule: 'no-var', message: `use let or const instead of var${safe ? '' : ' (not fixed: a use is outside the block or before the declaration, or captured in a loop)'}`, fix: safe ? [{ start, end: start + 3, text: 'let' }] : [] });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/**
 * Whether `var` → `let` keeps the meaning: the declaration is a statement of
 * a block (or a loop's head), not inside a loop body (where `let` would be
 * new on every iteration) nor a `case`; its names are declared once; every
 * use is in the block `let` scopes and after the declaration (not in it);
 * and a loop head's variable is not captured by a function.
 */
function letIsSafe(list: ts.VariableDeclarationList, checker: ts.TypeChecker, refs: Map<ts.Symbol, ts.Identifier[]>): boolean {
  const loop = ts.isForStatement(list.parent) || ts.isForInStatement(list.parent) || ts.isForOfStatement(list.parent) ? list.parent : undefined;
  let scope: ts.Node;
  if (loop) {
    scope = loop;
  } else {
    const holder = list.parent.parent;
    if (!holder || !(ts.isBlock(holder) || ts.isSourceFile(holder) || ts.isModuleBlock(holder))) return false;
    scope = holder;
  }
  const inLoopBody = ts.findAncestor(scope.parent, (a) => (ts.isFunctionLike(a) ? 'quit' : ts.isIterationStatement(a, false)));
  if (inLoopBody) return false;
  const names: ts.Identifier[] = [];
  const collect = (b: ts.BindingName): void => {
    if (ts.isIdentifier(b)) names.push(b);
    else for (const el of b.elements) if (!ts.isOmittedExpression(el)) collect(el.name);
  };
  for (const d of list.declarations) collect(d.name);
  for (const name of names) {
    const symbol = checker.getSymbolAtLocation(name);
    if (!symbol || (symbol.declarations?.length ?? 0) !== 1) return false;
    for (const use of refs.get(symbol) ?? []) {
      if (names.includes(use)) continue;
      if (use.pos < scope.pos || use.end > scope.end || use.pos < list.end) return false;
      if (loop && ts.findAncestor(use, (a) => a === loop || ts.isFunctionLike(a)) !== loop) return false;
    }
  }
  return true;
}
