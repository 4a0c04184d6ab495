/** The `sandbox` module: `sandboxes()` on every serving thread, their supervisors placed like the graph's partitions, the cleanup on one thread per process. */
import { type ActorSystem, MAIN_THREAD, remoteLeases, workerPlacement } from '../../kernel/index.ts';
import { bindSandboxes, checkSandboxSettings, localIsolation, defineSandboxKind, disabledEnv, sandboxEnv, sandboxRoot, startSandboxCleanup, type SandboxBinding, type SandboxSettings } from '../../actors/sandbox/index.ts';
import type { MemberState } from '../../cluster/index.ts';
import type { RelayTransport } from '../../transports/worker/index.ts';
import type { ServeBoot } from '../boot.ts';
import { dataPaths } from '../paths.ts';
import type { RuntimeModule } from '../runtime.ts';
import { consumesEvents } from './events.ts';
import { clusterPlacement } from './graph.ts';
import { GRAPH, LOG } from '../keys.ts';

export function sandboxModule(system: ActorSystem, boot: ServeBoot, fingerprint: string, relay: RelayTransport | undefined, member: MemberState | undefined, thread: string): RuntimeModule {
  let unbind: (() => void) | undefined;
  let stopCleanup: (() => void) | undefined;
  return {
    name: 'sandbox',
    needs: [LOG, GRAPH],
    async start(rt) {
      const log = rt.need(LOG).child({ room: 'sandbox' });
      const settings = boot.config['scale.sandbox'] as SandboxSettings;
      const { dataDir } = dataPaths(boot.projectRoot, boot.config);
      const root = sandboxRoot(settings, dataDir);
      if (!settings.enabled) {
        unbind = bindSandboxes({ system, env: disabledEnv(settings), root });
        return;
      }
      await checkSandboxSettings(settings);
      const env = sandboxEnv(settings, log, { dataDir, projectRoot: boot.projectRoot });
      defineSandboxKind(system, env, {
        placement: member ? clusterPlacement(system, fingerprint, relay) : workerPlacement(),
        ...(boot.activationLeases ? { lease: remoteLeases(system, MAIN_THREAD) } : {}),
      });
      const binding: SandboxBinding = { system, env, root };
      unbind = bindSandboxes(binding);
      if (!consumesEvents(thread)) return;
      // The provider's own start (on Kubernetes: the namespace, the Role, the warm pool), once per process. A cluster that
      // does not answer now does not stop svc: it is said, and the cleanup's sweeps refill the pool once it answers.
      const closeRunner = env.runner.open
        ? await env.runner.open().catch((error: unknown) => {
            log.warn({ err: error }, 'sandboxes: the provider could not be set up (retried at each cleanup)');
            return undefined;
          })
        : undefined;
      const stopSweeps = startSandboxCleanup(binding);
      stopCleanup = () => {
        stopSweeps();
        closeRunner?.();
      };
      if (env.runner.type === 'local') {
        // What the local provider isolates here, said once per process: a missing part is a warning.
        const isolation = localIsolation();
        const missing = isolation.user === undefined || !isolation.cgroup || !isolation.privateTmp;
        (missing ? log.warn.bind(log) : log.info.bind(log))({ isolation }, `sandboxes: local provider${missing ? ' with partial isolation (see isolation.notes)' : ''}`);
      }
    },
    close() {
      stopCleanup?.();
      unbind?.();
    },
  };
}
