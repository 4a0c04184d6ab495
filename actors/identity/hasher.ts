/**
 * Password hashing off the event loops: a few threads of the process do
 * nothing but argon2id (and bcrypt, for legacy hashes), synchronously, at a
 * lower scheduling priority (nice), so that request handling wins the CPU
 * when both want it and hashing gets everything that is left.
 *
 * One pool per process, in the main thread (`ThreadHasher`), served as the
 * actor `/user/hasher`; worker threads reach it with `RemoteHasher`. Jobs
 * wait in one FIFO queue: whichever worker a login lands on, every hashing
 * thread is used.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ActorSystem, fromReceive, MAIN_THREAD, replyLater } from '../../kernel/index.ts';

export const HASHER_ACTOR = 'hasher';

/** The argon2id parameters of new hashes (OWASP: m = 19 MiB, t = 2, p = 1). */
export const ARGON2_OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export type HashJob = { op: 'hash'; password: string } | { op: 'verify-argon2' | 'verify-bcrypt'; stored: string; password: string };

export interface Hasher {
  run(job: HashJob): Promise<string | boolean>;
}

// The hashing thread: CommonJS, evaluated, so it needs neither tsx nor the bundle.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  if (tid > 0 && workerData.nice) require('node:os').setPriority(tid, workerData.nice);
} catch {}
const argon2 = require(workerData.argon2);
const bcrypt = require(workerData.bcrypt);
parentPort.postMessage({ ready: true });
parentPort.on('message', (job) => {
  try {
    let result;
    if (job.op === 'hash') result = argon2.hashSync(job.password, Object.assign({ algorithm: 2 }, workerData.options));
    else if (job.op === 'verify-argon2') result = argon2.verifySync(job.stored, job.password);
    else if (job.op === 'verify-bcrypt') result = bcrypt.compareSync(job.password, job.stored);
    else throw new Error('unknown job ' + job.op);
    parentPort.postMessage({ result });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
});
`;

interface Pending {
  job: HashJob;
  resolve: (v: string | boolean) => void;
  reject: (e: Error) => void;
}

/**
 * A pool of hashing threads in this process.
 *
 * @example
 * const hasher = new ThreadHasher({ threads: 2, nice: 10 });
 * const hash = await hasher.run({ op: 'hash', password: 'correct horse' });
 * await hasher.close();
 */
export class ThreadHasher implements Hasher {
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, Pending>();
  private readonly queue: Pending[] = [];
  private readonly threads = new Set<Worker>();
  private readonly workerData: Record<string, unknown>;
  private closed = false;
  /** Why no thread can hash (set when the last one is gone). */
  private broken: Error | undefined;

  /** `argon2Module`: the argon2 binding the threads load (default `@node-rs/argon2`). */
  constructor(options: { threads?: number; nice?: number; argon2Module?: string } = {}) {
    const require = createRequire(import.meta.url);
    this.workerData = { argon2: options.argon2Module ?? require.resolve('@node-rs/argon2'), bcrypt: require.resolve('bcryptjs'), nice: options.nice ?? 10, options: ARGON2_OPTIONS };
    // Two per core by default: while a job's request is still crossing the HTTP front, the core goes to the other thread
    // (measured in bench/identity.ts). At most 16 by default: each hash holds 19 MiB while it runs.
    const count = Math.max(1, options.threads || Math.min(16, 2 * availableParallelism()));
    for (let i = 0; i < count; i++) this.spawn();
  }

  /**
   * One hashing thread. It takes jobs once it has loaded its libraries; one
   * that dies later is replaced, one that cannot load them is not (when none
   * is left, jobs fail with the reason instead of waiting forever).
   */
  private spawn(): void {
    const worker = new Worker(THREAD, { eval: true, workerData: this.workerData, execArgv: [] });
    worker.unref();
    this.threads.add(worker);
    let ready = false;
    let failure: Error | undefined;
    worker.on('message', (msg: { ready?: true; result?: string | boolean; error?: string }) => {
      if (msg.ready) {
        ready = true;
        this.next(worker);
        return;
      }
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      if (job) {
        if (msg.error !== undefined) job.reject(new Error(`hashing failed: ${msg.error}`));
        else job.resolve(msg.result as string | boolean);
      }
      this.next(worker);
    });
    worker.on('error', (error) => (failure = error));
    worker.on('exit', () => {
      this.threads.delete(worker);
      const idleAt = this.idle.indexOf(worker);
      if (idleAt >= 0) this.idle.splice(idleAt, 1);
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      if (this.closed) return;
      job?.reject(new Error(`the hashing thread died: ${failure?.message ?? 'exited'}`));
      if (ready) return this.spawn();
      if (this.threads.size === 0) {
        this.broken = new Error(`password hashing is unavailable: ${failure?.message ?? 'its thread exited'}`);
        for (const p of this.queue.splice(0)) p.reject(this.broken);
      }
    });
  }

  /** Threads in the pool. */
  get size(): number {
    return this.threads.size;
  }

  run(job: HashJob): Promise<string | boolean> {
    if (this.closed) return Promise.reject(new Error('the hasher is closed'));
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      const pending = { job, resolve, reject };
      const worker = this.idle.pop();
      if (worker) this.start(worker, pending);
      else {
        this.queue.push(pending);
        // Threads keep the process alive only while there is work (a tool must not exit before its hash).
        for (const w of this.threads) w.ref();
      }
    });
  }

  private start(worker: Worker, pending: Pending): void {
    worker.ref();
    this.busy.set(worker, pending);
    worker.postMessage(pending.job);
  }

  private next(worker: Worker): void {
    const pending = this.queue.shift();
    if (pending) this.start(worker, pending);
    else {
      worker.unref();
      this.idle.push(worker);
    }
  }

  /** Serve this pool to the other threads as `/user/hasher`. */
  serve(system: ActorSystem): void {
    system.spawn(
      fromReceive((job: HashJob) => replyLater(this.run(job))),
      HASHER_ACTOR,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new Error('the hasher is closed'));
    await Promise.all([...this.threads].map((w) => w.terminate()));
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
