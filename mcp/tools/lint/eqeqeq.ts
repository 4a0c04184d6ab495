/**
 * Lint rule `eqeqeq`: `==` and `!=` (not `== null` / `== undefined`
 * checks). Fixed to `===` / `!==` when both sides are of one primitive kind
 * (or both objects), where the two mean the same.
 */
import ts from 'typescript';
import { unwrap } from './facts.ts';
import type { Edit } from './finding.ts';

/** A primitive kind all parts of a type share, 'object' for object types; undefined when mixed or loose (any, null, undefined). */
function kindOfType(type: ts.Type): string | undefined {
  const parts = type.isUnion() ? type.types : [type];
  let kind: string | undefined;
  for (const p of parts) {
    const f = p.flags;
    const k = f & ts.TypeFlags.StringLike ? 'string' : f & ts.TypeFlags.NumberLike ? 'number' : f & ts.TypeFlags.BooleanLike ? 'boolean' : f & ts.TypeFlags.BigIntLike ? 'bigint' : f & (ts.TypeFlags.Object | ts.TypeFlags.NonPrimitive) ? 'object' : undefined;
    if (!k || (kind && kind !== k)) return undefined;
    kind = k;
  }
  return kind;
}

/** `eqeqeq` over the module. */
export function looseEquality(sf: ts.SourceFile, checker: ts.TypeChecker): { start: number; rule: string; message: string; fix: Edit[] }[] {
  const out: { start: number; rule: string; message: string; fix: Edit[] }[] = [];
  const nullish = (e: ts.Expression) => {
    const u = unwrap(e);
    return u.kind === ts.SyntaxKind.NullKeyword || (ts.isIdentifier(u) && u.text === 'undefined');
  };
  const visit = (n: ts.Node): void => {
    if (ts.isBinaryExpression(n)) {
      const op = n.operatorToken.kind;
      if ((op === ts.SyntaxKind.EqualsEqualsToken || op === ts.SyntaxKind.ExclamationEqualsToken) && !nullish(n.left) && !nullish(n.right)) {
        const strict = op === ts.SyntaxKind.EqualsEqualsToken ? '===' : '!==';
        const left = kindOfType(checker.getTypeAtLocation(n.left));
        const same = left !== undefined && left === kindOfType(checker.getTypeAtLocation(n.right));
        const start = n.operatorToken.getStart(sf);
        out.push({
          start,
          rule: 'eqeqeq',
          message: `use ${strict} instead of ${n.operatorToken.getText(sf)}${same ? '' : ' (not fixed: the two sides are not of one kind, so the meaning could change)'}`,
          fix: same ? [{ start, end: n.operatorToken.end, text: strict }] : [],
        });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}
