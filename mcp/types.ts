/**
 * What the tool server's parts share: a tool's answer, the input limit of
 * the compiler tools (100 KB), and the error a tool throws for input it
 * refuses (the server turns it into an error result, never a crash).
 */

/** A tool's answer: one JSON object, sent as one text item and as `structuredContent`. */
export type ToolResult = Record<string, unknown>;

/** Largest `code` (or other text input) a compiler tool accepts, in bytes of UTF-8. */
export const MAX_INPUT_BYTES = 100 * 1024;

/** How long a compiler tool may run, in milliseconds (then it is killed). */
export const TOOL_TIMEOUT_MS = 10_000;

/** Input a tool refuses (too large, malformed): the client gets `{ error }` with this message. */
export class ToolInputError extends Error {
  override name = 'ToolInputError';
}

/** A tool's queue is full (the compiler pool's, execute_command's): the call was refused without waiting. */
export class ToolBusyError extends Error {
  override name = 'ToolBusyError';
}

/**
 * Refuse a text input larger than {@link MAX_INPUT_BYTES}.
 * @example checkSize(args.code, 'code');
 */
export function checkSize(text: string, what = 'code'): void {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_INPUT_BYTES) throw new ToolInputError(`${what} is ${bytes} bytes; the limit is ${MAX_INPUT_BYTES} bytes (100 KB)`);
}
