// svc start with several worker threads: writes go through the process's one SQLite writer (the default) or each thread's own.
import t from 'tap';
import { startServer, tokenFor, post } from '../kit/index.ts';
import { register, tokenOf } from '../helpers/identity.ts';

const entry = new URL('../fixtures/crash-app.ts', import.meta.url).pathname;

for (const mode of ['process', 'thread']) {
  t.test(`sqlite_writer = ${mode}: concurrent writes from every thread, none lost; users written and read`, async (t) => {
    const server = await startServer({ entry, workers: 2, env: { SVC_SQLITE_WRITER: mode } });
    t.teardown(() => server.stop());
    const tokens = await Promise.all(Array.from({ length: 6 }, (_, i) => tokenFor(`writer-${mode}-${i}`, { server })));
    const results = await Promise.all(tokens.flatMap((token) => Array.from({ length: 20 }, () => post(`${server.url}/walker/Bump`, {}, { authorization: `Bearer ${token}` }))));
    t.ok(results.every((r) => r.status === 200), 'every write acknowledged');
    for (const token of tokens) {
      const last = await post(`${server.url}/walker/Bump`, {}, { authorization: `Bearer ${token}` });
      t.equal(last.body.data.reports[0], 21, 'every acknowledged increment is there');
    }
    await register(server.url, `someone-${mode}`);
    t.ok(await tokenOf(server.url, `someone-${mode}`), 'a user registered through the writer logs in');
  });
}
