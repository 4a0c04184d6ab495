/**
 * `svc_to_js`: transpiling an svc module. It is exact: esbuild's TypeScript
 * transform, as `svc start` loads an entry (ESM, node20, TC39 decorators
 * lowered, class names kept).
 */
import { transform } from 'esbuild';
import { checkSize, type ToolResult } from '../../types.ts';

/**
 * What `svc_to_js` answers: the JavaScript, or `''` and the errors in `warnings`.
 * @example { js_code: '', warnings: ['1:7: error: Expected identifier but found "="'] }
 */
export type JsResult = ToolResult & { js_code: string; warnings: string[] };

/**
 * Transpile an svc module to JavaScript with esbuild, as `svc start` loads an
 * entry: ESM for node20, standard (TC39) decorators lowered, class names kept
 * (a class's name is its stored type and its endpoint). Types are erased,
 * not checked. Errors: `js_code` is `''` and each error is in `warnings` as
 * `line:col: error: message`.
 *
 * @example
 * await svcToJs({ code: 'export const n: number = 1;' }); // { js_code: 'export const n = 1;\n', warnings: [] }
 * await svcToJs({ code: 'const = 1' }); // { js_code: '', warnings: ['1:7: error: Expected identifier but found "="'] }
 */
export async function svcToJs({ code }: { code: string }): Promise<JsResult> {
  checkSize(code, 'code');
  try {
    const result = await transform(code, {
      loader: 'ts',
      format: 'esm',
      target: 'node20',
      keepNames: true,
      sourcefile: 'input.ts',
      logLevel: 'silent',
      tsconfigRaw: { compilerOptions: { experimentalDecorators: false } },
    });
    return { js_code: result.code, warnings: result.warnings.map((m) => esbuildMessage(m, 'warning')) };
  } catch (error) {
    const errors = (error as { errors?: EsbuildMessage[] }).errors;
    const warnings = Array.isArray(errors) && errors.length > 0 ? errors.map((m) => esbuildMessage(m, 'error')) : [`error: ${(error as Error).message}`];
    return { js_code: '', warnings };
  }
}

type EsbuildMessage = { text: string; location?: { line: number; column: number } | null };

function esbuildMessage(m: EsbuildMessage, kind: 'error' | 'warning'): string {
  // esbuild's columns count from 0; editors (and prettier, and these tools) from 1.
  return m.location ? `${m.location.line}:${m.location.column + 1}: ${kind}: ${m.text}` : `${kind}: ${m.text}`;
}
