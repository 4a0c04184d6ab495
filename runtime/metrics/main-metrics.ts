/**
 * The main thread's metrics: the process (prom-client's default metrics:
 * CPU, memory, event loop, handles), password hashing, and a cluster
 * member's membership and process links. `svc start` serves them to the
 * worker threads that answer scrapes ({@link serveMainMetrics}).
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { type ActorSystem, fromReceive } from '../../kernel/index.ts';
import type { MetricJson } from './recorder.ts';

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
}

/** The main thread's metrics actor: worker threads answering a scrape ask it for a snapshot. */
export function serveMainMetrics(system: ActorSystem, metrics: MainMetrics, name: string): void {
  system.spawn(fromReceive(() => metrics.snapshot()), name);
}
