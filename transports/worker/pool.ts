/**
 * The main thread's side: start N worker threads, each with its own actor
 * system, mesh them (a MessagePort between every pair), and watch them. A
 * thread that dies is marked down everywhere at once, so asks pending on it
 * fail with `SVC_ERR_NODE_DOWN` instead of hanging.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { ActorSystem, decodeError, type SystemOptions } from '../../kernel/index.ts';
import { compileWorker } from './compile.ts';
import { ThreadTransport } from './thread-transport.ts';
import type { Control, WorkerBoot } from './protocol.ts';

export interface WorkerPoolOptions {
  /** Number of worker threads. */
  size: number;
  /** Module (path or file URL) whose `setup(system, ctx)` runs in every worker. */
  module: string | URL;
  /** An app module bundled with it and handed to `setup` as `ctx.app`. */
  app?: string | URL;
  /** Passed to each worker's setup as `ctx.data` (structured-cloneable). */
  data?: unknown;
  /** Options of the main thread's system (its transport is made here). */
  system?: Omit<SystemOptions, 'transport' | 'nodeId'>;
  /** Called when a worker exits on its own (crash, `process.exit`). */
  onExit?: (node: string, code: number) => void;
  /** Called with the main thread's system before any worker starts (to spawn actors the workers use from their setup on). */
  onSystem?: (system: ActorSystem) => void;
  /** Node ids: `main`, then `${prefix}1..N` (default prefix `w`). */
  prefix?: string;
}

/**
 * @example
 * const pool = await WorkerPool.start({ size: 2, module: new URL('./actors.ts', import.meta.url) })
 * await pool.system.refFromAddress({ node: 'w1', path: '/user/echo' }).ask('hi')
 * await pool.close()
 */
export class WorkerPool {
  readonly system: ActorSystem;
  readonly transport: ThreadTransport;
  /** Worker node ids, in order. */
  readonly workers: readonly string[];
  private readonly threads = new Map<string, Worker>();
  private readonly exited = new Map<string, Promise<number>>();
  private closing = false;

  private constructor(transport: ThreadTransport, workers: string[], options: WorkerPoolOptions) {
    this.transport = transport;
    this.workers = workers;
    this.system = new ActorSystem({ ...options.system, transport });
  }

  /** Start the workers; resolves once every one has run its setup. */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const prefix = options.prefix ?? 'w';
    const workers = Array.from({ length: options.size }, (_, i) => `${prefix}${i + 1}`);
    const nodes = ['main', ...workers];
    const transport = new ThreadTransport('main', nodes);
    const pool = new WorkerPool(transport, workers, options);
    options.onSystem?.(pool.system);

    const peers = new Map<string, Record<string, MessagePort>>(workers.map((w) => [w, {}]));
    for (let i = 0; i < workers.length; i++) {
      for (let j = i + 1; j < workers.length; j++) {
        const a = workers[i] as string;
        const b = workers[j] as string;
        const { port1, port2 } = new MessageChannel();
        (peers.get(a) as Record<string, MessagePort>)[b] = port1;
        (peers.get(b) as Record<string, MessagePort>)[a] = port2;
      }
    }
    const module = options.module instanceof URL ? options.module.href : options.module;
    const entry = await compileWorker(module, options.app instanceof URL ? options.app.href : options.app);
    // Loader flags of this process (tsx) are of no use in a worker running plain JavaScript.
    // Per-process V8 flags (--expose-gc) are refused in a worker's execArgv: workers learn of them from the environment.
    const execArgv = withoutTsx(process.execArgv)
      .filter((a) => !/^--expose[-_]gc$/.test(a))
      .concat('--enable-source-maps');
    if (typeof (globalThis as { gc?: unknown }).gc === 'function') process.env.SVC_EXPOSE_GC = '1';
    const ready: Promise<void>[] = [];
    for (const node of workers) {
      const ports = peers.get(node) as Record<string, MessagePort>;
      const boot: WorkerBoot = {
        nodeId: node,
        nodes,
        module,
        data: options.data,
        peers: ports,
        system: { askTimeoutMs: options.system?.askTimeoutMs, stopTimeoutMs: options.system?.stopTimeoutMs },
      };
      const worker = new Worker(entry, { workerData: boot, transferList: Object.values(ports), execArgv });
      pool.threads.set(node, worker);
      ready.push(pool.watch(node, worker, options));
    }
    try {
      await Promise.all(ready);
    } catch (error) {
      await pool.close({ deadlineMs: 0 });
      throw error;
    }
    return pool;
  }

  private watch(node: string, worker: Worker, options: WorkerPoolOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      let started = false;
      const control = (msg: unknown): void => {
        const ctl = msg as Control;
        if (ctl.ctl === 'ready') {
          started = true;
          resolve();
        } else if (ctl.ctl === 'failed') {
          reject(decodeError(ctl.error));
        }
      };
      this.transport.addPeer(node, worker, control);
      const gone = (): void => {
        this.transport.markDown(node);
        for (const [other, thread] of this.threads) {
          if (other !== node) thread.postMessage({ ctl: 'down', node } satisfies Control);
        }
      };
      worker.on('error', (error) => {
        gone();
        if (!started) reject(error);
      });
      this.exited.set(
        node,
        new Promise((done) =>
          worker.once('exit', (code) => {
            gone();
            if (!started) reject(new Error(`worker ${node} exited with code ${code} before it was ready`));
            if (!this.closing) options.onExit?.(node, code);
            done(code);
          }),
        ),
      );
    });
  }

  /** The thread of a worker node (for tests and diagnostics). */
  thread(node: string): Worker | undefined {
    return this.threads.get(node);
  }

  /** Kill a worker at once, as a crash would. */
  async kill(node: string): Promise<void> {
    await this.threads.get(node)?.terminate();
    await this.exited.get(node);
  }

  /**
   * Shut down: each worker's system shuts down gracefully within the
   * deadline (then the thread is terminated), then the main system.
   */
  async close(options: { deadlineMs?: number } = {}): Promise<void> {
    const deadlineMs = options.deadlineMs ?? 5000;
    this.closing = true;
    await Promise.all(
      [...this.threads].map(async ([node, worker]) => {
        const exited = this.exited.get(node);
        try {
          worker.postMessage({ ctl: 'shutdown', deadlineMs } satisfies Control);
        } catch {
          // already gone
        }
        const timer = setTimeout(() => void worker.terminate(), deadlineMs + 1000);
        await exited;
        clearTimeout(timer);
      }),
    );
    await this.system.shutdown({ deadlineMs });
  }
}

/** Drop `--import tsx`-style flags (joined or as two arguments). */
function withoutTsx(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (/tsx/.test(arg)) continue;
    if (/^--(import|require|loader|experimental-loader)$/.test(arg) && /tsx/.test(args[i + 1] ?? '')) {
      i++;
      continue;
    }
    out.push(arg);
  }
  return out;
}
