/**
 * The killable worker pool of the compiler tools ({@link TOOL_TIMEOUT_MS}:
 * 10 s per compiler tool). A call past its deadline is aborted: piscina terminates
 * the thread running it and starts a fresh one at once, so a runaway check
 * costs its caller an error and nobody else anything.
 *
 * Decisions:
 * - The deadline counts from when the work starts on a thread, never from
 *   when it was queued: the thread tells this one (a message port handed
 *   with the task) as the tool begins. Waiting is bounded by the queue's
 *   length instead ({@link MAX_QUEUE} waiting calls; past it a call is
 *   refused at once with {@link ToolBusyError}).
 * - A thread takes work only once it is warm: the worker module builds its
 *   TypeScript program before it loads (a top-level await), so piscina counts
 *   it ready only then. (Warming in the background does not work: an idle
 *   piscina thread blocks in `Atomics.wait`, which stalls anything
 *   asynchronous it started, so the first call used to pay the warm-up.) A
 *   thread stopped at its deadline is replaced by one that starts warming
 *   right away; calls wait for it without that time being charged to them.
 */
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { compileModule } from '../transports/worker/index.ts';
import type { TaskOutcome } from './tool-worker.ts';
import { TOOL_TIMEOUT_MS, ToolBusyError, ToolInputError, type ToolResult } from './types.ts';

/** Calls that may wait for a thread (beyond those running); more are refused with {@link ToolBusyError}. */
export const MAX_QUEUE = 16;

/** A compiler tool that ran out of time (its thread was terminated). */
export class ToolTimeoutError extends Error {
  override name = 'ToolTimeoutError';
}

/**
 * What one call cost, for logs and tests: time waiting for a thread, time
 * running on it, whether the thread's TypeScript program was built before
 * the call began, and which thread ran it.
 *
 * @example { tool: 'validate_svc', waitedMs: 812.4, ranMs: 41.9, warm: true, threadId: 3, outcome: 'ok' }
 */
export interface ToolCallInfo {
  tool: string;
  waitedMs: number;
  ranMs: number;
  warm: boolean | undefined;
  threadId: number | undefined;
  outcome: 'ok' | 'failed' | 'timeout' | 'busy';
}

export interface ToolPoolOptions {
  /** Threads (default 1: one warm TypeScript program; checks queue behind each other). */
  threads?: number;
  /** Per-call deadline in milliseconds, counted from when the call starts on a thread (default 10,000). */
  timeoutMs?: number;
  /** Calls that may wait for a thread (at least 1; default {@link MAX_QUEUE}). */
  maxQueue?: number;
  /** Told of every call once it is over. */
  onCall?: (info: ToolCallInfo) => void;
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
    private readonly maxQueue: number,
    private readonly onCall: ((info: ToolCallInfo) => void) | undefined,
  ) {}

  static async start(options: ToolPoolOptions = {}): Promise<ToolPool> {
    const filename = await compileModule(new URL('./tool-worker.ts', import.meta.url).href);
    const threads = Math.max(1, options.threads ?? 1);
    const maxQueue = Math.max(1, options.maxQueue ?? MAX_QUEUE);
    const piscina = new Piscina({ filename, minThreads: threads, maxThreads: threads, idleTimeout: 60_000, maxQueue });
    return new ToolPool(piscina, options.timeoutMs ?? TOOL_TIMEOUT_MS, maxQueue, options.onCall);
  }

  /**
   * Run `tool` on `args`; rejects with {@link ToolInputError} for refused
   * input, {@link ToolTimeoutError} when it runs past `timeoutMs` (counted
   * from its start on a thread), {@link ToolBusyError} when the queue is full.
   */
  async run(tool: string, args: unknown, timeoutMs = this.timeoutMs): Promise<ToolResult> {
    const queued = performance.now();
    let started: number | undefined;
    const info = (outcome: ToolCallInfo['outcome'], done?: TaskOutcome): void => {
      const now = performance.now();
      this.onCall?.({ tool, waitedMs: (started ?? now) - queued, ranMs: started === undefined ? 0 : now - started, warm: done?.warm, threadId: done?.threadId, outcome });
    };
    if (this.piscina.queueSize >= this.maxQueue) {
      info('busy');
      throw busy(this.maxQueue);
    }
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // The thread says when the tool begins: the deadline runs from there.
    const { port1, port2 } = new MessageChannel();
    port1.once('message', () => {
      started = performance.now();
      timer = setTimeout(() => controller.abort(), timeoutMs);
    });
    let outcome: TaskOutcome;
    try {
      outcome = (await this.piscina.run({ tool, args, started: port2 }, { signal: controller.signal, transferList: [port2] })) as TaskOutcome;
    } catch (error) {
      if (controller.signal.aborted) {
        info('timeout');
        throw new ToolTimeoutError(`${tool} did not finish within ${timeoutMs / 1000} s of running and was stopped`);
      }
      if (/queue is at limit|no task queue available/i.test((error as Error).message)) {
        info('busy');
        throw busy(this.maxQueue);
      }
      info('failed');
      throw error;
    } finally {
      clearTimeout(timer);
      port1.close();
    }
    info(outcome.ok ? 'ok' : 'failed', outcome);
    if (outcome.ok) return outcome.result;
    if (outcome.input) throw new ToolInputError(outcome.message);
    throw new Error(outcome.message);
  }

  /** Threads alive now (one stopped at its deadline is replaced at once). */
  get threads(): number {
    return this.piscina.threads.length;
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }
}

function busy(maxQueue: number): ToolBusyError {
  return new ToolBusyError(`the compiler tools are busy: ${maxQueue} calls are already waiting for a thread; try again in a few seconds`);
}
