/**
 * `svc/ability-type` (error): `@entry(X)` / `@exit(X)` where `X` is not a
 * node, edge or walker class (nor a thunk `() => X` returning one, nor the
 * name of one); or is one of the wrong side — a walker's abilities react to
 * node classes, a node's to walker classes; or the decorated method is not
 * on a walker or node class. A class *name* (`@entry('Todo')`) that no
 * class of the module has is a warning: another module may declare it.
 */
import ts from 'typescript';
import { abilities, type Facts, type Kind } from '../facts.ts';
import type { Finding } from '../finding.ts';

/** `svc/ability-type` over the module. */
export function checkAbilities(facts: Facts): Finding[] {
  const out: Finding[] = [];
  for (const [decl, cls] of facts.classes) {
    for (const { kind, dec } of abilities(facts, decl)) {
      const call = dec.expression as ts.CallExpression;
      if (cls.kind !== 'walker' && cls.kind !== 'node') {
        out.push({ start: dec.getStart(), rule: 'svc/ability-type', severity: 'error', message: `@${kind} on ${cls.name}: abilities run on walker and node classes only, and ${cls.name} is ${cls.kind === 'edge' ? 'an edge' : 'neither'}` });
        continue;
      }
      const want: Kind = cls.kind === 'walker' ? 'node' : 'walker';
      for (const arg of call.arguments) {
        const target = facts.abilityTarget(arg);
        const label = arg.getText(facts.sf);
        const start = arg.getStart();
        if (target === 'unresolved') continue;
        if (target === 'unknown-name') {
          out.push({ start, rule: 'svc/ability-type', severity: 'warning', message: `@${kind}(${label}) on ${cls.name}: no class of this module is named ${label} (fine only if another module of the app declares it)` });
        } else if (target === 'not-a-class') {
          out.push({ start, rule: 'svc/ability-type', severity: 'error', message: `@${kind}(${label}) on ${cls.name}: abilities take ${want} classes, thunks returning one (() => X) or class names` });
        } else if (target.kind === undefined) {
          out.push({ start, rule: 'svc/ability-type', severity: 'error', message: `@${kind}(${label}) on ${cls.name}: ${target.name} is not a Node, Edge or Walker class` });
        } else if (target.kind !== want) {
          const why = cls.kind === 'walker' ? 'a walker\'s abilities react to the node classes it visits' : 'a node\'s abilities react to the walker classes that visit it';
          out.push({ start, rule: 'svc/ability-type', severity: 'error', message: `@${kind}(${label}) on ${cls.name}: ${target.name} is ${target.kind === 'edge' ? 'an edge' : `a ${target.kind}`} class; ${why}, so this ability never runs` });
        }
      }
    }
  }
  return out;
}
