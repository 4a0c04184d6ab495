/**
 * `svc sandbox <action>`: the operator's view of the project's sandboxes,
 * through the same records and providers as the running service (its
 * `svc.toml` and environment; `--profile`):
 *
 * - `list [--user <id>]`: one line per sandbox (or `--json`);
 * - `logs <id> [--follow]`: the dev server's output (followed until it stops, or Ctrl-C);
 * - `exec <id> -- <command…>`: run a command in it, its output as it comes, its exit code as ours;
 * - `stop <id>`, `destroy <id>`;
 * - `cleanup`: remove what is expired, failed or left over now (the service does it every `cleanup_interval_seconds`);
 * - `proxy`: the routing proxy of sandbox previews on Kubernetes (`{sandbox_id}.preview.<domain>` → the sandbox's
 *   pod), configured by its environment (`SANDBOX_NAMESPACE`, `SANDBOX_LABEL`, `INTERNAL_PORT`, `PROXY_PORT`,
 *   `PROXY_HOST`, `PREVIEW_SECRET`) and the cluster of `KUBECONFIG` or the pod's service account; it runs until
 *   SIGTERM or SIGINT, then closes gracefully (requests in flight have 10 s).
 *
 * A failure is one line on stderr and exit code 1 (2: a usage error).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanupSandboxes, currentSandboxes, isActive, sandboxes, setSandboxFallback, type SandboxSettings } from '../../actors/sandbox/index.ts';
import { setDataFallback, type StorageConfig } from '../../actors/data/index.ts';
import '../../stores/index.ts';
import { dataPaths, loadConfig } from '../../runtime/index.ts';

export interface SandboxFlags {
  user?: string;
  follow?: boolean;
  json?: boolean;
  profile?: string;
  '--'?: string[];
}

const ACTIONS = 'list, logs <id> [--follow], exec <id> -- <command>, stop <id>, destroy <id>, cleanup, proxy';

function usage(message: string): never {
  process.stderr.write(`svc: sandbox: ${message} (actions: ${ACTIONS})\n`);
  process.exit(2);
}

function needId(action: string, id: string | undefined): string {
  if (!id) usage(`${action} needs a sandbox id`);
  return id;
}

/** `svc sandbox proxy`: no project, no records; the cluster and the environment only. */
async function proxy(): Promise<never> {
  const { proxySettings, startSandboxProxy } = await import('../../transports/proxy/index.ts');
  const { connectCluster } = await import('../../kube/index.ts');
  let running: Awaited<ReturnType<typeof startSandboxProxy>>;
  try {
    const settings = proxySettings(process.env);
    running = await startSandboxProxy({ kube: connectCluster(process.env), ...settings });
    process.stdout.write(
      `svc sandbox proxy: listening on ${settings.host}:${running.port}, pods of ${settings.namespace} labelled ${settings.label} on port ${settings.internalPort}` +
        `${settings.previewSecret ? ', private (preview tokens required)' : ''}; ${running.routes.size} routes\n`,
    );
  } catch (error) {
    const e = error as Error & { code?: string };
    process.stderr.write(`svc: sandbox proxy: ${typeof e.code === 'string' ? `${e.code}: ` : ''}${e.message}\n`);
    process.exit(1);
  }
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  process.stdout.write(`svc sandbox proxy: ${signal}: closing (requests in flight have 10 s)\n`);
  await running.close(10_000);
  process.exit(0);
}

export async function sandbox(action: string | undefined, id: string | undefined, flags: SandboxFlags): Promise<void> {
  if (action === 'proxy') return proxy();
  const projectRoot = process.cwd();
  const config = () => loadConfig({ dir: projectRoot, profile: flags.profile, env: process.env }).config;
  // The records are in the project's document store, found as svc start finds it.
  setDataFallback(() => {
    const c = config();
    return { projectRoot, dataDir: dataPaths(projectRoot, c).dataDir, storage: c.storage as StorageConfig, docdbUri: c['scale.database'].docdb_uri, kvUrl: c['scale.database'].kv_url };
  });
  setSandboxFallback(() => {
    const c = config();
    return { settings: c['scale.sandbox'] as SandboxSettings, dataDir: dataPaths(projectRoot, c).dataDir, projectRoot };
  });
  const box = sandboxes();
  const out = (value: unknown, text: string) => process.stdout.write(flags.json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
  let code = 0;
  try {
    switch (action) {
      case 'list': {
        const all = await box.list(flags.user);
        out(
          all,
          all.length === 0
            ? 'no sandboxes'
            : all.map((s) => `${s.sandbox_id}  ${s.state.padEnd(8)}  ${s.user}/${s.project}  ${s.url || '-'}  created ${s.created_at}${s.error ? `  (${s.error})` : ''}`).join('\n'),
        );
        break;
      }
      case 'logs': {
        const sid = needId('logs', id);
        let offset = 0;
        for (;;) {
          const chunk = await box.logs(sid, offset);
          if (chunk.content) process.stdout.write(chunk.content);
          offset = chunk.offset;
          if (!flags.follow) break;
          if (chunk.content === '') {
            const now = await box.get(sid);
            if (!isActive(now.state)) break;
            await sleep(250);
          }
        }
        break;
      }
      case 'exec': {
        const sid = needId('exec', id);
        const command = (flags['--'] ?? []).join(' ');
        if (command === '') usage('exec needs a command after --');
        const abort = new AbortController();
        process.once('SIGINT', () => abort.abort(new Error('interrupted')));
        for await (const chunk of box.streamCommand(sid, command, { timeout: 24 * 3600, signal: abort.signal })) {
          if (chunk.type === 'stdout') process.stdout.write(chunk.data);
          else if (chunk.type === 'stderr') process.stderr.write(chunk.data);
          else if (chunk.type === 'exit') code = chunk.exit_code;
        }
        break;
      }
      case 'stop': {
        const info = await box.stop(needId('stop', id));
        out(info, `${info.sandbox_id} ${info.state}`);
        break;
      }
      case 'destroy': {
        const sid = needId('destroy', id);
        const { destroyed } = await box.destroy(sid);
        out({ sandbox_id: sid, destroyed }, `${sid} destroyed`);
        break;
      }
      case 'cleanup': {
        const report = await cleanupSandboxes(currentSandboxes());
        out(report, `removed ${report.removed.length} sandbox(es), ${report.orphans.length} orphan(s), ${report.folders.length} stray folder(s)`);
        break;
      }
      default:
        usage(action ? `unknown action ${JSON.stringify(action)}` : 'an action is needed');
    }
  } catch (error) {
    const e = error as Error & { code?: string };
    process.stderr.write(`svc: sandbox ${action}: ${typeof e.code === 'string' ? `${e.code}: ` : ''}${e.message}\n`);
    code = 1;
  }
  process.exit(code);
}
