/**
 * Lint rule `no-console-in-ability`: `console.*` in an ability or an `fn`
 * handler, where the run's `log` carries the walker, trace_id and root.
 */
import ts from 'typescript';
import { abilityMethods, type Facts } from './facts.ts';

/** `no-console-in-ability` over the module's abilities and `fn` handlers. */
export function noConsoleInAbility(sf: ts.SourceFile, facts: Facts): { start: number; rule: string; message: string }[] {
  const out: { start: number; rule: string; message: string }[] = [];
  const bodies: { body: ts.Node; log: string }[] = [];
  for (const { decl, method } of abilityMethods(facts)) {
    if (!method.body) continue;
    bodies.push({ body: method.body, log: facts.classes.get(decl)?.kind === 'walker' ? 'this.log' : 'the walker\'s log (walker.log)' });
  }
  const findFns = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && facts.svcName(facts.checker.getSymbolAtLocation(n.expression)) === 'fn' && n.arguments[1]) bodies.push({ body: n.arguments[1], log: 'ctx.log' });
    ts.forEachChild(n, findFns);
  };
  findFns(sf);
  for (const { body, log } of bodies) {
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ts.isIdentifier(n.expression.expression) && n.expression.expression.text === 'console') {
        const level = ['error', 'warn', 'info', 'debug', 'trace'].includes(n.expression.name.text) ? n.expression.name.text : 'info';
        out.push({ start: n.getStart(sf), rule: 'no-console-in-ability', message: `console.${n.expression.name.text} in an ability or function: use ${log}.${level}(…) (its lines carry the walker, trace_id and root)` });
      }
      ts.forEachChild(n, visit);
    };
    visit(body);
  }
  return out;
}
