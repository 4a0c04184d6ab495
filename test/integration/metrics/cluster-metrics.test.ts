// Metrics of a cluster member: each member answers for its own process (threads summed), with the
// membership's and the links' figures; a run handed to another member is a forwarded request.
import t from 'tap';
import { skipRedis, startRedis, adminToken, pool, startCluster, walk, type TestCluster } from '../../kit/index.ts';

t.setTimeout(360_000);

const total = (text: string, name: string, labels: Record<string, string> = {}): number => {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[3]);
  }
  return sum;
};

t.test('two members: per-process figures, cluster gauges and counters, forwarded runs', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster: TestCluster = await startCluster(t, 2, { redis, env: { SVC_METRICS_ENABLED: 'true' } });
  const [a, b] = cluster.members as [TestCluster['members'][0], TestCluster['members'][0]];
  const token = await adminToken(a);
  const scrape = async (url: string) => {
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    t.equal(res.status, 200);
    return res.text();
  };
  // One shared node (one owner), bumped 150 times through A and 50 through B: the member that does not own it forwards.
  const results = await pool(200, 16, (i) => walk(i % 4 === 0 ? b.url : a.url, 'BumpShared'));
  t.equal(results.filter((r) => r.status !== 200).length, 0, 'all answered');
  // A member renews its lease every heartbeat: wait until each has renewed once since it joined.
  let [ta, tb] = [await scrape(a.url), await scrape(b.url)];
  while (total(ta, 'svc_cluster_lease_renewals_total') === 0 || total(tb, 'svc_cluster_lease_renewals_total') === 0) [ta, tb] = [await scrape(a.url), await scrape(b.url)];
  t.equal(total(ta, 'svc_http_requests_total', { path: '/walker/BumpShared', status_code: '200' }), 150, 'A counted the requests it answered');
  t.equal(total(tb, 'svc_http_requests_total', { path: '/walker/BumpShared', status_code: '200' }), 50, 'and B its own: each member answers for itself');
  for (const text of [ta, tb]) {
    t.equal(total(text, 'svc_cluster_members'), 2, 'two members');
    t.ok(total(text, 'svc_cluster_lease_renewals_total') > 0, 'lease renewals counted');
    t.equal(total(text, 'svc_cluster_lease_failures_total'), 0, 'no lease failures');
    t.match(text, /# TYPE svc_cluster_link_reconnects_total counter/);
  }
  const forwarded = total(ta, 'svc_forwarded_request_duration_seconds_count') + total(tb, 'svc_forwarded_request_duration_seconds_count');
  t.ok(forwarded > 0, `runs handed to the owner are counted (${forwarded})`);
  for (const text of [ta, tb]) {
    const member = total(text, 'svc_forwarded_request_duration_seconds_count', { target: 'member' });
    if (member > 0) t.ok(total(text, 'svc_cluster_link_batches_sent_total') > 0, 'runs forwarded to the other member travelled over its link');
  }
  t.ok(total(ta, 'svc_forwarded_request_duration_seconds_count', { target: 'member' }) + total(tb, 'svc_forwarded_request_duration_seconds_count', { target: 'member' }) > 0, 'forwarded to the other member');
});
