/**
 * Lint rule `async-ability-without-await`: an ability declared `async` that
 * never awaits (a run whose abilities are all synchronous is answered
 * without promise hops).
 */
import ts from 'typescript';
import { abilityMethods, type Facts } from './facts.ts';

/** `async-ability-without-await` over the module's abilities. */
export function asyncAbilityWithoutAwait(sf: ts.SourceFile, facts: Facts): { start: number; rule: string; message: string }[] {
  const out: { start: number; rule: string; message: string }[] = [];
  for (const { method } of abilityMethods(facts)) {
    if (!method.body) continue;
    if ((ts.getModifiers(method) ?? []).some((m) => m.kind === ts.SyntaxKind.AsyncKeyword) && !awaits(method.body)) {
      out.push({
        start: method.name.getStart(sf),
        rule: 'async-ability-without-await',
        message: `ability ${method.name.getText(sf)} is async but never awaits: drop async (a run whose abilities are all synchronous is answered without promise hops)`,
      });
    }
  }
  return out;
}

/** Whether a function body awaits (not counting functions nested in it). */
function awaits(body: ts.Node): boolean {
  let found = false;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (ts.isAwaitExpression(n) || (ts.isForOfStatement(n) && n.awaitModifier)) {
      found = true;
      return;
    }
    if (ts.isFunctionLike(n)) return;
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(body, visit);
  return found;
}
