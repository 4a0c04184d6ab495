/**
 * `validate_svc`: type-check one svc module against svc's public spec, with
 * the svc checks (lint/svc-checks.ts) and a warning for a graph operation
 * used without `await` (lint/await-graph-op.ts).
 *
 * An import of another module (`./helpers.ts`), of a subpath of svc
 * (`svc/testing`), of a package or of any path is a warning, not an error:
 * one module is checked, against `'svc'` alone; what it imports from there
 * is not type-checked. Nothing of the machine is read for it: the compiler
 * reads the spec, TypeScript's lib files and the declarations the spec is
 * made of (typebox, Node's types), nothing else (compiler/files.ts) —
 * `import … from '/etc/…'` is "not checked" whether the file exists or not.
 */
import { posix } from 'node:path';
import ts from 'typescript';
import { checkSize, ToolInputError, type ToolResult } from '../../types.ts';
import { unawaitedGraphOps } from '../lint/await-graph-op.ts';
import { safeSvcChecks } from '../lint/svc-checks.ts';
import { at, type Problem } from './problem.ts';
import { SPEC_FILE, snippetService } from './service.ts';

let warmed = false;

/**
 * Whether this thread's language service is built and has checked a module
 * (a call now pays no warm-up).
 *
 * @example await warmUp(); isWarm() // true
 */
export function isWarm(): boolean {
  return warmed;
}

/**
 * Build the spec and the language service and check a small module, so
 * that the first real call is warm (the first check costs seconds). Call it
 * when the tool server starts.
 *
 * @example
 * void warmUp().catch((e) => log.warn(e));
 */
export async function warmUp(): Promise<void> {
  await validateSvc({ code: "import { Walker } from 'svc';\nexport class W extends Walker {}\n" });
}

const FILENAME = /^(?:[\w.-]+\/)*[\w-][\w.-]*\.(?:ts|mts|cts|tsx)$/;

/**
 * Type-check an svc module against svc's public spec and run the svc checks
 * (lint/svc-checks.ts). `errors` are TypeScript's errors and the
 * svc checks' errors; `warnings` the svc checks' warnings. `valid` when
 * there are no errors. Lines and columns are 1-based. Throws
 * `ToolInputError` for code over 100 KB or a bad `filename` (a relative
 * `.ts`/`.mts`/`.cts`/`.tsx` path without `..`).
 *
 * @example
 * await validateSvc({ code: "import { Walker } from 'svc';\nexport class W extends Walker {}\n" });
 * // { valid: true, errors: [], warnings: [{ line: 2, col: 14, message: 'W has no @entry ability: …' }] }
 */
export async function validateSvc(args: { code: string; filename?: string }): Promise<ToolResult> {
  const { code, filename = 'snippet.ts' } = args ?? {};
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  if (typeof filename !== 'string' || !FILENAME.test(filename) || filename.endsWith('.d.ts') || filename.split('/').includes('..') || filename === posix.basename(SPEC_FILE)) {
    throw new ToolInputError('filename must be a relative .ts, .mts, .cts or .tsx path such as app.ts');
  }
  const svc = await snippetService();
  const { program, sf, file } = svc.load(code, filename);
  // TypeScript first: the svc checks then read types the full check has already resolved.
  const diagnostics = [...svc.ls.getSyntacticDiagnostics(file), ...svc.ls.getSemanticDiagnostics(file)];
  warmed = true;
  const findings = safeSvcChecks(sf, program);
  // Where an svc check explains a missing property, TypeScript's own error there is the same problem said less well.
  const explained = new Set(findings.filter((f) => f.rule === 'svc/unknown-field' || f.rule === 'svc/undeclared-field').map((f) => f.start));
  const errors: Problem[] = [];
  const warnings: Problem[] = [];
  for (const d of diagnostics) {
    // 2339: no such property; 2551: no such property, did you mean …
    if ((d.code === 2339 || d.code === 2551) && d.start !== undefined && explained.has(d.start)) continue;
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const p = { ...at(sf, d.start ?? 0), message, code: `TS${d.code}` };
    // 2307 (cannot find module): another module of the app, a subpath of svc, a package or a path is outside what is
    // checked (nothing but svc's spec and the declarations it is made of is read). Node's own modules are all known.
    const module = d.code === 2307 ? /'([^']+)'/.exec(message)?.[1] : undefined;
    if (module !== undefined && !module.startsWith('node:')) {
      warnings.push({ ...p, message: `${module} is not checked: validate_svc checks one module against 'svc'; what it imports from ${module} is typed any` });
      continue;
    }
    (d.category === ts.DiagnosticCategory.Error ? errors : warnings).push(p);
  }
  for (const f of findings) (f.severity === 'error' ? errors : warnings).push({ ...at(sf, f.start), message: f.message, code: f.rule });
  // A missing await is the commonest svc mistake and type-checks: say so here too, not only in lint_svc.
  for (const f of unawaitedGraphOps(sf, program.getTypeChecker())) warnings.push({ ...at(sf, f.start), message: f.message, code: f.rule });
  const byPosition = (a: Problem, b: Problem) => a.line - b.line || a.col - b.col;
  return { valid: errors.length === 0, errors: errors.sort(byPosition), warnings: warnings.sort(byPosition) };
}
