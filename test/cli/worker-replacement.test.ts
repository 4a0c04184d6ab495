// svc start replaces a worker thread that dies: the others keep serving, the new one takes its name and its graphs back.
import t from 'tap';
import { startServer, tokenFor, post } from '../kit/index.ts';

const entry = new URL('../fixtures/crash-app.ts', import.meta.url).pathname;

t.test('a worker thread that dies is replaced; no acknowledged write is lost', async (t) => {
  const server = await startServer({ entry, workers: 2 });
  t.teardown(() => server.stop());
  const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => tokenFor(`crash-user-${i}`, { server })));
  const bump = async (token: string) => post(`${server.url}/walker/Bump`, {}, { authorization: `Bearer ${token}` });
  const counts: number[] = [];
  for (const token of tokens) {
    for (let i = 0; i < 3; i++) await bump(token);
    const res = await bump(token);
    t.equal(res.status, 200);
    counts.push(res.body.data.reports[0] as number);
  }
  t.same(counts, tokens.map(() => 4));

  const victim = tokens[0] as string;
  // Any answer, or none: the thread ending may hold this very connection.
  await post(`${server.url}/walker/Crash`, {}, { authorization: `Bearer ${victim}` }).catch(() => undefined);
  const exited = await server.waitFor(/worker (w\d) exited with code 9; starting a new one/);
  const name = /worker (w\d)/.exec(exited)?.[1] as string;
  await server.waitFor(new RegExp(`worker ${name} is serving again`));

  // Every graph answers again, from wherever it lives now, with every acknowledged increment.
  for (const token of tokens) {
    const res = await bump(token);
    t.equal(res.status, 200, 'served after the replacement');
    t.equal(res.body.data.reports[0], 5, 'the count went on from 4');
  }
  const admin = await tokenFor('crash-admin', { server, role: 'admin' });
  const stats = (await (await fetch(`${server.url}/admin/stats`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { data: { workers: { worker: string }[] } };
  t.same(
    stats.data.workers.map((w) => w.worker),
    ['w1', 'w2'],
    'both threads report again',
  );
  t.equal(await server.stop(), 0, 'and the process shuts down cleanly');
});
