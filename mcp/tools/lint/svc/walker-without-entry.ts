/**
 * `svc/walker-without-entry` (warning): a non-abstract class extending
 * `Walker` with no `@entry` method of its own or of a base class in the
 * module, and no node class of the module with an ability naming it —
 * spawned, it does nothing.
 */
import ts from 'typescript';
import { abilities, type ClassFacts, type Facts } from '../facts.ts';
import type { Finding } from '../finding.ts';

/** `svc/walker-without-entry` over the module. */
export function checkWalkersHaveEntry(facts: Facts): Finding[] {
  // Walkers a node class of the module reacts to (by class or name), or all when a node has an ability for any walker.
  const named = new Set<string>();
  let anyWalker = false;
  for (const [decl, cls] of facts.classes) {
    if (cls.kind !== 'node') continue;
    for (const { dec } of abilities(facts, decl)) {
      const args = (dec.expression as ts.CallExpression).arguments;
      if (args.length === 0) anyWalker = true;
      for (const a of args) {
        const t = facts.abilityTarget(a);
        if (typeof t === 'object') named.add(t.facts?.name ?? t.name);
      }
    }
  }
  const out: Finding[] = [];
  for (const [decl, cls] of facts.classes) {
    if (cls.kind !== 'walker' || anyWalker || named.has(cls.name)) continue;
    if ((ts.getModifiers(decl) ?? []).some((m) => m.kind === ts.SyntaxKind.AbstractKeyword)) continue;
    let hasEntry = false;
    let known = true;
    for (let c: ClassFacts | undefined = cls; c && !hasEntry; ) {
      hasEntry = abilities(facts, c.decl).some((a) => a.kind === 'entry');
      const base: ts.Expression | undefined = c.decl.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
      const baseType: ts.Type | undefined = base && facts.checker.getTypeAtLocation(base).getConstructSignatures()[0]?.getReturnType();
      if (facts.svcName(baseType?.getSymbol()) === 'Walker') break;
      const baseDecl: ts.ClassDeclaration | undefined = baseType?.getSymbol()?.declarations?.find(ts.isClassDeclaration);
      c = baseDecl && facts.classes.get(baseDecl);
      if (!c) known = false;
    }
    if (hasEntry || !known) continue;
    out.push({
      start: (decl.name as ts.Identifier).getStart(),
      rule: 'svc/walker-without-entry',
      severity: 'warning',
      message: `${cls.name} has no @entry ability: spawned, it does nothing (add e.g. @entry(Root) start(here: Root) { … })`,
    });
  }
  return out;
}
