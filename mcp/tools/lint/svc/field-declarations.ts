/**
 * One check of the fields a node, edge or walker class declares in its body,
 * against its `static has`, with two rules:
 * - `svc/field-not-in-has` (warning): `declare x` on a node, edge or walker
 *   class when `x` is not in `static has`: a walker never gets it from the
 *   request, a node or edge never stores it.
 * - `svc/field-initializer` (error): a node or edge field of `static has`
 *   given a class-field initializer (`title = ''`): the own property hides
 *   the stored field, writes are never committed (svc refuses such an app
 *   at start).
 */
import ts from 'typescript';
import { type Facts, isStatic } from '../facts.ts';
import type { Finding } from '../finding.ts';

/** `svc/field-not-in-has` and `svc/field-initializer` over the module. */
export function checkFieldDeclarations(facts: Facts): Finding[] {
  const out: Finding[] = [];
  for (const cls of facts.classes.values()) {
    if (!cls.kind || !cls.fields) continue;
    for (const m of cls.decl.members) {
      if (!ts.isPropertyDeclaration(m) || isStatic(m) || !ts.isIdentifier(m.name)) continue;
      const name = m.name.text;
      const declared = (ts.getModifiers(m) ?? []).some((x) => x.kind === ts.SyntaxKind.DeclareKeyword);
      if (declared && !cls.fields.has(name)) {
        const why = cls.kind === 'walker' ? 'the request never fills it' : `svc never stores it (it is lost when the ${cls.kind} is loaded again)`;
        out.push({ start: m.name.getStart(), rule: 'svc/field-not-in-has', severity: 'warning', message: `${cls.name} declares ${name}, which is not a field of its static has: ${why}` });
      } else if (!declared && m.initializer && cls.kind !== 'walker' && cls.fields.has(name)) {
        out.push({ start: m.name.getStart(), rule: 'svc/field-initializer', severity: 'error', message: `${cls.name}.${name} has an initializer: the own property hides the stored field and writes to it are never committed; write \`declare ${name}: …\` and give a default in the schema` });
      }
    }
  }
  return out;
}
