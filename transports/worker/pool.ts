/**
 * The main thread's side: start N worker threads, each with its own actor
 * system, mesh them (a MessagePort between every pair), and watch them. A
 * thread that dies is marked down everywhere at once, so asks pending on it
 * fail with `SVC_ERR_NODE_DOWN` instead of hanging; with `replace`, a new
 * thread takes its node id and, once ready, its share of actors back.
 *
 * Node ids carry the process: `<process>/main`, `<process>/w1`… The thread
 * part alone (`main`, `w1`) is accepted wherever a node is named in this
 * process (`refFromAddress({ node: 'w1', … })`, `kill('w1')`).
 */
import { randomBytes } from 'node:crypto';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { ActorSystem, decodeError, type SystemOptions, type WireError } from '../../kernel/index.ts';
import { compileWorker, restoreBundle } from './compile.ts';
import { ThreadTransport } from './thread-transport.ts';
import type { Control, WorkerBoot } from './protocol.ts';
import type { RelayControl, RemoteNode } from './relay.ts';
import { holdAgain, userSizesYoungGeneration, youngGenerationHold } from './heap.ts';

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
  /** Thread names: `main`, then `${prefix}1..N` (default prefix `w`). */
  prefix?: string;
  /** The process part of node ids (default: a random id, unique enough across hosts). */
  processId?: string;
  /**
   * Start a new thread under the same node id when one exits on its own (default
   * false). At most `maxRestarts` (default 5) per minute per node; past that the
   * node stays down.
   */
  replace?: boolean;
  maxRestarts?: number;
  /** A replacement thread is serving (or failed to start: `error`). */
  onReplaced?: (node: string, error?: unknown) => void;
  /**
   * Other processes' nodes (a cluster): given, the workers reach them through
   * this thread — their frames for a remote node come to `onRelay` as bytes,
   * and {@link WorkerPool.deliver} hands bytes from one to a worker.
   */
  remote?: RemoteNode[];
  onRelay?: (from: string, to: string, bytes: Uint8Array) => void;
  /** A pool that answers a question and closes (the app's probe): its threads do not compact their heap before they are ready (heap.ts). */
  brief?: boolean;
  /**
   * The largest young generation of each thread, in MB (both semi-spaces and their large-object space: a third of it
   * is one semi-space). Unset or 0: V8's own (48 MB on 64-bit, which it reaches at a thread's first load and keeps).
   * A semi-space size the process was started with (NODE_OPTIONS) wins.
   */
  youngGenerationMb?: number;
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
  /** The main thread's node id. */
  readonly main: string;
  private readonly threads = new Map<string, Worker>();
  private readonly exited = new Map<string, Promise<number>>();
  private readonly restarts = new Map<string, number[]>();
  /** Replacements, one after another. */
  private replacing: Promise<void> = Promise.resolve();
  private closing = false;
  private entry = '';
  /** The asks of {@link swap} waiting for the workers' answers, by id. */
  private readonly swaps = new Map<number, (msg: Extract<Control, { ctl: 'swapped' }>) => void>();
  private swapId = 0;
  private execArgv: string[] = [];
  private remote: RemoteNode[] | undefined;

  private constructor(
    transport: ThreadTransport,
    workers: string[],
    private readonly options: WorkerPoolOptions,
  ) {
    this.transport = transport;
    this.workers = workers;
    this.main = transport.nodeId;
    this.system = new ActorSystem({ ...options.system, transport });
    this.remote = options.remote;
  }

  /**
   * The nodes of other processes, as the cluster sees them now: every worker
   * hears of the change (asks pending on nodes no longer listed fail, with
   * `error` when given).
   */
  setRemote(nodes: RemoteNode[], error?: WireError): void {
    this.remote = nodes;
    this.tellWorkers({ ctl: 'remote', nodes, ...(error ? { error } : {}) });
  }

  /** The link with the process `process` dropped: every worker fails the asks waiting on its nodes (with `error` when given). */
  linkLost(process: string, error?: WireError): void {
    this.tellWorkers({ ctl: 'link-lost', process, ...(error ? { error } : {}) });
  }

  private tellWorkers(msg: RelayControl): void {
    for (const worker of this.threads.values()) {
      try {
        worker.postMessage(msg);
      } catch {
        // gone
      }
    }
  }

  /** Bytes from `from` (another process's node) for the worker `to`; false when that worker is not live. */
  deliver(to: string, from: string, bytes: Uint8Array): boolean {
    const worker = this.threads.get(to);
    if (!worker || !this.transport.nodes().includes(to)) return false;
    const copy = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    worker.postMessage({ ctl: 'relayed', from, bytes: copy } satisfies RelayControl, [copy.buffer as ArrayBuffer]);
    return true;
  }

  /** Start the workers; resolves once every one has run its setup. */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const prefix = options.prefix ?? 'w';
    const processId = options.processId ?? randomBytes(3).toString('hex');
    const workers = Array.from({ length: options.size }, (_, i) => `${processId}/${prefix}${i + 1}`);
    const main = `${processId}/main`;
    const nodes = [main, ...workers];
    const transport = new ThreadTransport(main, nodes);
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
    pool.entry = await compileWorker(module, options.app instanceof URL ? options.app.href : options.app);
    // Loader flags of this process (tsx) are of no use in a worker running plain JavaScript.
    // Per-process V8 flags (--expose-gc) are refused in a worker's execArgv: workers learn of them from the environment.
    pool.execArgv = withoutTsx(process.execArgv)
      .filter((a) => !/^--expose[-_]gc$/.test(a))
      .concat('--enable-source-maps');
    if (typeof (globalThis as { gc?: unknown }).gc === 'function') process.env.SVC_EXPOSE_GC = '1';
    const ready: Promise<void>[] = [];
    for (const node of workers) ready.push(pool.launch(node, nodes, peers.get(node) as Record<string, MessagePort>));
    try {
      await Promise.all(ready);
    } catch (error) {
      await pool.close({ deadlineMs: 0 });
      throw error;
    }
    return pool;
  }

  /** Start the thread of `node`, linked to the main thread and to `peers`; resolves once it is ready. */
  private launch(node: string, nodes: readonly string[], peers: Record<string, MessagePort>, replacement = false): Promise<void> {
    const options = this.options;
    const hold = youngGenerationHold();
    const boot: WorkerBoot = {
      nodeId: node,
      main: this.main,
      replacement,
      nodes: [...nodes],
      module: options.module instanceof URL ? options.module.href : options.module,
      data: options.data,
      peers,
      system: { askTimeoutMs: options.system?.askTimeoutMs, stopTimeoutMs: options.system?.stopTimeoutMs },
      ...(this.remote ? { remote: this.remote } : {}),
      ...(hold ? { hold: hold.cell, ...(options.brief ? {} : { settle: true }) } : {}),
    };
    // The bundle may have been pruned by another process since it was built (a thread replaced days later).
    restoreBundle(this.entry);
    const young = options.youngGenerationMb !== undefined && options.youngGenerationMb > 0 && !userSizesYoungGeneration() ? { resourceLimits: { maxYoungGenerationSizeMb: options.youngGenerationMb } } : {};
    const worker = new Worker(this.entry, { workerData: boot, transferList: Object.values(peers), execArgv: [...this.execArgv, ...(hold?.execArgv ?? [])], ...young });
    // Its start set V8's growth factor back for every thread: held again (its own preload does too, first thing).
    if (hold) worker.once('online', holdAgain);
    this.threads.set(node, worker);
    return this.watch(node, worker);
  }

  private watch(node: string, worker: Worker): Promise<void> {
    return new Promise((resolve, reject) => {
      let started = false;
      const control = (msg: unknown): void => {
        const relay = msg as RelayControl;
        if (relay.ctl === 'relay') return void this.options.onRelay?.(node, relay.to, relay.bytes);
        const ctl = msg as Control;
        if (ctl.ctl === 'ready') {
          started = true;
          resolve();
        } else if (ctl.ctl === 'failed') {
          reject(decodeError(ctl.error));
        } else if (ctl.ctl === 'swapped') {
          this.swaps.get(ctl.id)?.(ctl);
        }
      };
      this.transport.addPeer(node, worker, control);
      let isGone = false;
      const gone = (): void => {
        if (isGone) return;
        isGone = true;
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
            if (!this.closing) {
              this.options.onExit?.(node, code);
              // A replacement that dies before it is ready is handled by the replacement loop (it retries).
              if (started && this.options.replace && this.threads.get(node) === worker) this.replace(node);
            }
            done(code);
          }),
        ),
      );
    });
  }

  /**
   * A new thread for a node that died. Replacements run one at a time: each
   * is meshed with every thread alive when it starts (a thread replaced just
   * before is up by then), so two threads dying together never end up unable
   * to reach each other. A replacement that fails before it is ready is tried
   * again (after a pause), within the restart limit.
   */
  private replace(node: string): void {
    this.replacing = this.replacing.then(() => this.replaceNow(node));
  }

  private async replaceNow(node: string): Promise<void> {
    for (;;) {
      if (this.closing) return;
      const now = Date.now();
      const recent = (this.restarts.get(node) ?? []).filter((at) => now - at < 60_000);
      if (recent.length >= (this.options.maxRestarts ?? 5)) {
        this.options.onReplaced?.(node, new Error(`${node} exited ${recent.length} times within a minute; it stays down`));
        return;
      }
      recent.push(now);
      this.restarts.set(node, recent);
      const live = this.transport.nodes().filter((n) => n !== this.main && n !== node);
      const peers: Record<string, MessagePort> = {};
      for (const other of live) {
        const { port1, port2 } = new MessageChannel();
        peers[other] = port1;
        this.threads.get(other)?.postMessage({ ctl: 'peer', node, port: port2 } satisfies Control, [port2]);
      }
      try {
        await this.launch(node, [this.main, ...live, node], peers, true);
      } catch (error) {
        this.options.onReplaced?.(node, error);
        await new Promise((resolve) => setTimeout(resolve, 200 * recent.length));
        continue;
      }
      if (this.closing) return;
      this.transport.markUp(node);
      for (const other of this.transport.nodes()) if (other !== this.main && other !== node) this.threads.get(other)?.postMessage({ ctl: 'up', node } satisfies Control);
      // Last, the thread itself: the others count it in now (it may open its port).
      this.threads.get(node)?.postMessage({ ctl: 'up', node } satisfies Control);
      this.options.onReplaced?.(node);
      return;
    }
  }

  /**
   * Every worker takes the app's code from `app` (a bundle of
   * `compileWorkerFiles`) in place: requests in flight finish on the old
   * code, the next ones run the new; connections stay open. Resolves to
   * undefined once every worker took it (and `entry` starts the threads
   * replaced from now on), or to why it cannot be done in place (then no
   * worker took it); throws the new code's failure (no worker took it either:
   * each checks it before it swaps, and the same module fails alike in each).
   *
   * @example
   * const files = await compileWorkerFiles(module, app);
   * const restart = await pool.swap(files.app, files.entry); // undefined: done
   */
  async swap(app: string, entry: string): Promise<string | undefined> {
    const answers = await Promise.all(
      [...this.threads].map(
        ([, worker]) =>
          new Promise<Extract<Control, { ctl: 'swapped' }>>((resolve) => {
            const id = ++this.swapId;
            const gone = (): void => resolve({ ctl: 'swapped', id, restart: 'a worker exited during the swap' });
            worker.once('exit', gone);
            this.swaps.set(id, (msg) => {
              this.swaps.delete(id);
              worker.off('exit', gone);
              resolve(msg);
            });
            try {
              worker.postMessage({ ctl: 'swap', id, app } satisfies Control);
            } catch {
              gone();
            }
          }),
      ),
    );
    const failed = answers.find((a) => a.error);
    if (failed?.error) throw decodeError(failed.error);
    const restart = answers.find((a) => a.restart)?.restart;
    if (restart === undefined) this.entry = entry;
    return restart;
  }

  /** The thread of a worker node (for tests and diagnostics). */
  thread(node: string): Worker | undefined {
    return this.threads.get(this.transport.resolve(node));
  }

  /** Kill a worker at once, as a crash would. */
  async kill(node: string): Promise<void> {
    const full = this.transport.resolve(node);
    const exited = this.exited.get(full); // taken first: a replacement brings its own
    await this.threads.get(full)?.terminate();
    await exited;
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
