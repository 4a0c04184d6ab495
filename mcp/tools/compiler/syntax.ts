/**
 * `check_syntax`: does a module parse as TypeScript? Parse only — no types,
 * no imports; `lint_svc` reads the same syntax errors.
 */
import ts from 'typescript';
import { checkSize, ToolInputError, type ToolResult } from '../../types.ts';
import { at, type Problem } from './problem.ts';

/** Parse `code` alone (no types, no imports) and return TypeScript's syntactic diagnostics. */
export function syntaxErrors(code: string, filename = 'snippet.ts'): { sf: ts.SourceFile; errors: Problem[] } {
  const sf = ts.createSourceFile(filename, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const options: ts.CompilerOptions = { noLib: true, noResolve: true, types: [], noEmit: true };
  const host = ts.createCompilerHost(options);
  host.getSourceFile = (f) => (f === filename ? sf : undefined);
  host.fileExists = (f) => f === filename;
  host.readFile = (f) => (f === filename ? code : undefined);
  const program = ts.createProgram([filename], options, host);
  const errors = program.getSyntacticDiagnostics(sf).map((d) => ({ ...at(sf, d.start ?? 0), message: ts.flattenDiagnosticMessageText(d.messageText, '\n') }));
  return { sf, errors };
}

/**
 * Parse-only check: does `code` parse as TypeScript? `errors` are the
 * syntactic diagnostics (1-based line and column); no types are checked.
 *
 * @example
 * await checkSyntax({ code: 'const x = ;' });
 * // { valid: false, errors: [{ line: 1, col: 11, message: 'Expression expected.' }] }
 */
export async function checkSyntax(args: { code: string }): Promise<ToolResult> {
  const code = args?.code;
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  const { errors } = syntaxErrors(code);
  return { valid: errors.length === 0, errors };
}
