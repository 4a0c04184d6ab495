// SIGTERM during load: in-flight requests finish, every acknowledged write survives, exit 0.
import t from 'tap';
import { post, startServer } from '../../helpers/server.ts';
import { Latch } from '../../helpers/latch.ts';

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
