/**
 * The compiler tools as a worker-thread task (piscina): each call runs here,
 * away from the server's thread, so a runaway one can be killed (the pool
 * replaces the thread) and the TypeScript program stays warm between calls.
 * Errors cross the thread as data: an input the tool refuses keeps its kind.
 */
import { ToolInputError, type ToolResult } from './types.ts';
import { checkSyntax, getAst, lintSvc, validateSvc, warmUp } from './tools/compiler.ts';
import { formatSvc } from './tools/format.ts';
import { pyToSvc, svcToJs, svcToPy } from './tools/translate.ts';

// Whatever a tool's dependencies print goes to stderr: with stdio, stdout carries the protocol alone.
console.log = console.error;
console.info = console.error;

// The TypeScript program is built as the thread starts, not on the first call (which would pay seconds of it).
void warmUp().catch(() => {});

/** The tools this worker runs, by their protocol names. */
export const WORKER_TOOLS: Record<string, (args: never) => Promise<ToolResult>> = {
  validate_svc: validateSvc,
  check_syntax: checkSyntax,
  lint_svc: lintSvc,
  get_ast: getAst,
  format_svc: formatSvc,
  py_to_svc: pyToSvc,
  svc_to_py: svcToPy,
  svc_to_js: svcToJs,
};

/** What a task answers: the tool's result, or why it failed. */
export type TaskOutcome = { ok: true; result: ToolResult } | { ok: false; input: boolean; message: string };

/**
 * Run one tool (piscina's task function).
 * @example await pool.run({ tool: 'format_svc', args: { code } }, { signal })
 */
export default async function runTool({ tool, args }: { tool: string; args: unknown }): Promise<TaskOutcome> {
  const fn = WORKER_TOOLS[tool];
  if (!fn) return { ok: false, input: true, message: `no compiler tool named ${tool}` };
  try {
    return { ok: true, result: await fn(args as never) };
  } catch (error) {
    return { ok: false, input: error instanceof ToolInputError, message: error instanceof Error ? error.message : String(error) };
  }
}
