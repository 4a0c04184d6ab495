/**
 * The killable worker pool of the compiler tools (seed 001 §8: 10 s per
 * compiler tool). A call past its deadline is aborted: piscina terminates
 * the thread running it and starts a fresh one for the next call, so a
 * runaway check costs its caller an error and nobody else anything.
 */
import { Piscina } from 'piscina';
import { compileModule } from '../worker/index.ts';
import type { TaskOutcome } from './tool-worker.ts';
import { TOOL_TIMEOUT_MS, ToolInputError, type ToolResult } from './types.ts';

/** A compiler tool that ran out of time (its thread was terminated). */
export class ToolTimeoutError extends Error {
  override name = 'ToolTimeoutError';
}

export interface ToolPoolOptions {
  /** Threads (default 1: one warm TypeScript program; checks queue behind each other). */
  threads?: number;
  /** Per-call deadline in milliseconds (default 10,000). */
  timeoutMs?: number;
}

/**
 * Compiler tools on worker threads.
 * @example
 * const pool = await ToolPool.start();
 * const { formatted } = await pool.run('format_svc', { code });
 * await pool.close();
 */
export class ToolPool {
  private constructor(
    private readonly piscina: Piscina,
    private readonly timeoutMs: number,
  ) {}

  static async start(options: ToolPoolOptions = {}): Promise<ToolPool> {
    const filename = await compileModule(new URL('./tool-worker.ts', import.meta.url).href);
    const threads = Math.max(1, options.threads ?? 1);
    const piscina = new Piscina({ filename, minThreads: threads, maxThreads: threads, idleTimeout: 60_000, maxQueue: 64 });
    return new ToolPool(piscina, options.timeoutMs ?? TOOL_TIMEOUT_MS);
  }

  /** Run `tool` on `args`; rejects with {@link ToolInputError} for refused input, {@link ToolTimeoutError} past the deadline. */
  async run(tool: string, args: unknown, timeoutMs = this.timeoutMs): Promise<ToolResult> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let outcome: TaskOutcome;
    try {
      outcome = (await this.piscina.run({ tool, args }, { signal: controller.signal })) as TaskOutcome;
    } catch (error) {
      if (controller.signal.aborted) throw new ToolTimeoutError(`${tool} did not finish within ${timeoutMs / 1000} s and was stopped`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (outcome.ok) return outcome.result;
    if (outcome.input) throw new ToolInputError(outcome.message);
    throw new Error(outcome.message);
  }

  /** Threads alive now (a terminated one is replaced on demand). */
  get threads(): number {
    return this.piscina.threads.length;
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }
}
