/**
 * `svc/public-spawns-private` (warning): inside a *public context* — the
 * body of a walker class with `static access = 'pub'`, the body of a hook
 * walker (its name starts with `_`: hooks run before every route, for
 * anonymous callers too), or the handler of `fn({ access: 'pub' }, …)` —
 * a call `….spawn(X, …)` or `spawn(X, …)` whose first argument is a walker
 * class of the module, or its name, whose access is not `'pub'`. A spawn
 * does not check access: an anonymous caller would run the private walker
 * (on the shared guest graph).
 */
import ts from 'typescript';
import { type ClassFacts, type Facts, unwrap } from '../facts.ts';
import type { Finding } from '../finding.ts';

/** `svc/public-spawns-private` over the module. */
export function checkPublicSpawns(facts: Facts): Finding[] {
  const out: Finding[] = [];
  const contexts: { node: ts.Node; what: string }[] = [];
  for (const cls of facts.classes.values()) {
    if (cls.kind !== 'walker') continue;
    if (facts.accessOf(cls) === 'pub') contexts.push({ node: cls.decl, what: `public walker ${cls.name}` });
    else if (cls.name.startsWith('_')) contexts.push({ node: cls.decl, what: `hook walker ${cls.name} (hooks run for every request, anonymous ones too)` });
  }
  const findFns = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && facts.svcName(facts.checker.getSymbolAtLocation(n.expression)) === 'fn') {
      const [opts, handler] = n.arguments;
      const access = opts && ts.isObjectLiteralExpression(opts) ? opts.properties.find((p) => p.name?.getText() === 'access') : undefined;
      const value = access && ts.isPropertyAssignment(access) ? unwrap(access.initializer) : undefined;
      if (handler && value && ts.isStringLiteralLike(value) && value.text === 'pub') {
        const owner = ts.isVariableDeclaration(n.parent) ? n.parent.name.getText() : 'a function';
        contexts.push({ node: handler, what: `public function ${owner}` });
      }
    }
    ts.forEachChild(n, findFns);
  };
  findFns(facts.sf);
  for (const { node, what } of contexts) {
    const visit = (n: ts.Node): void => {
      if (n !== node && ts.isClassDeclaration(n)) return;
      if (ts.isCallExpression(n) && n.arguments[0]) {
        const callee = n.expression;
        const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : undefined;
        const target = name === 'spawn' ? spawnTarget(facts, n.arguments[0]) : undefined;
        const access = target && facts.accessOf(target);
        if (target && access !== undefined && access !== 'pub') {
          out.push({
            start: n.arguments[0].getStart(),
            rule: 'svc/public-spawns-private',
            severity: 'warning',
            message: `${what} spawns ${target.name}, whose access is '${access}': spawn() does not check access, so a caller without a token runs ${target.name} (on the shared guest graph); make ${target.name} 'pub' if that is meant, or the caller private`,
          });
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(node);
  }
  return out;
}

function spawnTarget(facts: Facts, arg: ts.Expression): ClassFacts | undefined {
  const e = unwrap(arg);
  if (ts.isStringLiteralLike(e)) {
    const f = facts.byName.get(e.text);
    return f?.kind === 'walker' ? f : undefined;
  }
  const symbol = facts.checker.getSymbolAtLocation(e);
  const decl = symbol?.declarations?.find(ts.isClassDeclaration);
  const f = decl && facts.classes.get(decl);
  return f?.kind === 'walker' ? f : undefined;
}
