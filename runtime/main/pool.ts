/**
 * The `pool` module of the main thread: the worker threads, each running the
 * runtime of a serving thread (`runtime/worker.ts`), and what this thread
 * serves them — password hashing, the siblings of `sv` calls, its metrics,
 * memory event streams, activation leases, the SQLite writers. A thread that
 * dies is replaced under the same name. At a drain the workers finish what
 * they hold (a cluster member first hands its partitions over and leaves).
 */
import { serveActivationLeases, threadOf } from '../../kernel/index.ts';
import { serveStoreWriter } from '../../actors/graph/index.ts';
import { serveUsersWriter } from '../../actors/identity/index.ts';
import { WorkerPool } from '../../transports/worker/index.ts';
import { serveServiceStarter } from '../../transports/sv/index.ts';
import { type ClusterMember } from '../../cluster/index.ts';
import { MemoryStreams, serveMemoryStreams } from '../../stores/index.ts';
import { sharedBudgetMemory } from '../../actors/events/index.ts';
import { MAIN_METRICS_ACTOR, type RouteSummary } from '../boot.ts';
import { ADDRESS, APP, CLUSTER, HASHER, MEMBER, SECRETS, SERVING, STARTER, STORES, WORKERS } from '../keys.ts';
import { MainMetrics, serveMainMetrics } from '../metrics/index.ts';
import type { RuntimeModule } from '../runtime.ts';
import { type Lifecycle, order, SERVE_WORKER, type StartOptions, workerBoot } from './options.ts';

/** The worker threads of this process. */
export interface Workers {
  /** The pool serving now (a `--dev` reload replaces it). */
  current: WorkerPool;
  /** The app's endpoints as the workers serve them. */
  routes: RouteSummary[];
  /** A new pool of workers, opening the port at once (`listenNow` false: when told). */
  launch(listenNow?: boolean): Promise<WorkerPool>;
  /** Every worker of `pool` finishes what it holds within the deadline; then the pool closes. */
  drain(pool: WorkerPool, deadlineMs: number): Promise<void>;
}

/**
 * @example
 * composeRuntime([..., poolModule(options, processId, life), reportModule(options), ...]);
 */
export function poolModule(options: StartOptions, processId: string, life: Lifecycle): RuntimeModule {
  let workers: Workers | undefined;
  let clusterMember: ClusterMember | undefined;
  let closed = false;
  return {
    name: 'pool',
    needs: [SERVING, APP, SECRETS, HASHER, STORES, ADDRESS, STARTER],
    uses: [MEMBER, CLUSTER],
    provides: [WORKERS],
    async start(rt) {
      const { config } = options;
      const { transport, workers: size } = rt.need(SERVING);
      const secrets = rt.need(SECRETS);
      const hasher = rt.need(HASHER);
      const { shared, writers } = rt.need(STORES);
      const { port, listeners } = rt.need(ADDRESS);
      const starter = rt.need(STARTER);
      const member = rt.find(MEMBER);
      clusterMember = member;
      const cluster = rt.find(CLUSTER);
      // Events on memory streams (no url, no kv_url): this thread keeps them for every worker, across --dev reloads.
      const events = config['scale.events'];
      const memoryEvents = events.enabled && !events.url && !config['scale.database'].kv_url ? new MemoryStreams() : undefined;
      // Metrics of this thread (the process, password hashing, the cluster member), asked by the workers at each scrape.
      const mainMetrics = config['scale.metrics'].enabled
        ? new MainMetrics(config['scale.metrics'].namespace, {
            hasher,
            ...(member ? { member: () => member && { members: member.members().length, counters: member.counters, links: member.links.counters } } : {}),
          })
        : undefined;
      const bootData = workerBoot(options, transport, {
        jwtSecret: secrets.jwt.secret,
        webhookSecret: secrets.webhook.secret,
        port,
        listeners,
        processWriters: writers !== undefined,
        activationLeases: true,
        schemaReady: shared,
        memoryEventsOnMain: memoryEvents !== undefined,
        // One byte budget of buffered events for every worker thread (and for the workers of a --dev reload).
        eventsBuffer: sharedBudgetMemory(),
        mainMetrics: mainMetrics !== undefined,
        svStarterOnMain: true,
        ...(cluster ? { cluster } : {}),
      });
      const launch = async (listenNow = true): Promise<WorkerPool> => {
        let pool: WorkerPool | undefined;
        pool = await WorkerPool.start({
          size,
          module: SERVE_WORKER,
          app: options.entry,
          processId,
          youngGenerationMb: config['scale.server'].young_generation_mb,
          // A member opens its port once it has joined (before, it knows no other member's partitions).
          data: { ...bootData, listenNow: listenNow && !member },
          ...(member ? { remote: [], onRelay: (from: string, to: string, bytes: Uint8Array) => member?.send(from, to, bytes) } : {}),
          onSystem: (system) => {
            hasher.serve(system);
            serveServiceStarter(system, starter);
            if (mainMetrics) serveMainMetrics(system, mainMetrics, MAIN_METRICS_ACTOR);
            if (memoryEvents) serveMemoryStreams(system, memoryEvents);
            // In a cluster a root's partition is live on one thread of one member: the process's leases are taken from Redis.
            serveActivationLeases(system, member ? { backing: member.backing, onError: (error, id) => process.stderr.write(`svc: the cluster lease of ${id} could not be taken: ${(error as Error).message}\n`) } : {});
            if (writers) {
              serveStoreWriter(system, writers.store);
              serveUsersWriter(system, writers.users);
            }
          },
          // A thread that dies is replaced under the same name; its roots come back to it once it serves.
          replace: true,
          onExit: (node, code) => {
            if (!life.stopping) process.stderr.write(`svc: worker ${threadOf(node)} exited with code ${code}; starting a new one\n`);
          },
          onReplaced: (node, error) => {
            if (error) process.stderr.write(`svc: worker ${threadOf(node)} could not be replaced: ${(error as Error).message ?? error}\n`);
            else if (pool) {
              // It opens its port only now that every thread counts it in (before, it would serve roots others still hold).
              void order(pool, node, { t: 'listen' })
                .then(() => process.stderr.write(`svc: worker ${threadOf(node)} is serving again\n`))
                .catch((error: unknown) => process.stderr.write(`svc: worker ${threadOf(node)} could not listen: ${(error as Error).message}\n`));
            }
          },
        });
        return pool;
      };
      const drain = async (pool: WorkerPool, deadlineMs: number): Promise<void> => {
        await Promise.allSettled(pool.workers.map((node) => order(pool, node, { t: 'drain', deadlineMs }, deadlineMs + 1000)));
        await pool.close({ deadlineMs });
      };
      const current = await launch();
      const routes = rt.need(APP).endpoints ?? (await order<RouteSummary[]>(current, 'w1', { t: 'describe' }));
      workers = rt.provide(WORKERS, { current, routes, launch, drain });
    },
    /**
     * Requests in hand are answered, then the pool closes. A member leaves gracefully: readiness turns false and
     * the others stop placing partitions here, this process's threads hand theirs over (each activation finishes what
     * it has queued, then gives its lease back, and the new owner takes it), requests in hand are answered, then the
     * membership hears it left.
     */
    async drain(deadlineMs) {
      if (!workers) return;
      closed = true;
      const pool = workers.current;
      const member = clusterMember;
      if (!member) return workers.drain(pool, deadlineMs);
      await member.startLeaving();
      // The others hear of it on the membership channel within milliseconds (by the next heartbeat at worst): give them
      // that long before this process's own threads stop hosting, so no ask bounces between two views of the members.
      await new Promise((resolve) => setTimeout(resolve, Math.min(500, Math.ceil(options.config['scale.cluster'].lease_ms / 10))));
      await Promise.allSettled(pool.workers.map((node) => order(pool, node, { t: 'leaving', nodes: [...pool.workers], deadlineMs }, deadlineMs + 1000)));
      await Promise.allSettled(pool.workers.map((node) => order(pool, node, { t: 'drain', deadlineMs }, deadlineMs + 1000)));
      await member.leave();
      await pool.close({ deadlineMs });
    },
    // A start that failed later (joining the cluster): the workers go at once.
    close: () => (workers && !closed ? workers.current.close({ deadlineMs: 0 }) : undefined),
  };
}
