// One thread's metrics through the metrics room's door: what the observers' diagnostics channels feed in (runs,
// forwarded runs, commits, kernel events), what the sources are read as at a scrape (actors by kind, WebSockets,
// events, lag), refusals, the mailbox high-water mark kept past its actor and merged as a maximum, and close().
import t from 'tap';
import { channel } from 'node:diagnostics_channel';
import { KERNEL_CHANNELS } from 'svc/kernel';
import { FORWARD_CHANNEL, RUN_CHANNEL, STORE_COMMIT_CHANNEL } from '../../../actors/graph/index.ts';
import { merge, ThreadMetrics, type MetricJson, type ThreadSources } from '../../../runtime/metrics/index.ts';

const SETTINGS = { namespace: 'svc', buckets: [0.01, 0.1, 1], walkerMetrics: true };

function metrics(t: { teardown(fn: () => unknown): void }, sources: Partial<ThreadSources> = {}, settings = SETTINGS): ThreadMetrics {
  const m = new ThreadMetrics(settings, { thread: 'w1', ...sources });
  t.teardown(() => m.close());
  return m;
}

/** `[labels, value]` of each sample of metric `name` (histograms: of the series `sample`). */
function samples(snapshot: MetricJson[], name: string, sample?: string): [Record<string, string | number>, number][] {
  const metric = snapshot.find((m) => m.name === name);
  if (!metric) return [];
  return metric.values.filter((v) => sample === undefined || v.metricName === sample).map((v) => [v.labels, v.value]);
}

t.test('walker runs by name and outcome, from the run channel; none unless walker metrics are on', async (t) => {
  const m = metrics(t);
  const off = metrics(t, {}, { ...SETTINGS, walkerMetrics: false });
  const runs = channel(RUN_CHANNEL);
  runs.publish({ kind: 'walker', name: 'Order', ok: true, durationMs: 5 });
  runs.publish({ kind: 'walker', name: 'Order', ok: true, durationMs: 50 });
  runs.publish({ kind: 'function', name: 'Order', ok: false, durationMs: 2000 });
  const snap = await m.snapshot();
  t.same(samples(snap, 'svc_walker_duration_seconds', 'svc_walker_duration_seconds_count'), [
    [{ walker_name: 'Order', success: 'true' }, 2],
    [{ walker_name: 'Order', success: 'false' }, 1],
  ]);
  t.same(samples(snap, 'svc_walker_duration_seconds', 'svc_walker_duration_seconds_bucket').filter(([l]) => l.success === 'true'), [
    [{ walker_name: 'Order', success: 'true', le: 0.01 }, 1],
    [{ walker_name: 'Order', success: 'true', le: 0.1 }, 2],
    [{ walker_name: 'Order', success: 'true', le: 1 }, 2],
    [{ walker_name: 'Order', success: 'true', le: '+Inf' }, 2],
  ]);
  t.same(samples(snap, 'svc_walker_duration_seconds', 'svc_walker_duration_seconds_sum').map(([, v]) => v), [0.055, 2]);
  t.notOk((await off.snapshot()).some((x) => x.name === 'svc_walker_duration_seconds'), 'off: no walker histogram at all');
});

t.test('forwarded runs by target and success; store commits by backend and outcome', async (t) => {
  const m = metrics(t);
  channel(FORWARD_CHANNEL).publish({ target: 'thread', ok: true, durationMs: 3 });
  channel(FORWARD_CHANNEL).publish({ target: 'member', ok: false, durationMs: 300 });
  channel(STORE_COMMIT_CHANNEL).publish({ store: 'sqlite', durationMs: 4, upserts: 2, deletes: 0, outcome: 'ok' });
  channel(STORE_COMMIT_CHANNEL).publish({ store: 'sqlite', durationMs: 40, upserts: 1, deletes: 0, outcome: 'conflict' });
  const snap = await m.snapshot();
  t.same(samples(snap, 'svc_forwarded_request_duration_seconds', 'svc_forwarded_request_duration_seconds_count'), [
    [{ target: 'thread', success: 'true' }, 1],
    [{ target: 'member', success: 'false' }, 1],
  ]);
  t.same(samples(snap, 'svc_store_commit_duration_seconds', 'svc_store_commit_duration_seconds_count'), [
    [{ store: 'sqlite', outcome: 'ok' }, 1],
    [{ store: 'sqlite', outcome: 'conflict' }, 1],
  ]);
});

t.test('kernel events: activations, deactivations, failures by decision, mailbox rejections; refusals by code', async (t) => {
  const m = metrics(t);
  channel(KERNEL_CHANNELS.activation).publish({ kind: 'partition', key: 'r1', node: 'p/w1', path: '/kinds/partition/r1' });
  channel(KERNEL_CHANNELS.activation).publish({ kind: 'partition', key: 'r2', node: 'p/w1', path: '/kinds/partition/r2' });
  channel(KERNEL_CHANNELS.deactivation).publish({ kind: 'partition', key: 'r1', node: 'p/w1', path: '/kinds/partition/r1' });
  channel(KERNEL_CHANNELS.restart).publish({ label: 'writer', path: '/user/writer', node: 'p/w1', error: new Error('x'), decision: 'restart', delayMs: 0 });
  channel(KERNEL_CHANNELS.mailboxFull).publish({ label: 'session', path: '/user/s1', node: 'p/w1', capacity: 1, overflow: 'reject', message: null });
  channel(KERNEL_CHANNELS.mailboxFull).publish({ label: 'session', path: '/user/s2', node: 'p/w1', capacity: 1, overflow: 'reject', message: null });
  m.refused('SVC_ERR_NOT_MEMBER');
  m.refused('SVC_ERR_NOT_MEMBER');
  m.refused('SVC_ERR_STORE_UNAVAILABLE');
  const snap = await m.snapshot();
  t.same(samples(snap, 'svc_actor_activations_total'), [[{ kind: 'partition' }, 2]]);
  t.same(samples(snap, 'svc_actor_deactivations_total'), [[{ kind: 'partition' }, 1]]);
  t.same(samples(snap, 'svc_actor_failures_total'), [[{ actor: 'writer', decision: 'restart' }, 1]]);
  t.same(samples(snap, 'svc_mailbox_rejections_total'), [[{ actor: 'session' }, 2]]);
  t.same(samples(snap, 'svc_requests_refused_total'), [
    [{ code: 'SVC_ERR_NOT_MEMBER' }, 2],
    [{ code: 'SVC_ERR_STORE_UNAVAILABLE' }, 1],
  ]);
});

t.test('sources read at the scrape: actors by kind, WebSockets, events and their lag', async (t) => {
  let actors = 10;
  let broadcasts = 4;
  const m = metrics(t, {
    inFlight: () => 3,
    actors: () => actors,
    partitions: () => 6,
    websockets: () => ({ connections: 2, broadcasts, sessions: 3 }),
    broker: () => ({ kind: 'redis', counters: { published: 7, delivered: 5, dead_lettered: 1, buffered: 2, buffered_bytes: 300 } }),
    lag: async () => [
      { topic: 'orders', group: 'mail', lag: 4, pending: 1 },
      { topic: 'orders', group: 'audit', lag: null, pending: 0 },
    ],
  });
  let snap = await m.snapshot();
  t.same(samples(snap, 'svc_http_requests_in_progress'), [[{}, 3]]);
  t.same(samples(snap, 'svc_actors'), [
    [{ kind: 'partition' }, 6],
    [{ kind: 'session' }, 3],
    [{ kind: 'other' }, 1],
  ]);
  t.same(samples(snap, 'svc_websocket_connections'), [[{}, 2]]);
  t.same(samples(snap, 'svc_websocket_broadcasts_total'), [[{}, 4]]);
  t.same(samples(snap, 'svc_events_total'), [
    [{ outcome: 'published' }, 7],
    [{ outcome: 'delivered' }, 5],
    [{ outcome: 'dead_lettered' }, 1],
  ], 'the buffered figures are gauges of their own, not outcomes');
  t.same(samples(snap, 'svc_events_buffered'), [[{}, 2]]);
  t.same(samples(snap, 'svc_events_buffered_bytes'), [[{}, 300]]);
  t.same(samples(snap, 'svc_event_stream_lag'), [[{ topic: 'orders', group: 'mail' }, 4]], 'a lag that cannot be told is left out');
  t.same(samples(snap, 'svc_event_stream_pending'), [
    [{ topic: 'orders', group: 'mail' }, 1],
    [{ topic: 'orders', group: 'audit' }, 0],
  ]);
  actors = 5; // fewer than partitions and sessions (read at different moments): never a negative count
  broadcasts = 9;
  snap = await m.snapshot();
  t.same(samples(snap, 'svc_actors').find(([l]) => l.kind === 'other'), [{ kind: 'other' }, 0]);
  t.same(samples(snap, 'svc_websocket_broadcasts_total'), [[{}, 9]], 'the hub’s own count, mirrored');

  const bare = metrics(t, { broker: () => ({ kind: 'disabled', counters: { published: 3 } }) });
  const none = await bare.snapshot();
  t.same(samples(none, 'svc_events_total'), [], 'no broker: no event outcomes');
  t.notOk(none.some((x) => x.name === 'svc_event_stream_lag'), 'no lag source: no lag metric');
  t.same(samples(none, 'svc_actors').map(([, v]) => v), [0, 0, 0]);
});

t.test("mailbox depth: each actor's high-water mark, kept after it is gone, and the highest of the threads when merged", async (t) => {
  let live = new Map([['session', 3], ['writer', 7]]);
  const a = metrics(t, { mailboxes: () => live });
  const b = metrics(t, { thread: 'w2', mailboxes: () => new Map([['writer', 2]]) });
  t.same(samples(await a.snapshot(), 'svc_mailbox_depth_high_water'), [
    [{ actor: 'session' }, 3],
    [{ actor: 'writer' }, 7],
  ]);
  live = new Map([['session', 1]]);
  t.same(samples(await a.snapshot(), 'svc_mailbox_depth_high_water'), [
    [{ actor: 'session' }, 3],
    [{ actor: 'writer' }, 7],
  ], 'a lower depth, or an actor gone, leaves the mark');
  const merged = (await merge([await a.snapshot(), await b.snapshot()]).getMetricsAsJSON()) as unknown as MetricJson[];
  t.same(samples(merged, 'svc_mailbox_depth_high_water').find(([l]) => l.actor === 'writer')?.[1], 7, 'merged as a maximum, not a sum');
});

t.test('close(): the observers are left; what happens after is not counted', async (t) => {
  const m = new ThreadMetrics(SETTINGS, { thread: 'w1' });
  channel(KERNEL_CHANNELS.activation).publish({ kind: 'partition', key: 'r', node: 'n', path: 'p' });
  m.close();
  channel(KERNEL_CHANNELS.activation).publish({ kind: 'partition', key: 'r', node: 'n', path: 'p' });
  channel(RUN_CHANNEL).publish({ kind: 'walker', name: 'W', ok: true, durationMs: 1 });
  const snap = await m.snapshot();
  t.same(samples(snap, 'svc_actor_activations_total'), [[{ kind: 'partition' }, 1]]);
  t.same(samples(snap, 'svc_walker_duration_seconds'), []);
});
