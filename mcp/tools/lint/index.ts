/**
 * `lint_svc`: the lint rules and the svc checks over one svc module, with
 * the safe fixes. One file per rule: no-unused-imports.ts, no-var.ts,
 * eqeqeq.ts, await-graph-op.ts, async-ability-without-await.ts,
 * no-console-in-ability.ts, and the svc checks (svc-checks.ts, svc/).
 */
import { checkSize, ToolInputError, type ToolResult } from '../../types.ts';
import { at, type Problem } from '../compiler/problem.ts';
import { snippetService } from '../compiler/service.ts';
import { syntaxErrors } from '../compiler/syntax.ts';
import { asyncAbilityWithoutAwait } from './async-ability-without-await.ts';
import { unawaitedGraphOps } from './await-graph-op.ts';
import { looseEquality } from './eqeqeq.ts';
import { Facts } from './facts.ts';
import type { Edit } from './finding.ts';
import { noConsoleInAbility } from './no-console-in-ability.ts';
import { unusedImports } from './no-unused-imports.ts';
import { varDeclarations } from './no-var.ts';
import { safeSvcChecks } from './svc-checks.ts';

/**
 * One lint finding; `severity` only on compiler (syntax) errors.
 *
 * @example
 * const v: Violation = { line: 2, col: 1, message: 'use let or const instead of var', rule: 'no-var' };
 */
export interface Violation extends Problem {
  rule: string;
  severity?: 'error';
}

/**
 * Lint an svc module. Rules: `no-unused-imports`, `no-var`, `eqeqeq` (not
 * `== null` / `== undefined` checks), `await-graph-op` (a node's
 * `connect`/`out`/`in`/… result used as a value without `await`: it is a
 * Promise), `async-ability-without-await`, `no-console-in-ability` (in
 * abilities and `fn` handlers: use the run's `log`), and the svc checks
 * (rules `svc/*`, svc-checks.ts). Syntax errors are violations with
 * rule `syntax` and `severity: 'error'`. With `auto_fix`, what is safe is
 * fixed in `fixed_code`: unused imports removed (a whole import of a package
 * other than svc, typebox or a Node builtin becomes `import 'pkg'`, keeping
 * its side effects), `var` → `let` when every use is inside the block `let`
 * would scope, after the declaration, and not captured per loop iteration,
 * `==` → `===` when both sides are of one primitive kind (or both objects),
 * where the two mean the same. Nothing is fixed in code that does not parse.
 * `violations` are those of the code as given. Throws `ToolInputError` for
 * code over 100 KB.
 *
 * @example
 * await lintSvc({ code: "import { Node, Walker } from 'svc';\nvar n = 1;\n", auto_fix: true });
 * // { violations: [{ line: 1, col: 10, rule: 'no-unused-imports', … }, { line: 2, col: 1, rule: 'no-var', … }, …],
 * //   fixed_code: 'let n = 1;\n', changed: true }
 */
export async function lintSvc(args: { code: string; auto_fix?: boolean }): Promise<ToolResult> {
  const { code, auto_fix = false } = args ?? {};
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  if (typeof auto_fix !== 'boolean') throw new ToolInputError('auto_fix must be a boolean');
  const svc = await snippetService();
  const { program, sf } = svc.load(code, 'snippet.ts');
  const checker = program.getTypeChecker();
  const found: { start: number; rule: string; message: string; severity?: 'error'; fix?: Edit[] }[] = [];

  const syntax = syntaxErrors(code);
  for (const e of syntax.errors) found.push({ start: sf.getPositionOfLineAndCharacter(e.line - 1, e.col - 1), rule: 'syntax', message: e.message, severity: 'error' });
  found.push(...unusedImports(sf));
  found.push(...varDeclarations(sf, checker));
  found.push(...looseEquality(sf, checker));
  found.push(...unawaitedGraphOps(sf, checker));
  const facts = new Facts(sf, program);
  found.push(...asyncAbilityWithoutAwait(sf, facts));
  found.push(...noConsoleInAbility(sf, facts));
  for (const f of safeSvcChecks(sf, program)) found.push({ start: f.start, rule: f.rule, message: f.message });

  found.sort((a, b) => a.start - b.start);
  const violations: Violation[] = found.map((f) => ({ ...at(sf, f.start), message: f.message, rule: f.rule, ...(f.severity ? { severity: f.severity } : {}) }));
  let fixed = code;
  if (auto_fix && syntax.errors.length === 0) fixed = applyEdits(code, found.flatMap((f) => f.fix ?? []));
  return { violations, fixed_code: fixed, changed: fixed !== code };
}

/** Apply non-overlapping edits (an edit overlapping one already taken is dropped). */
function applyEdits(code: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start || b.end - a.end);
  let out = code;
  let floor = Infinity;
  for (const e of sorted) {
    if (e.end > floor) continue;
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
    floor = e.start;
  }
  return out;
}
