/**
 * What the svc checks and the ability lint rules need of a program: the
 * type checker, the module's classes with their kind (node, edge, walker),
 * fields of `static has` and access, and svc's own declarations in the spec.
 */
import ts from 'typescript';
import { SPEC_FILE } from '../compiler/service.ts';

/** The svc class a class derives from. */
export type Kind = 'walker' | 'node' | 'edge';

/** One class of the module as the checks see it. */
export interface ClassFacts {
  decl: ts.ClassDeclaration;
  name: string;
  kind: Kind | undefined;
  /** The fields of `static has`; undefined when they cannot be known (a schema typed `any`). */
  fields: Map<string, ts.Type> | undefined;
  access: ts.Expression | undefined;
}

/** What the svc checks need of a program: the checker and svc's own declarations in the spec. */
export class Facts {
  readonly checker: ts.TypeChecker;
  readonly classes = new Map<ts.ClassDeclaration, ClassFacts>();
  readonly byName = new Map<string, ClassFacts>();

  constructor(readonly sf: ts.SourceFile, program: ts.Program) {
    this.checker = program.getTypeChecker();
    const visit = (n: ts.Node): void => {
      if (ts.isClassDeclaration(n) && n.name) {
        const facts = this.classFacts(n);
        this.classes.set(n, facts);
        if (!this.byName.has(facts.name)) this.byName.set(facts.name, facts);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }

  /** The name of the svc declaration a symbol is (through imports), if it is one. */
  svcName(symbol: ts.Symbol | undefined): string | undefined {
    if (!symbol) return undefined;
    const s = symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol;
    return s.declarations?.some((d) => d.getSourceFile().fileName === SPEC_FILE) ? s.name : undefined;
  }

  /** Node, edge or walker: what svc class an instance type derives from. */
  kindOf(type: ts.Type | undefined, seen = new Set<ts.Type>()): Kind | undefined {
    if (!type || seen.has(type)) return undefined;
    seen.add(type);
    const name = this.svcName(type.getSymbol());
    if (name === 'Walker') return 'walker';
    if (name === 'Node' || name === 'Root') return 'node';
    if (name === 'Edge' || name === 'GenericEdge') return 'edge';
    if (!type.isClassOrInterface()) return undefined;
    for (const base of this.checker.getBaseTypes(type)) {
      const k = this.kindOf(base, seen);
      if (k) return k;
    }
    return undefined;
  }

  instanceType(decl: ts.ClassDeclaration): ts.Type | undefined {
    const symbol = decl.name && this.checker.getSymbolAtLocation(decl.name);
    return symbol && this.checker.getDeclaredTypeOfSymbol(symbol);
  }

  private classFacts(decl: ts.ClassDeclaration): ClassFacts {
    const symbol = this.checker.getSymbolAtLocation(decl.name as ts.Identifier);
    const kind = this.kindOf(this.instanceType(decl));
    let fields: Map<string, ts.Type> | undefined = new Map();
    const has = symbol && this.checker.getTypeOfSymbol(symbol).getProperty('has');
    if (has) {
      const schema = this.checker.getTypeOfSymbol(has);
      const props = schema.getProperty('properties');
      if (schema.flags & ts.TypeFlags.Any || !props) fields = undefined;
      else for (const p of this.checker.getTypeOfSymbol(props).getProperties()) fields.set(p.name, this.checker.getTypeOfSymbol(p));
    }
    const accessMember = decl.members.find((m) => ts.isPropertyDeclaration(m) && isStatic(m) && m.name.getText() === 'access') as ts.PropertyDeclaration | undefined;
    return { decl, name: (decl.name as ts.Identifier).text, kind, fields, access: accessMember?.initializer };
  }

  /** The svc class an ability's type argument names, or why it names none. */
  abilityTarget(arg: ts.Expression): { facts?: ClassFacts; kind?: Kind | 'svc-walker'; name: string } | 'not-a-class' | 'unknown-name' | 'unresolved' {
    if (ts.isStringLiteralLike(arg)) {
      const facts = this.byName.get(arg.text);
      if (facts) return { facts, kind: facts.kind, name: arg.text };
      const builtIn: Record<string, Kind> = { Node: 'node', Root: 'node', Edge: 'edge', GenericEdge: 'edge', Walker: 'walker' };
      const k = builtIn[arg.text];
      return k ? { kind: k, name: arg.text } : 'unknown-name';
    }
    let expr: ts.Expression = arg;
    if (ts.isArrowFunction(expr) || ts.isFunctionExpression(expr)) {
      const body = expr.body;
      const returned = ts.isBlock(body) ? body.statements.find(ts.isReturnStatement)?.expression : body;
      if (!returned) return 'not-a-class';
      expr = returned;
    }
    const type = this.checker.getTypeAtLocation(expr);
    if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return 'unresolved';
    const instance = type.getConstructSignatures()[0]?.getReturnType();
    if (!instance) return 'not-a-class';
    const decl = instance.getSymbol()?.declarations?.find(ts.isClassDeclaration);
    const facts = decl && this.classes.get(decl);
    return { ...(facts ? { facts } : {}), kind: this.kindOf(instance), name: expr.getText(this.sf) };
  }

  /** `entry` or `exit` when the decorator is svc's. */
  abilityKind(dec: ts.Decorator): 'entry' | 'exit' | undefined {
    const call = dec.expression;
    if (!ts.isCallExpression(call)) return undefined;
    const callee = ts.isPropertyAccessExpression(call.expression) ? call.expression.name : call.expression;
    const name = this.svcName(this.checker.getSymbolAtLocation(callee));
    return name === 'entry' || name === 'exit' ? name : undefined;
  }

  /** The access a walker class declares, as a literal; 'priv' when none; undefined when it is not a literal. */
  accessOf(facts: ClassFacts): string | undefined {
    if (!facts.access) return 'priv';
    const e = unwrap(facts.access);
    return ts.isStringLiteralLike(e) ? e.text : undefined;
  }
}

/** Whether a class member is `static`. */
export function isStatic(m: ts.ClassElement): boolean {
  return (ts.getModifiers(m as ts.HasModifiers) ?? []).some((x) => x.kind === ts.SyntaxKind.StaticKeyword);
}

/** `x as T`, `x satisfies T`, `(x)`, `<T>x`: the expression inside. */
export function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e) || ts.isTypeAssertionExpression(e)) e = e.expression;
  return e;
}

/** The methods with svc `@entry`/`@exit` decorators of a class. */
export function abilities(facts: Facts, decl: ts.ClassDeclaration): { method: ts.MethodDeclaration; kind: 'entry' | 'exit'; dec: ts.Decorator }[] {
  const out: { method: ts.MethodDeclaration; kind: 'entry' | 'exit'; dec: ts.Decorator }[] = [];
  for (const m of decl.members) {
    if (!ts.isMethodDeclaration(m)) continue;
    for (const dec of ts.getDecorators(m) ?? []) {
      const kind = facts.abilityKind(dec);
      if (kind) out.push({ method: m, kind, dec });
    }
  }
  return out;
}

/**
 * Each method of the module's classes with an svc `@entry`/`@exit`
 * decorator (once, however many it has), with its class.
 */
export function abilityMethods(facts: Facts): { decl: ts.ClassDeclaration; method: ts.MethodDeclaration }[] {
  const out: { decl: ts.ClassDeclaration; method: ts.MethodDeclaration }[] = [];
  for (const [decl] of facts.classes) {
    for (const { method } of new Map(abilities(facts, decl).map((a) => [a.method, a])).values()) out.push({ decl, method });
  }
  return out;
}
