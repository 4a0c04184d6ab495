// The main thread's metrics through the metrics room's door: password hashing and a cluster member's figures read at
// each scrape, and the scrape of every worker thread of the process over a kernel transport — a thread that fails to
// answer counts with its last answer, a replaced thread's counters stay in the totals, other processes are not asked.
import t from 'tap';
import { ActorSystem, fromReceive } from 'svc/kernel';
import { MainMetrics, merge, serveMainMetrics, THREAD_METRICS_ACTOR, type MetricJson, type ThreadSnapshot } from '../../../runtime/metrics/index.ts';
import { MemoryNet } from '../../helpers/memory-transport.ts';

const value = (snapshot: MetricJson[], name: string): number | undefined => snapshot.find((m) => m.name === name)?.values[0]?.value;

t.test('hashing and membership figures are read from their sources at each scrape', async (t) => {
  const hasher = { queued: 3, size: 2 };
  let member: { members: number; counters: { lease_renewals: number; lease_failures: number }; links: { reconnects: number; sent: number; received: number } } | undefined = {
    members: 3,
    counters: { lease_renewals: 10, lease_failures: 1 },
    links: { reconnects: 2, sent: 40, received: 38 },
  };
  const m = new MainMetrics('svc', { hasher, member: () => member });
  let snap = await m.snapshot();
  t.equal(value(snap, 'svc_password_hash_queue'), 3);
  t.equal(value(snap, 'svc_password_hash_threads'), 2);
  t.equal(value(snap, 'svc_cluster_members'), 3);
  t.equal(value(snap, 'svc_cluster_lease_renewals_total'), 10);
  t.equal(value(snap, 'svc_cluster_lease_failures_total'), 1);
  t.equal(value(snap, 'svc_cluster_link_reconnects_total'), 2);
  t.equal(value(snap, 'svc_cluster_link_batches_sent_total'), 40);
  t.equal(value(snap, 'svc_cluster_link_batches_received_total'), 38);
  t.ok(snap.some((x) => x.name === 'process_cpu_user_seconds_total'), "and the process's own figures");
  hasher.queued = 0;
  member = { ...member, counters: { lease_renewals: 12, lease_failures: 1 } };
  snap = await m.snapshot();
  t.equal(value(snap, 'svc_password_hash_queue'), 0);
  t.equal(value(snap, 'svc_cluster_lease_renewals_total'), 12, 'mirrored, not added up');
  member = undefined;
  snap = await m.snapshot();
  t.equal(value(snap, 'svc_cluster_members'), 0, 'not a member (yet): zero');

  const plain = await new MainMetrics('svc', {}).snapshot();
  t.notOk(plain.some((x) => x.name.startsWith('svc_')), 'no hasher, no member: no such metrics');
});

t.test('the scrape asks every worker thread of this process; what goes wrong on one does not lose its counts', async (t) => {
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('p/main') });
  const w1 = new ActorSystem({ transport: net.transport('p/w1') });
  const w2 = new ActorSystem({ transport: net.transport('p/w2') });
  const other = new ActorSystem({ transport: net.transport('q/w1') });
  t.teardown(async () => {
    for (const s of [main, w1, w2, other]) await s.shutdown();
  });
  const counter = (n: number): MetricJson => ({ name: 'svc_things_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: {}, value: n }] });
  const gauge = (n: number): MetricJson => ({ name: 'svc_level', help: 'h', type: 'gauge', aggregator: 'sum', values: [{ labels: {}, value: n }] });
  const answers = new Map<ActorSystem, ThreadSnapshot | Error>([
    [w1, { incarnation: 'w1-a', metrics: [counter(5), gauge(1)] }],
    [w2, { incarnation: 'w2-a', metrics: [counter(7), gauge(1)] }],
    [other, { incarnation: 'q-a', metrics: [counter(1000), gauge(1000)] }],
  ]);
  const asked: string[] = [];
  for (const s of [w1, w2, other]) {
    s.spawn(
      fromReceive(() => {
        asked.push(s.nodeId);
        const a = answers.get(s);
        if (a instanceof Error) throw a;
        return a;
      }),
      THREAD_METRICS_ACTOR,
    );
  }
  const m = new MainMetrics('svc', {});
  const total = async () => {
    const merged = (await merge(await m.scrape(main)).getMetricsAsJSON()) as unknown as MetricJson[];
    return { things: value(merged, 'svc_things_total'), level: value(merged, 'svc_level') };
  };
  t.same(await total(), { things: 12, level: 2 });
  t.same(asked.sort(), ['p/w1', 'p/w2'], 'only the worker threads of this process are asked');

  answers.set(w1, new Error('a walker holds the event loop'));
  t.same(await total(), { things: 12, level: 2 }, 'a thread that does not answer counts with its last answer');

  answers.set(w1, { incarnation: 'w1-b', metrics: [counter(1), gauge(1)] });
  t.same(await total(), { things: 13, level: 2 }, "a replaced thread: its predecessor's counters stay in the totals, its gauges do not");
  t.same(await total(), { things: 13, level: 2 }, 'and are kept once, not once per scrape');

  answers.set(w1, { incarnation: 'w1-a', metrics: [counter(6), gauge(1)] });
  t.same(await total(), { things: 13, level: 2 }, 'a late answer of a thread that was replaced does not replace its successor');

  // A worker asks the main thread's metrics actor for everything.
  serveMainMetrics(main, m, 'metrics-main');
  const all = (await w2.refFromAddress({ node: 'p/main', path: '/user/metrics-main' }).ask({}, 5_000)) as MetricJson[][];
  t.equal(all.length, 4, "two threads' answers, the retired counters, and the main thread's own");
});
