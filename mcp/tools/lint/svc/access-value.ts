/**
 * `svc/access-value` (error): `static access` on a walker whose value is
 * not `'pub'`, `'priv'` or `'protect'` (the router would treat it as
 * private without a word); a warning when it is not a literal, or when it
 * is on a node or edge class (where svc never reads it).
 */
import ts from 'typescript';
import { type Facts, unwrap } from '../facts.ts';
import type { Finding } from '../finding.ts';

const ACCESS = ['pub', 'priv', 'protect'];
const ACCESS_HINT: Record<string, string> = { public: 'pub', private: 'priv', protected: 'protect' };

/** `svc/access-value` over the module. */
export function checkAccess(facts: Facts): Finding[] {
  const out: Finding[] = [];
  for (const cls of facts.classes.values()) {
    if (!cls.access || !cls.kind) continue;
    const start = cls.access.getStart();
    if (cls.kind !== 'walker') {
      out.push({ start, rule: 'svc/access-value', severity: 'warning', message: `static access on ${cls.kind} class ${cls.name} is never read: access applies to walkers; grant access to nodes with permGrant/allowRoot` });
      continue;
    }
    const literal = unwrap(cls.access);
    const values = ts.isStringLiteralLike(literal) ? [literal.text] : literalStrings(facts.checker.getTypeAtLocation(cls.access));
    if (!values) {
      out.push({ start, rule: 'svc/access-value', severity: 'warning', message: `static access of ${cls.name} is not a literal: svc cannot check it; write 'pub', 'priv' or 'protect'` });
      continue;
    }
    for (const v of values) {
      if (ACCESS.includes(v)) continue;
      const hint = ACCESS_HINT[v.toLowerCase()];
      out.push({ start, rule: 'svc/access-value', severity: 'error', message: `static access of ${cls.name} is '${v}', not one of 'pub', 'priv', 'protect'${hint ? ` (did you mean '${hint}'?)` : ''}: svc would treat the walker as private` });
    }
  }
  return out;
}

/** The string literals a type is (a union of them), or undefined. */
function literalStrings(type: ts.Type): string[] | undefined {
  const parts = type.isUnion() ? type.types : [type];
  const out: string[] = [];
  for (const p of parts) {
    if (!p.isStringLiteral()) return undefined;
    out.push(p.value);
  }
  return out;
}
