/**
 * The `sandbox` module: `sandboxes()` on every serving thread, their supervisors placed like the graph's partitions, the cleanup on one thread per process.
 *
 * The provider itself (its set-up, the isolation probe and its log line, the reconciliation and the cleanup sweeps) starts
 * only when sandboxes are configured or in use: a provider other than `local`, or a sandbox folder already there (sandboxes
 * of an earlier run); else when the first sandbox makes that folder. An app that never calls `sandboxes()` pays nothing for it.
 */
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
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
  let watching: FSWatcher | undefined;
  let stopped = false;
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
      const startProvider = async (): Promise<void> => {
        if (stopped || stopCleanup) return;
        // The provider's own start (on Kubernetes: the namespace, the Role, the warm pool), once per process. A cluster that
        // does not answer now does not stop svc: it is said, and the cleanup's sweeps refill the pool once it answers.
        const closeRunner = env.runner.open
          ? await env.runner.open().catch((error: unknown) => {
              log.warn({ err: error }, 'sandboxes: the provider could not be set up (retried at each cleanup)');
              return undefined;
            })
          : undefined;
        if (stopped) return closeRunner?.();
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
      };
      if (settings.type !== 'local' || existsSync(root)) return startProvider();
      // No sandbox yet: the provider starts when the first one makes the sandbox folder (or now, if that cannot be watched).
      const parent = dirname(root);
      if (!existsSync(parent)) return startProvider();
      try {
        watching = watch(parent, (_event, name) => {
          if (name !== null && String(name) !== basename(root)) return;
          if (!existsSync(root)) return;
          watching?.close();
          watching = undefined;
          void startProvider().catch((error: unknown) => log.warn({ err: error }, 'sandboxes: the provider could not be started'));
        });
        watching.unref();
      } catch {
        return startProvider();
      }
    },
    close() {
      stopped = true;
      watching?.close();
      stopCleanup?.();
      unbind?.();
    },
  };
}
