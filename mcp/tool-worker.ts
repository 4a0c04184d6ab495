/**
 * The compiler tools as a worker-thread task (piscina): each call runs here,
 * away from the server's thread, so a runaway one can be killed (the pool
 * replaces the thread) and the TypeScript program stays warm between calls.
 * Errors cross the thread as data: an input the tool refuses keeps its kind.
 * The module finishes loading only once the program is warm, and each task
 * tells the pool when it starts (its deadline runs from there): pool.ts.
 */
import type { MessagePort } from 'node:worker_threads';
import { threadId } from 'node:worker_threads';
import { ToolInputError, type ToolResult } from './types.ts';
import { checkSyntax, getAst, isWarm, validateSvc, warmUp } from './tools/compiler/index.ts';
import { lintSvc } from './tools/lint/index.ts';
import { formatSvc } from './tools/format.ts';
import { pyToSvc, svcToJs, svcToPy } from './tools/translate/index.ts';

// Whatever a tool's dependencies print goes to stderr: with stdio, stdout carries the protocol alone.
console.log = console.error;
console.info = console.error;

// The TypeScript program is built before the thread counts as ready, not on the first call (which would pay seconds
// of it). Not in the background: piscina parks an idle thread in Atomics.wait, which stalls a warm-up left running.
// A failed warm-up leaves the thread to build the program on its first call (which then reports warm: false).
await warmUp().catch(() => {});

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

/**
 * What a task answers: the tool's result, or why it failed; with whether the
 * thread's TypeScript program was built when the task began, and the thread.
 */
export type TaskOutcome = ({ ok: true; result: ToolResult } | { ok: false; input: boolean; message: string }) & { warm: boolean; threadId: number };

/**
 * Run one tool (piscina's task function).
 * @example await pool.run({ tool: 'format_svc', args: { code } }, { signal })
 */
export default async function runTool({ tool, args, started }: { tool: string; args: unknown; started?: MessagePort }): Promise<TaskOutcome> {
  const thread = { warm: isWarm(), threadId };
  started?.postMessage(0);
  started?.close();
  const fn = WORKER_TOOLS[tool];
  if (!fn) return { ok: false, input: true, message: `no compiler tool named ${tool}`, ...thread };
  try {
    return { ok: true, result: await fn(args as never), ...thread };
  } catch (error) {
    return { ok: false, input: error instanceof ToolInputError, message: error instanceof Error ? error.message : String(error), ...thread };
  }
}
