// The PostgreSQL pool on a real server: a connection the server ends while it is in use fails its call with a code,
// never with an 'error' event nobody listens to (that ends the thread: a worker of svc, replaced, its requests lost).
import t from 'tap';
import { PgPool } from '../../../stores/postgres/index.ts';
import { skipPostgres, startPostgres } from '../../kit/index.ts';

t.setTimeout(120_000);

if (skipPostgres) {
  t.comment(`SKIPPED LOUDLY: ${skipPostgres}`);
  t.pass(`skipped: ${skipPostgres}`);
} else {
  const server = await startPostgres(t);

  t.test('a connection ended by the server between two queries of a call: the call fails with a code, the process lives on', async (t) => {
    const uri = await server.database();
    const pool = PgPool.open(uri);
    const admin = PgPool.open(uri);
    t.teardown(async () => {
      await pool.close();
      await admin.close();
    });
    // Before the fix, the process ended here: an 'error' event of the connection nobody listened to.
    let pid: number | undefined;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const call = pool.run(async (client) => {
      pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      // Not events.once: it listens for 'error' too.
      const ended = new Promise((resolve) => client.once('end', resolve));
      started();
      // Between two queries (as a commit's BEGIN and INSERT are): the server's goodbye reaches no query.
      await ended;
      await client.query('SELECT 1');
    });
    const outcome = call.then(
      () => 'resolved',
      (error: { code?: string }) => error.code,
    );
    await running;
    await admin.run((client) => client.query('SELECT pg_terminate_backend($1)', [pid]));
    t.match(await outcome, /^SVC_ERR_STORE/, 'the call fails with a store code');
    t.equal(await admin.run(async (client) => (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one), 1, 'and the process lives on');
  });
}
