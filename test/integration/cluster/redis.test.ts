import t from 'tap';
import { connectRedis, openRedis, reconnectDelay, redactUrl, RedisScript, UNPARSEABLE_URL, whenReady, clusterKey } from '../../../stores/redis/connection.ts';
import { skipRedis, startRedis } from '../../kit/index.ts';

t.test('redactUrl hides user and password of any scheme', async (t) => {
  const cases: [string, string][] = [
    ['redis://:hunter2@host:6379/0', 'redis://:***@host:6379/0'],
    ['redis://default:hunter2@host:6379', 'redis://***:***@host:6379'],
    ['rediss://user:p%40ss@cache.example.com:6380/2', 'rediss://***:***@cache.example.com:6380/2'],
    ['redis://host:6379/0', 'redis://host:6379/0'],
    ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'],
    ['postgres://app:s3cret@db:5432/svc', 'postgres://***:***@db:5432/svc'],
    ['postgresql://app@db/svc?sslmode=require&password=s3cret', 'postgresql://***@db/svc?sslmode=require&password=***'],
    ['mongodb://root:s3cret@h1:27017,h2:27017/svc?replicaSet=rs0&authSource=admin', 'mongodb://***:***@h1:27017,h2:27017/svc?replicaSet=rs0&authSource=***'],
    ['mongodb+srv://u:s3cret@cluster0.abc.mongodb.net/?retryWrites=true&w=majority', 'mongodb+srv://***:***@cluster0.abc.mongodb.net/?retryWrites=true&w=majority'],
    ['redis://:p@ss@word@host:6379', 'redis://:***@host:6379'],
    ['redis://host/0?password=s3cret&db=1', 'redis://host/0?password=***&db=1'],
    ['REDIS://:x1y2z3@host', 'REDIS://:***@host'],
  ];
  for (const [url, shown] of cases) t.equal(redactUrl(url), shown, url);
});

t.test('redactUrl never throws and never echoes garbage that may hold a secret', async (t) => {
  for (const junk of ['', '   ', 'not a url', 'hunter2@host:6379', 'host:6379', '://x', '%%%', '\u0000\u0001']) t.equal(redactUrl(junk), UNPARSEABLE_URL, JSON.stringify(junk));
  t.equal(redactUrl(undefined as unknown as string), UNPARSEABLE_URL);
  t.equal(redactUrl(42 as unknown as string), UNPARSEABLE_URL);
  t.notMatch(redactUrl('redis://:s3cret@host\n:6379'), /\n/, 'one line');
  t.equal(redactUrl('redis://host/0#frag-s3cret'), 'redis://host/0#***');
});

t.test('clusterKey hash-tags the cluster name', async (t) => {
  t.equal(clusterKey('prod', 'member', 'p1'), 'svc:{prod}:member:p1');
});

t.test('reconnect backoff: 50 ms doubling, capped at 2 s', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 7, 50].map(reconnectDelay), [50, 100, 200, 400, 800, 1600, 2000, 2000]);
});

t.test('openRedis refuses other schemes, with the URL redacted', async (t) => {
  t.throws(() => openRedis('postgres://u:s3cret@db/x', { name: 't' }), { code: 'SVC_ERR_REDIS_URL' });
  try {
    openRedis('postgres://u:s3cret@db/x', { name: 't' });
  } catch (e) {
    t.notMatch((e as Error).message, /s3cret/);
  }
  t.throws(() => openRedis('no url', { name: 't' }), { code: 'SVC_ERR_REDIS_URL' });
});

t.test('connectRedis: resolves with a ready client', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t, { password: 's3cret-pw' });
  const redis = await connectRedis(server.url, 'test', 5_000);
  t.teardown(() => redis.disconnect());
  t.equal(redis.status, 'ready');
  t.equal(await redis.ping(), 'PONG');
  const list = await redis.client('LIST');
  t.match(String(list), /name=svc:test/, 'named in CLIENT LIST');
});

t.test('connectRedis: unreachable → one line, no password, within the timeout', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  await server.stop(); // a port nobody listens on
  const url = `redis://:s3cret-pw@127.0.0.1:${server.port}/0`;
  const started = Date.now();
  const error = await connectRedis(url, 'test', 300).then(
    () => undefined,
    (e: unknown) => e as Error & { code: string },
  );
  t.ok(error, 'rejects');
  t.equal(error?.code, 'SVC_ERR_REDIS_UNREACHABLE');
  t.notMatch(error?.message ?? '', /s3cret/);
  t.notMatch(error?.message ?? '', /\n/);
  t.match(error?.message ?? '', /redis:\/\/:\*\*\*@127\.0\.0\.1/);
  t.ok(Date.now() - started < 2_000, 'gives up around the timeout');
});

t.test('connectRedis: a wrong password is reported without the password', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t, { password: 'right-pw' });
  const error = await connectRedis(`redis://:wrong-pw-123@127.0.0.1:${server.port}`, 'test', 300).then(
    () => undefined,
    (e: unknown) => e as Error & { code: string },
  );
  t.equal(error?.code, 'SVC_ERR_REDIS_UNREACHABLE');
  t.notMatch(error?.message ?? '', /wrong-pw-123/);
  t.notMatch(error?.message ?? '', /\n/);
});

t.test('openRedis: fails fast while down, reconnects, reports once per outage', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const errors: unknown[] = [];
  const redis = openRedis(server.url, { name: 'test', onError: (e) => errors.push(e) });
  t.teardown(() => redis.disconnect());
  await whenReady(redis, 5_000);
  const closed = new Promise((resolve) => redis.once('close', resolve));
  await server.stop();
  await closed;
  const started = Date.now();
  await t.rejects(redis.get('x'), 'a command while down is rejected');
  t.ok(Date.now() - started < 500, 'at once, not after a reconnect');
  // Several reconnect attempts fail; one report.
  await new Promise<void>((resolve) => {
    let n = 0;
    const onReconnecting = (): void => {
      if (++n < 3) return;
      redis.off('reconnecting', onReconnecting);
      resolve();
    };
    redis.on('reconnecting', onReconnecting);
  });
  t.equal(errors.length, 1, 'one report for the outage');
  await server.restart();
  await whenReady(redis, 10_000);
  t.equal(await redis.ping(), 'PONG', 'reconnected');
  await server.stop();
  await new Promise((resolve) => redis.once('error', resolve));
  t.equal(errors.length, 2, 'a new outage is reported again');
});

t.test('RedisScript: EVALSHA, and EVAL when the server forgot the script', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const redis = server.client();
  const script = new RedisScript("return redis.call('INCR', KEYS[1])");
  t.equal(await script.run(redis, ['n'], []), 1);
  await redis.script('FLUSH');
  t.equal(await script.run(redis, ['n'], []), 2);
  t.equal(await script.run(redis, ['n'], []), 3);
});
