// One ClusterMember on its main thread, with a real Redis and a stand-in worker pool: the order in which a member that
// lost its lease lets its workers serve again.
import t from 'tap';
import { ActorSystem, fromReceive } from '../../../kernel/index.ts';
import { ClusterMember, type MemberPool } from '../../../cluster/member.ts';
import type { RemoteNode } from '../../../transports/worker/index.ts';
import { deferred, skipRedis, startRedis } from '../../kit/index.ts';

t.test('a member that lost its lease serves again only once each worker has the new view of the members', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const joinedAgain = deferred<void>();
  const member = await ClusterMember.open({
    kvUrl: redis.url,
    name: 'member-test',
    leaseMs: 1000,
    host: '127.0.0.1',
    advertiseHost: '127.0.0.1',
    processId: 'p1',
    secret: 'a secret of the cluster, long enough',
    version: 'test',
    log: (_level, message) => {
      if (/joined the cluster again/.test(message)) joinedAgain.resolve();
    },
  });
  t.teardown(() => member.close());
  // What the workers see, in order: is the member serving (its lease's validity, read as the workers read it) at each step?
  const serving = () => Date.now() <= member.state.validUntil;
  const seen: string[] = [];
  // The stand-in worker thread: it answers the main thread's orders as /user/http does.
  const system = new ActorSystem({ nodeId: 'p1/w1' });
  t.teardown(() => system.shutdown());
  system.spawn(
    fromReceive((msg: { t: string }) => {
      seen.push(`${msg.t} (serving: ${serving()})`);
      return true;
    }),
    'http',
  );
  const pool: MemberPool = {
    system,
    workers: [system.nodeId],
    setRemote: (nodes: RemoteNode[]) => void seen.push(`remote ${nodes.length} (serving: ${serving()})`),
    linkLost: () => undefined,
    deliver: () => true,
  };
  await member.join(pool, 'app');
  t.ok(serving(), 'serving once joined');
  seen.length = 0;

  // Its key is gone from Redis (as after a pause past the lease): the next renewal finds it lost.
  const check = redis.client();
  t.equal(await check.del(`svc:{member-test}:member:${member.memberId}`), 1);
  await joinedAgain.promise;
  // Cut off (an empty view), it forgets, joins again, gives its workers the new view and hears back from each.
  const steps = seen.map((s) => s.split(' ')[0]);
  t.ok(steps.indexOf('remote') < steps.indexOf('forget') && steps.indexOf('forget') < steps.lastIndexOf('remote'), `cut off, then forgets, then the new view (${seen})`);
  t.equal(steps.at(-1), 'revocations', "each worker's answer comes after it has the new view");
  t.same(
    seen.filter((s) => !s.endsWith('(serving: false)')),
    [],
    'none of it while serving: a worker never serves with the view of the outage',
  );
  t.ok(serving(), 'and serves once every worker answered');
  t.equal(member.memberId, 'p1-2', 'under a new member id');
});
