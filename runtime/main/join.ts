/**
 * The `join` module of the main thread (a cluster member): once its workers
 * serve, the member joins with the app's fingerprint, its workers read the
 * revocations they may have missed, and only then open the port.
 */
import { redactUrl } from '../../stores/index.ts';
import { ADDRESS, CLUSTER, MEMBER, WORKERS } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { order, say, StartError, type StartOptions } from './options.ts';

/**
 * @example
 * composeRuntime([..., poolModule(options, processId, life), reportModule(options), joinModule(options), ...]);
 */
export function joinModule(options: StartOptions): RuntimeModule {
  return {
    name: 'join',
    needs: [MEMBER, CLUSTER, WORKERS, ADDRESS],
    async start(rt) {
      const member = rt.need(MEMBER);
      const { name, kvUrl, processId } = rt.need(CLUSTER);
      const pool = rt.need(WORKERS).current;
      const { listeners } = rt.need(ADDRESS);
      const { lease_ms: leaseMs } = options.config['scale.cluster'];
      const fingerprint = await order<string>(pool, 'w1', { t: 'fingerprint' });
      try {
        await member.join(pool, fingerprint);
      } catch (error) {
        // The modules started so far close (the workers at once, the member, the stores).
        throw new StartError(`joining cluster ${name} failed: ${(error as Error).message}`);
      }
      // Revocations published before the others counted this member in never reached it: read them again, then serve,
      // and once more after two heartbeats (by then every member has seen this one join).
      const reread = () => Promise.all(pool.workers.map((node) => order(pool, node, { t: 'revocations' })));
      await reread();
      setTimeout(() => void reread().catch(() => undefined), Math.ceil((2 * leaseMs) / 5)).unref();
      await Promise.all(listeners.map((thread) => order(pool, thread, { t: 'listen' })));
      const others = member.members().length - 1;
      say(`svc: cluster ${name}: joined as ${processId} (${others} other member${others === 1 ? '' : 's'}; link ${member.address}; Redis ${redactUrl(kvUrl)}; lease ${leaseMs} ms)`);
    },
  };
}
