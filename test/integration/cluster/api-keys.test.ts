// API keys across a cluster (two `svc start` processes, two worker threads each, one Redis, one
// data folder): a key made on one member works on the other; revoked on one, it is refused by the
// other at once — even though the other had it in memory.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { register, tokenOf } from '../../helpers/identity.ts';
import { skipRedis, startRedis, startCluster } from '../../kit/index.ts';

const entry = new URL('../../fixtures/keys-app.ts', import.meta.url).pathname;
const SECRET = 'cluster-webhook-secret-cluster-webhook-secret';

async function hook(url: string, key: string, event: string): Promise<number> {
  const body = JSON.stringify({ event });
  const res = await fetch(`${url}/webhook/OnRefund`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-webhook-signature': createHmac('sha256', SECRET).update(body).digest('hex') },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

t.test('a key revoked on one member is refused on every worker of the other at once', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 2, { redis, entry, workers: 2, env: { WEBHOOK_SECRET: SECRET } });
  const [a, b] = cluster.members as [(typeof cluster.members)[0], (typeof cluster.members)[0]];
  await register(a.url, 'carol');
  const token = await tokenOf(a.url, 'carol');
  const made = (await (await fetch(`${a.url}/api-key/create`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'c' }) })).json()) as {
    data: { api_key: string; api_key_id: string };
  };
  // Warm both workers of both members (requests spread over the worker threads).
  for (let i = 0; i < 8; i++) {
    t.equal(await hook(a.url, made.data.api_key, `a${i}`), 200, `member a, round ${i}`);
    t.equal(await hook(b.url, made.data.api_key, `b${i}`), 200, `member b, round ${i}`);
  }
  const revoked = await fetch(`${a.url}/api-key/${made.data.api_key_id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  t.equal(revoked.status, 200);
  for (let i = 0; i < 8; i++) {
    t.equal(await hook(b.url, made.data.api_key, `late-b${i}`), 401, `member b refuses it, round ${i}`);
    t.equal(await hook(a.url, made.data.api_key, `late-a${i}`), 401, `member a refuses it, round ${i}`);
  }
});
