/**
 * The providers by `[scale.sandbox] type`: `local` (child processes on this
 * host) and `container` (a docker-compatible engine). Registered with the
 * facade here, so `sandboxes()` makes the runner its settings name.
 */
import { sandboxRoot, setRunnerFactory } from './api.ts';
import { ContainerRunner, findContainerCli } from './container.ts';
import { sandboxError } from './errors.ts';
import { LocalRunner } from './local.ts';
import { OrchestratorRunner } from './orchestrator.ts';
import { assertSandboxSettings } from './settings.ts';
import type { SandboxSettings } from './types.ts';

setRunnerFactory((settings, records, host, paths) => {
  if (settings.type === 'container') return new ContainerRunner(settings);
  if (settings.type === 'orchestrator') return new OrchestratorRunner(settings);
  return new LocalRunner(settings, {
    claimPort: (port, id) => records.claimPort(host, port, id),
    releasePort: (port, id) => records.releasePort(host, port, id),
    // svc's data (its store, other sandboxes' folders) and its project (the app's source, svc.toml) are not the sandbox's to see.
    hide: paths ? [paths.dataDir, paths.projectRoot, sandboxRoot(settings, paths.dataDir)] : [],
  });
});

/** `[scale.sandbox]` as `svc start` checks it: the settings, and for containers an engine that answers. */
export async function checkSandboxSettings(settings: SandboxSettings): Promise<void> {
  assertSandboxSettings(settings);
  if (settings.type === 'container' && !(await findContainerCli(settings.container_cli))) {
    throw sandboxError(
      'SANDBOX_UNAVAILABLE',
      settings.container_cli
        ? `[scale.sandbox] container_cli = ${JSON.stringify(settings.container_cli)} does not answer (its "info" failed)`
        : '[scale.sandbox] type = "container": neither docker nor podman answers here (a docker client without an engine is skipped); set container_cli (SVC_SANDBOX_CONTAINER_CLI) or use type = "local"',
    );
  }
}
