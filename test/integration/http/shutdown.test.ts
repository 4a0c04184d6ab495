// SIGTERM during load: in-flight requests finish, every acknowledged write survives, exit 0.
import t from 'tap';
import { post, startServer, Latch } from '../../kit/index.ts';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;

t.test('SIGTERM under load loses no acknowledged write', async (t) => {
  const server = await startServer({ entry, workers: 2 });
  let acked = 0;
  let maxSeen = 0;
  const acks = new Latch();
  let stop = false;
  const lanes = Array.from({ length: 16 }, async () => {
    while (!stop) {
      try {
        const res = await post(`${server.url}/walker/Bump`, {});
        if (res.status === 200) {
          acked++;
          acks.hit();
          maxSeen = Math.max(maxSeen, res.body.data.reports[0] as number);
        }
      } catch {
        // refused once the server stops accepting
      }
    }
  });
  await acks.wait(200); // mid-load
  const code = await server.stop('SIGTERM');
  stop = true;
  await Promise.all(lanes);
  t.equal(code, 0, 'clean exit');
  t.ok(acked >= 200, `${acked} acknowledged before and during the drain`);

  const again = await startServer({ entry, env: { SVC_DATA_DIR: server.dataDir } });
  t.teardown(() => again.stop());
  const after = await post(`${again.url}/walker/Bump`, {});
  const count = (after.body.data.reports[0] as number) - 1;
  t.ok(count >= acked, `the counter (${count}) holds every acknowledged increment (${acked})`);
  t.ok(count >= maxSeen);
});

t.test('a request whose body is still arriving when SIGTERM comes is answered', async (t) => {
  const server = await startServer({ entry });
  const { request } = await import('node:http');
  const url = new URL(`${server.url}/walker/Echo`);
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 14 } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write('{"msg":');
    // The rest of the body goes once the server has begun draining.
    void server.waitFor(/draining/).then(() => req.end('"late"}'));
  });
  // One worker thread takes events in order: once this answer is back, the partial request's headers are in.
  await fetch(`${server.url}/healthz`);
  const stopped = server.stop('SIGTERM');
  const res = await answered;
  t.equal(res.status, 200);
  t.match(JSON.parse(res.body), { ok: true, data: { reports: ['late'] } });
  t.equal(await stopped, 0);
});

t.test('a walker past the request timeout: 504, its writes dropped, the graph serves again', async (t) => {
  const server = await startServer({ entry, env: { SVC_REQUEST_TIMEOUT_MS: '1000' } });
  t.teardown(() => server.stop());
  const slow = await post(`${server.url}/walker/SlowBump`, { ms: 5000 });
  t.equal(slow.status, 504);
  t.match(slow.body, { ok: false, error: { code: 'SVC_ERR_WALKER_TIMEOUT' } });
  const next = await post(`${server.url}/walker/Bump`, {});
  t.equal(next.status, 200, 'the guest graph serves right away');
  t.equal(next.body.data.reports[0], 1, 'the timed-out run’s +1000 was not committed');
});
