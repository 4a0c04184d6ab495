/**
 * `format_svc`: format an svc module with prettier under one fixed
 * configuration, so that the answer is the same on every machine (no
 * `.prettierrc`, `.editorconfig` or plugin of the user's is read).
 */
import { format } from 'prettier';
import { checkSize, type ToolResult } from '../types.ts';

/**
 * The formatting every `format_svc` call uses: TypeScript (TC39 decorators
 * included), 100 columns, two spaces, single quotes, semicolons, trailing
 * commas wherever valid, LF line ends.
 *
 * @example
 * await prettier.format(code, SVC_PRETTIER_OPTIONS);
 */
export const SVC_PRETTIER_OPTIONS = Object.freeze({
  parser: 'typescript',
  printWidth: 100,
  tabWidth: 2,
  useTabs: false,
  semi: true,
  singleQuote: true,
  quoteProps: 'as-needed',
  trailingComma: 'all',
  bracketSpacing: true,
  arrowParens: 'always',
  endOfLine: 'lf',
} as const);

/**
 * What `format_svc` answers; `error` only when the code does not parse (then `formatted` is the input).
 * @example { formatted: 'const x = ;', changed: false, error: '1:11: Expression expected.' }
 */
export type FormatResult = ToolResult & { formatted: string; changed: boolean; error?: string };

/**
 * Format TypeScript svc code with {@link SVC_PRETTIER_OPTIONS}. Formatting
 * `formatted` again changes nothing. Code that does not parse comes back
 * unchanged with `error` saying where (`line:col: message`). Throws
 * `ToolInputError` for input over 100 KB.
 *
 * @example
 * await formatSvc({ code: 'export const a=fn({},()=>1)' });
 * // { formatted: 'export const a = fn({}, () => 1);\n', changed: true }
 * await formatSvc({ code: 'const x = ;' });
 * // { formatted: 'const x = ;', changed: false, error: '1:11: Expression expected.' }
 */
export async function formatSvc({ code }: { code: string }): Promise<FormatResult> {
  checkSize(code, 'code');
  try {
    const formatted = await format(code, { ...SVC_PRETTIER_OPTIONS });
    return { formatted, changed: formatted !== code };
  } catch (error) {
    return { formatted: code, changed: false, error: describe(error) };
  }
}

/** Prettier's error as one line: `line:col: message`, without its code frame. */
function describe(error: unknown): string {
  const e = error as { message?: unknown; loc?: { start?: { line?: number; column?: number } } };
  const first = String(e.message ?? error).split('\n')[0] ?? '';
  const start = e.loc?.start;
  if (start?.line === undefined) return first;
  // Prettier ends the line with its own "(line:col)"; the position leads instead.
  const message = first.replace(/\s*\(\d+:\d+\)$/, '');
  return `${start.line}:${start.column ?? 1}: ${message}`;
}
