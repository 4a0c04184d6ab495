// The stream backends by URL scheme: a scheme nobody registered is a clear error naming no secret;
// the built-in Redis backend registers itself for redis:// and rediss://.
import t from 'tap';
import { openStreams } from '../../../actors/events/index.ts';

t.test('a scheme no stream backend registered is SVC_ERR_REDIS_URL, naming the scheme and not the URL', async (t) => {
  t.throws(() => openStreams('amqp://user:hunter2@127.0.0.1:1/x', { name: 'test' }), { code: 'SVC_ERR_REDIS_URL', message: /"amqp:"/ });
  t.throws(() => openStreams('amqp://user:hunter2@127.0.0.1:1/x', { name: 'test' }), { message: /^(?!.*hunter2)/ }, 'the password is not repeated');
  t.throws(() => openStreams('127.0.0.1:6379', { name: 'test' }), { code: 'SVC_ERR_REDIS_URL', message: /for a URL without a scheme/ }, 'host:port is not called a sqlite: URL');
});

t.test('the built-in backends registered, redis:// opens Redis Streams', async (t) => {
  await import('../../../stores/index.ts');
  const streams = openStreams('redis://127.0.0.1:1', { name: 'test', onError: () => undefined });
  t.teardown(() => streams.close());
  t.equal(streams.kind, 'redis');
  t.throws(() => openStreams('amqp://127.0.0.1:1', { name: 'test' }), { code: 'SVC_ERR_REDIS_URL', message: /redis:, rediss:/ }, 'the error lists the schemes there are');
});
