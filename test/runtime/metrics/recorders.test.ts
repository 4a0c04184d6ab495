// The metrics recorders and the scrape merge, in process (the real-server tests are in test/integration/metrics).
import t from 'tap';
import { adminMetrics, Histogram, HttpRecorder, renderMetrics, ThreadMetrics } from '../../../runtime/metrics/index.ts';

t.test('a histogram: a value lands in the first bucket it fits, exported cumulative with +Inf, sum and count', async (t) => {
  const h = new Histogram([0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 3]) h.observe(v);
  const values = h.values('x', { a: '1' });
  t.same(
    values.map((v) => [v.metricName, v.labels.le, v.value]),
    [
      ['x_bucket', 0.1, 2],
      ['x_bucket', 1, 3],
      ['x_bucket', '+Inf', 4],
      ['x_sum', undefined, 3.65],
      ['x_count', undefined, 4],
    ],
  );
});

t.test('requests by method, route and status; unknown methods share one label', async (t) => {
  const r = new HttpRecorder('svc', [0.1]);
  r.record('POST', '/walker/A', 200, 0.01);
  r.record('POST', '/walker/A', 200, 0.2);
  r.record('POST', '/walker/A', 500, 0.01);
  r.record('BREW', 'unmatched', 404, 0.01);
  r.record('PROPFIND', 'unmatched', 404, 0.01);
  const [total, duration] = r.toJSON();
  t.same(total?.values.map((v) => [v.labels.method, v.labels.path, v.labels.status_code, v.value]), [
    ['POST', '/walker/A', '200', 2],
    ['POST', '/walker/A', '500', 1],
    ['OTHER', 'unmatched', '404', 2],
  ]);
  t.equal(duration?.values.filter((v) => v.metricName === 'svc_http_request_duration_seconds_count').length, 2, 'one duration series per method and route');
});

t.test('threads merge: counters and histograms add up, the summary reads them', async (t) => {
  const settings = { namespace: 'svc', buckets: [0.01, 0.1], walkerMetrics: false };
  const a = new ThreadMetrics(settings, { thread: 'w1', inFlight: () => 2 });
  const b = new ThreadMetrics(settings, { thread: 'w2', inFlight: () => 1 });
  t.teardown(() => {
    a.close();
    b.close();
  });
  a.http.record('GET', '/items/{item_id}', 200, 0.005);
  a.http.record('GET', '/items/{item_id}', 404, 0.02);
  b.http.record('GET', '/items/{item_id}', 200, 0.05);
  b.http.record('POST', '/walker/B', 503, 0.1);
  const snapshots = [await a.snapshot(), await b.snapshot()];
  const { text } = await renderMetrics(snapshots);
  t.match(text, /svc_http_requests_total\{method="GET",path="\/items\/\{item_id\}",status_code="200"\} 2\n/);
  t.match(text, /svc_http_request_duration_seconds_bucket\{le="0\.1",method="GET",path="\/items\/\{item_id\}"\} 3\n|svc_http_request_duration_seconds_bucket\{method="GET",path="\/items\/\{item_id\}",le="0\.1"\} 3\n/);
  t.match(text, /svc_http_requests_in_progress 3\n/);
  t.notMatch(text, /walker_duration/, 'no walker metrics unless asked');
  const { summary } = await adminMetrics(snapshots, 'svc');
  t.same(summary, { total_requests: 4, avg_latency_ms: 43.75, error_rate_percent: 50, server_error_rate_percent: 25, active_requests: 3 });
});

t.test('/admin/metrics leaves out samples JSON cannot hold (NaN, Infinity)', async (t) => {
  const snapshot = [
    { name: 'x_mean', help: 'h', type: 'gauge', aggregator: 'first', values: [{ labels: {}, value: Number.NaN }] },
    { name: 'x_ok', help: 'h', type: 'gauge', aggregator: 'first', values: [{ labels: { a: 1 }, value: 2 }] },
  ];
  const { metrics } = await adminMetrics([snapshot], 'svc');
  t.same(
    metrics.map((m) => [m.name, m.values]),
    [
      ['x_mean', []],
      ['x_ok', [{ labels: { a: '1' }, value: 2 }]],
    ],
  );
  t.doesNotThrow(() => JSON.parse(JSON.stringify(metrics)));
});
