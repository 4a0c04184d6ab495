/**
 * Password hashing off the event loops: a few threads of the process do
 * nothing but argon2id (and bcrypt, for legacy hashes), synchronously, at a
 * lower scheduling priority (nice), so that request handling wins the CPU
 * when both want it and hashing gets everything that is left.
 *
 * One pool per process, in the main thread (`ThreadHasher`, on piscina),
 * served as the actor `/user/hasher`; worker threads reach it with
 * `RemoteHasher`. Jobs wait in one bounded FIFO queue: whichever worker a
 * login lands on, every hashing thread is used, and a full queue answers
 * `SVC_ERR_MAILBOX_FULL` (503) at once instead of letting logins wait longer
 * than a client would.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { type ActorSystem, fromReceive, kernelError, MAIN_THREAD, replyLater } from '../../kernel/index.ts';

export const HASHER_ACTOR = 'hasher';

/** The argon2id parameters of new hashes (OWASP: m = 19 MiB, t = 2, p = 1). */
export const ARGON2_OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export type HashJob = { op: 'hash'; password: string } | { op: 'verify-argon2' | 'verify-bcrypt'; stored: string; password: string };

export interface Hasher {
  run(job: HashJob): Promise<string | boolean>;
}

/** Jobs that may wait for a thread by default: as many as an actor's mailbox admits (kernel `Props.capacity`). */
export const HASH_QUEUE_DEFAULT = 1_024;

/** What a hashing thread answers (see `hash-thread.mjs`). */
type ThreadAnswer = { result: string | boolean } | { error: string } | { unavailable: string };

/**
 * Tests only, and not exported by the room's door: run a hook of one hashing
 * thread — `probe` tells its thread id and niceness, `exit` ends it in the
 * middle of a job as a crash would.
 */
export const THREAD_TEST_HOOK = Symbol('svc.hasher.threadTestHook');

/**
 * A pool of hashing threads in this process.
 *
 * @example
 * const hasher = new ThreadHasher({ threads: 2, nice: 10 });
 * const hash = await hasher.run({ op: 'hash', password: 'correct horse' });
 * await hasher.close();
 */
export class ThreadHasher implements Hasher {
  private readonly pool: Piscina<HashJob | null, ThreadAnswer>;
  private readonly maxQueue: number;
  private closed = false;
  private niceRefused = false;
  /** Why no thread can hash (set once that is known; the pool is gone then). */
  private broken: Error | undefined;

  /**
   * - `threads`: hashing threads (0 or absent: one per core, at most 16).
   * - `nice`: added to the threads' niceness (default 10, at most 19 in all;
   *   Linux sets it per thread, so the event loops keep theirs). Raising
   *   priority is not what this is for: a negative value counts as 0. Where
   *   the system refuses it, the threads hash at normal priority, with a
   *   warning (`SVC_HASHER_NICE_REFUSED`).
   * - `maxQueue`: jobs that may wait for a thread (default {@link HASH_QUEUE_DEFAULT});
   *   one more is refused with `SVC_ERR_MAILBOX_FULL` (503).
   * - `argon2Module`: the argon2 binding the threads load (default `@node-rs/argon2`).
   * - `onDemand`: start the threads as jobs come (up to `threads`; they then stay) rather than all at once: a
   *   process that never hashes a password (no sign-in) holds none (each is a few MB resident).
   */
  constructor(options: { threads?: number; nice?: number; maxQueue?: number; argon2Module?: string; onDemand?: boolean } = {}) {
    // One per core by default. Two per core hashed 18 % slower each (two 19 MiB working sets per core evict each other):
    // 115 logins/s against 141 at 8 concurrent logins on 2 cores (issue 42, bench/identity.ts). At most 16 by default:
    // each hash holds 19 MiB while it runs.
    const threads = Math.max(1, options.threads || Math.min(16, availableParallelism()));
    this.maxQueue = Math.max(1, Math.floor(options.maxQueue ?? HASH_QUEUE_DEFAULT));
    this.pool = new Piscina({
      filename: createRequire(import.meta.url).resolve('./hash-thread.mjs'),
      minThreads: options.onDemand ? 0 : threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      maxQueue: this.maxQueue,
      // First come, first hashed: without it, each time a thread frees up the next waiting job goes to the back of the
      // queue (measured: login p99 +7-12 % at 8 concurrent logins on 4 threads).
      stricterFIFO: true,
      // The thread applies `nice` itself (see hash-thread.mjs for why not piscina's niceIncrement).
      niceIncrement: 0,
      // Plain JavaScript in the thread: no tsx loader (nor process-wide flags a worker refuses).
      execArgv: [],
      workerData: { argon2Module: options.argon2Module, nice: Math.max(0, Math.floor(options.nice ?? 10)), options: ARGON2_OPTIONS },
    });
    this.pool.on('error', (error: Error) => this.threadFailed(error));
    this.pool.on('message', (msg: { niceRefused?: string }) => {
      if (msg?.niceRefused === undefined || this.niceRefused) return;
      this.niceRefused = true;
      process.emitWarning(`password hashing runs at normal priority: ${msg.niceRefused}`, { code: 'SVC_HASHER_NICE_REFUSED' });
    });
  }

  /**
   * A thread failed with no job of its own (piscina has replaced it if it
   * had started). One that failed while starting is not replaced: when none
   * is left, hashing is unavailable and jobs fail with the reason at once.
   */
  private threadFailed(error: Error): void {
    if (this.closed) return;
    if (this.pool.threads.length === 0) {
      this.unavailable(error.message);
      return;
    }
    process.emitWarning(`a password-hashing thread failed: ${error.message}`, { code: 'SVC_HASHER_THREAD_FAILED' });
  }

  private unavailable(reason: string): Error {
    if (!this.broken) {
      this.broken = new Error(`password hashing is unavailable: ${reason}`);
      void this.pool.destroy();
    }
    return this.broken;
  }

  /** Jobs waiting for a hashing thread. */
  get queued(): number {
    return this.pool.queueSize;
  }

  /** Threads in the pool. */
  get size(): number {
    return this.pool.threads.length;
  }

  async run(job: HashJob): Promise<string | boolean> {
    const answer = await this.task(job);
    if ('unavailable' in answer) throw this.unavailable(answer.unavailable);
    if ('error' in answer) throw new Error(`hashing failed: ${answer.error}`);
    return answer.result;
  }

  /** Hand `job` to the pool; what a refusal or a dead thread means, as our errors. */
  private async task(job: HashJob | null, name?: string): Promise<ThreadAnswer> {
    if (this.closed) throw new Error('the hasher is closed');
    if (this.broken) throw this.broken;
    // piscina's own bound also counts threads still starting; this one is exact.
    if (this.pool.queueSize >= this.maxQueue) {
      throw kernelError('SVC_ERR_MAILBOX_FULL', `the password-hashing queue is full (${this.maxQueue} jobs waiting); retry`);
    }
    try {
      return await this.pool.run(job, name === undefined ? {} : { name });
    } catch (error) {
      if (this.closed) throw new Error('the hasher is closed');
      if (this.broken) throw this.broken;
      throw new Error(`the hashing thread died: ${(error as Error).message}`, { cause: error });
    }
  }

  /** See {@link THREAD_TEST_HOOK}. */
  [THREAD_TEST_HOOK](hook: 'probe' | 'exit'): Promise<unknown> {
    return this.task(null, hook);
  }

  /** Serve this pool to the other threads as `/user/hasher`. */
  serve(system: ActorSystem): void {
    system.spawn(
      fromReceive((job: HashJob) => replyLater(this.run(job))),
      HASHER_ACTOR,
    );
  }

  /** Stop at once: waiting and running jobs fail with "the hasher is closed". */
  async close(): Promise<void> {
    this.closed = true;
    await this.pool.destroy();
  }
}

/** The process's pool, from a worker thread: jobs go to `/user/hasher` on the main thread. */
export class RemoteHasher implements Hasher {
  constructor(
    private readonly system: ActorSystem,
    private readonly node = MAIN_THREAD,
    private readonly timeoutMs = 60_000,
  ) {}

  run(job: HashJob): Promise<string | boolean> {
    return this.system.refFromAddress({ node: this.node, path: `/user/${HASHER_ACTOR}` }).ask(job, this.timeoutMs) as Promise<string | boolean>;
  }
}
