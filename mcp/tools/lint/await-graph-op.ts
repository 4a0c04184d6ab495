/**
 * Rule `await-graph-op` (a warning of `validate_svc` too): a node method's
 * promise (`here.connect(…)`, `out(…)`) used as a value without `await`.
 */
import ts from 'typescript';
import { SPEC_FILE } from '../compiler/service.ts';

/** svc node methods whose result is a Promise (`connect` resolves to the node, `out`/`in` to arrays). */
const GRAPH_OPS = new Set(['connect', 'connectFrom', 'out', 'in', 'outEdges', 'inEdges', 'disconnect', 'destroy']);
const PROMISE_COMBINATORS = new Set(['all', 'allSettled', 'race', 'any']);

/** Whether a graph operation's Promise is consumed as a Promise (awaited, returned, combined, chained) rather than used as a value. */
function consumedAsPromise(call: ts.CallExpression): boolean {
  let n: ts.Node = call;
  while (ts.isParenthesizedExpression(n.parent) || ts.isAsExpression(n.parent) || ts.isNonNullExpression(n.parent) || (ts.isConditionalExpression(n.parent) && n.parent.condition !== n)) n = n.parent;
  const p = n.parent;
  if (ts.isAwaitExpression(p) || ts.isExpressionStatement(p) || ts.isVoidExpression(p) || ts.isReturnStatement(p) || ts.isYieldExpression(p)) return true;
  if (ts.isArrowFunction(p) && p.body === n) return true;
  if (ts.isPropertyAccessExpression(p) && ['then', 'catch', 'finally'].includes(p.name.text)) return true;
  const combinator = (c: ts.Node | undefined) => c && ts.isCallExpression(c) && ts.isPropertyAccessExpression(c.expression) && c.expression.expression.getText() === 'Promise' && PROMISE_COMBINATORS.has(c.expression.name.text);
  if (ts.isArrayLiteralExpression(p) && combinator(p.parent)) return true;
  if (ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) {
    // A promise kept in a variable to await later: fine when it is awaited (or combined, or returned) somewhere.
    const name = p.name.text;
    const fnBody = ts.findAncestor(p, ts.isFunctionLike) ?? p.getSourceFile();
    let awaited = false;
    const scan = (c: ts.Node): void => {
      if (ts.isIdentifier(c) && c.text === name && c !== p.name) {
        const up = c.parent;
        if (ts.isAwaitExpression(up) || ts.isReturnStatement(up) || (ts.isArrayLiteralExpression(up) && combinator(up.parent)) || (ts.isPropertyAccessExpression(up) && ['then', 'catch', 'finally'].includes(up.name.text))) awaited = true;
      }
      if (!awaited) ts.forEachChild(c, scan);
    };
    scan(fnBody);
    return awaited;
  }
  return false;
}

/** `await-graph-op` over the module. */
export function unawaitedGraphOps(sf: ts.SourceFile, checker: ts.TypeChecker): { start: number; rule: string; message: string }[] {
  const out: { start: number; rule: string; message: string }[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && GRAPH_OPS.has(n.expression.name.text)) {
      const method = checker.getSymbolAtLocation(n.expression.name);
      const isSvc = method?.declarations?.some((d) => d.getSourceFile().fileName === SPEC_FILE);
      if (isSvc && !consumedAsPromise(n)) {
        const text = `${n.expression.expression.getText(sf)}.${n.expression.name.text}(…)`;
        out.push({ start: n.getStart(sf), rule: 'await-graph-op', message: `${text} is used without await: its value is a Promise, not ${n.expression.name.text === 'connect' || n.expression.name.text === 'connectFrom' ? 'the node' : 'the result'}; write await ${text}` });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}
