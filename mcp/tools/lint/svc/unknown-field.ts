/**
 * One check of `this.x` (or `v.x`) where `x` does not resolve, with two rules:
 * - `svc/unknown-field` (error): `this.x` (or `v.x` on a value of one of the
 *   module's node, edge or walker classes) where `x` is neither a field of
 *   the class's `static has` nor a property, accessor or method it declares
 *   or inherits (from its bases or from svc's `Walker`/`Node`/`Edge`).
 * - `svc/undeclared-field` (error): `this.x` where `x` is a field of
 *   `static has` the class does not declare (`declare x: string`).
 */
import ts from 'typescript';
import type { ClassFacts, Facts } from '../facts.ts';
import type { Finding } from '../finding.ts';

/** The TypeScript type a field of `static has` is declared with, by its TypeBox schema. */
const SCHEMA_TYPES: Record<string, string> = { TString: 'string', TNumber: 'number', TInteger: 'number', TBoolean: 'boolean', TNull: 'null', TArray: 'unknown[]', TObject: 'Record<string, unknown>' };

/** `svc/unknown-field` and `svc/undeclared-field` over the module. */
export function checkUnknownFields(facts: Facts): Finding[] {
  const out: Finding[] = [];
  const { checker } = facts;
  const visit = (n: ts.Node): void => {
    // A name that resolves is a member: only unresolved ones are looked at further.
    if (ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.name) && !checker.getSymbolAtLocation(n.name)) {
      let cls: ClassFacts | undefined;
      if (n.expression.kind === ts.SyntaxKind.ThisKeyword) {
        const decl = thisClass(n);
        cls = decl && facts.classes.get(decl);
      } else {
        const decl = checker.getTypeAtLocation(n.expression).getSymbol()?.declarations?.find(ts.isClassDeclaration);
        cls = decl && facts.classes.get(decl);
      }
      const type = cls && facts.instanceType(cls.decl);
      const name = n.name.text;
      if (cls?.kind && type && cls.fields && !isStaticReceiver(checker, n) && !checker.getPropertyOfType(type, name)) {
        const schema = cls.fields.get(name);
        if (schema) {
          const t = SCHEMA_TYPES[schema.getSymbol()?.name ?? ''] ?? 'unknown';
          out.push({ start: n.name.getStart(), rule: 'svc/undeclared-field', severity: 'error', message: `${cls.name}.${name} is a field of static has but the class does not declare it: add \`declare ${name}: ${t};\`` });
        } else {
          const known = [...cls.fields.keys()];
          out.push({
            start: n.name.getStart(),
            rule: 'svc/unknown-field',
            severity: 'error',
            message: `${cls.name} has no field or member ${name}: ${known.length > 0 ? `its static has declares ${known.join(', ')}` : 'it has no static has fields'}; add ${name} to static has (and \`declare ${name}: …\`) or declare the member`,
          });
        }
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(facts.sf);
  return out;
}

/** The class of `this` at a node: the nearest class whose `this` it is (arrow functions keep it; functions do not). */
function thisClass(n: ts.Node): ts.ClassDeclaration | undefined {
  for (let p = n.parent; p; p = p.parent) {
    if (ts.isClassDeclaration(p)) return p;
    if (ts.isFunctionDeclaration(p) || ts.isFunctionExpression(p) || ts.isClassExpression(p)) return undefined;
  }
  return undefined;
}

/** `Cls.x` (static side), which the field check leaves alone. */
function isStaticReceiver(checker: ts.TypeChecker, n: ts.PropertyAccessExpression): boolean {
  return checker.getTypeAtLocation(n.expression).getConstructSignatures().length > 0;
}
