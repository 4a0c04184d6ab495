/**
 * The main thread's metrics: the process (prom-client's default metrics:
 * CPU, memory, event loop, handles), password hashing, and a cluster
 * member's membership and process links. `svc start` serves them to the
 * worker threads that answer scrapes ({@link serveMainMetrics}).
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { type ActorSystem, fromReceive, isWorkerNode, processOf } from '../../kernel/index.ts';
import type { MetricJson } from './recorder.ts';

/** A worker thread's answer to a scrape: its metrics, and which start of the thread measured them. */
export interface ThreadSnapshot {
  incarnation: string;
  metrics: MetricJson[];
}

/** The actor on every worker thread that answers {@link ThreadSnapshot}s (the worker's `metrics` module, runtime/modules/metrics.ts, spawns it). */
export const THREAD_METRICS_ACTOR = 'metrics-thread';

/** How long a scrape waits for a thread before it takes that thread's last answer. */
const THREAD_WAIT_MS = 2000;

export interface MainSources {
  /** Password hashing: jobs waiting, threads. */
  hasher?: { queued: number; size: number };
  /** A cluster member. */
  member?: () =>
    | {
        members: number;
        counters: { lease_renewals: number; lease_failures: number };
        links: { reconnects: number; sent: number; received: number };
      }
    | undefined;
}

/** Counters kept elsewhere, read at each scrape. */
function mirrored(name: string, help: string, registers: Registry[], read: () => number | undefined): Counter {
  return new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset();
      this.inc(read() ?? 0);
    },
  });
}

export class MainMetrics {
  readonly registry = new Registry();

  constructor(namespace: string, sources: MainSources) {
    const ns = namespace;
    const reg = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const hasher = sources.hasher;
    if (hasher) {
      new Gauge({
        name: `${ns}_password_hash_queue`,
        help: 'Password hashing jobs waiting for a hashing thread',
        registers: reg,
        collect() {
          this.set(hasher.queued);
        },
      });
      new Gauge({
        name: `${ns}_password_hash_threads`,
        help: 'Password hashing threads',
        registers: reg,
        collect() {
          this.set(hasher.size);
        },
      });
    }
    const member = sources.member;
    if (member) {
      new Gauge({
        name: `${ns}_cluster_members`,
        help: 'Members of the cluster this process sees (itself included)',
        registers: reg,
        collect() {
          this.set(member()?.members ?? 0);
        },
      });
      mirrored(`${ns}_cluster_lease_renewals_total`, 'Membership lease renewals Redis took', reg, () => member()?.counters.lease_renewals);
      mirrored(`${ns}_cluster_lease_failures_total`, 'Membership lease renewals that failed (Redis unreachable, or the lease lost)', reg, () => member()?.counters.lease_failures);
      mirrored(`${ns}_cluster_link_reconnects_total`, 'Links to other members dialled again after they closed', reg, () => member()?.links.reconnects);
      mirrored(`${ns}_cluster_link_batches_sent_total`, 'Message batches sent to other members', reg, () => member()?.links.sent);
      mirrored(`${ns}_cluster_link_batches_received_total`, 'Message batches received from other members', reg, () => member()?.links.received);
    }
  }

  async snapshot(): Promise<MetricJson[]> {
    return (await this.registry.getMetricsAsJSON()) as unknown as MetricJson[];
  }

  /** Each worker thread's last answer, by node. */
  private readonly last = new Map<string, ThreadSnapshot>();
  /** Counters and histograms of threads that were replaced (their last answers): the process's totals never go back. */
  private readonly retired: MetricJson[][] = [];
  /** Starts of threads that were replaced. */
  private readonly gone = new Set<string>();

  /**
   * Every thread of this process, for a scrape: each worker thread is asked;
   * one that does not answer in time (a walker holds its event loop) counts
   * with its last answer, and the counts of a thread that died and was
   * replaced stay in the totals — counters only grow, as Prometheus expects.
   */
  async scrape(system: ActorSystem): Promise<MetricJson[][]> {
    const own = processOf(system.nodeId);
    const nodes = system.nodes().filter((n) => isWorkerNode(n) && processOf(n) === own);
    const answers = await Promise.all(
      nodes.map((node) =>
        (system.refFromAddress({ node, path: `/user/${THREAD_METRICS_ACTOR}` }).ask({ t: 'snapshot' }, THREAD_WAIT_MS) as Promise<ThreadSnapshot>).then(
          (answer) => ({ node, answer }),
          () => ({ node, answer: undefined }),
        ),
      ),
    );
    for (const { node, answer } of answers) {
      if (!answer) continue;
      const before = this.last.get(node);
      // A scrape's answers may be older than another's that finished first: only a newer start replaces.
      if (before && before.incarnation !== answer.incarnation) {
        if (this.gone.has(answer.incarnation)) continue;
        this.gone.add(before.incarnation);
        this.retired.push(before.metrics.filter((m) => m.type === 'counter' || m.type === 'histogram'));
      }
      this.last.set(node, answer);
    }
    return [...[...this.last.values()].map((s) => s.metrics), ...this.retired, await this.snapshot()];
  }
}

/** The main thread's metrics actor: a worker answering a scrape asks it for every thread's metrics. */
export function serveMainMetrics(system: ActorSystem, metrics: MainMetrics, name: string): void {
  system.spawn(fromReceive(() => metrics.scrape(system)), name);
}
