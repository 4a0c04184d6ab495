/**
 * `svc scale status|destroy|rollback <entry>` (and the older `svc status`,
 * `svc destroy`): a deployed app's health, its removal, and a manual rollback.
 * Each reads the app's name and namespace from its configuration (the same as
 * `svc start <entry> --scale`) and the rest from the cluster of the kubeconfig.
 *
 * Exit codes: 0 done (status: every deployed component Running; `--watch`: when
 * interrupted), 1 a failure or a component not Running, 2 a usage or configuration error.
 */
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { ConfigError, loadConfig } from '../../runtime/index.ts';
import {
  ClusterError,
  connectCluster,
  DeployConfigError,
  deploySpec,
  destroyApply,
  destroyPlan,
  destroyText,
  reachCluster,
  readStatus,
  renderStatus,
  revisions,
  rollback,
  awaitRollout,
  statusChanged,
  statusJson,
  type DeploySpec,
} from '../../deploy/index.ts';
import { EntryError, resolveEntry } from '../entry.ts';

export interface ClusterFlags {
  profile?: string;
  target?: string;
  watch?: boolean;
  json?: boolean;
  yes?: boolean;
  keepData?: boolean;
  to?: number | string;
  /** --watch: ms between reads (tests). */
  interval?: number | string;
}

class UsageError extends Error {}

function specOf(entryArg: string | undefined, flags: ClusterFlags, usage: string): DeploySpec {
  const entry = resolveEntry(entryArg, usage);
  if (flags.target !== undefined && flags.target !== 'orchestrator' && flags.target !== 'kubernetes') {
    throw new UsageError(`--target ${JSON.stringify(flags.target)}: the one target is orchestrator (Kubernetes)`);
  }
  const { config, files, warnings } = loadConfig({ dir: dirname(entry), profile: flags.profile, env: process.env });
  // Credentials are not needed to read or delete: an unset ${VAR} in [scale.secrets] must not stop a destroy.
  return deploySpec({ config, files, warnings, env: process.env, image: '', experimental: false, profile: flags.profile, lenientSecrets: true }).spec;
}

async function run(action: () => Promise<number>): Promise<void> {
  try {
    const code = await action();
    process.exit(code);
  } catch (error) {
    if (error instanceof EntryError || error instanceof UsageError || error instanceof ConfigError || error instanceof DeployConfigError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`svc: ${error instanceof ClusterError ? error.message : (error as Error).message}\n`);
    process.exit(1);
  }
}

/**
 * `svc scale status <entry> [--watch] [--json]`.
 *
 * @example
 * await scaleStatus('app.ts', { json: true });
 */
export async function scaleStatus(entryArg: string | undefined, flags: ClusterFlags): Promise<void> {
  await run(async () => {
    const spec = specOf(entryArg, flags, 'svc scale status <entry.ts>');
    const kube = connectCluster(process.env);
    await reachCluster(kube);
    let report = await readStatus(kube, spec);
    const print = () => process.stdout.write(flags.json ? `${JSON.stringify(statusJson(report))}\n` : renderStatus(report));
    print();
    if (!flags.watch) return report.rows.every((r) => r.status === 'Running' || r.status === 'Not Deployed' && r.key !== 'app') ? 0 : 1;
    const interval = Number(flags.interval ?? 2000);
    let stop = false;
    process.once('SIGINT', () => (stop = true));
    while (!stop) {
      await new Promise((r) => setTimeout(r, interval));
      let next;
      try {
        next = await readStatus(kube, spec);
      } catch (error) {
        // One failed read (the API server restarting, a timeout) does not end the watch.
        process.stderr.write(`svc: status: ${(error as Error).message}; trying again\n`);
        continue;
      }
      if (statusChanged(report, next)) {
        report = next;
        if (!flags.json) process.stdout.write(`\n${new Date().toISOString()}\n`);
        print();
      }
    }
    return 0;
  });
}

/** One line from stdin, whether or not it is a terminal; end of input answers ''. */
function readLine(): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, terminal: false });
    let answered = false;
    rl.once('line', (line) => {
      answered = true;
      rl.close();
      resolve(line);
    });
    rl.once('close', () => {
      if (!answered) resolve('');
    });
  });
}

/**
 * `svc scale destroy <entry> [--yes] [--keep-data]`.
 *
 * @example
 * await scaleDestroy('app.ts', { yes: true });
 */
export async function scaleDestroy(entryArg: string | undefined, flags: ClusterFlags): Promise<void> {
  await run(async () => {
    const spec = specOf(entryArg, flags, 'svc scale destroy <entry.ts>');
    const kube = connectCluster(process.env);
    await reachCluster(kube);
    const plan = await destroyPlan(kube, spec, { keepData: flags.keepData === true });
    process.stdout.write(destroyText(plan));
    if (plan.items.length === 0 && !plan.deleteNamespace) return 0;
    if (!flags.yes) {
      process.stdout.write('Delete all of this? Type y to confirm: ');
      const answer = (await readLine()).trim().toLowerCase();
      if (answer !== 'y' && answer !== 'yes') {
        process.stdout.write('\nNot confirmed: nothing was deleted.\n');
        return 1;
      }
    }
    await destroyApply(kube, plan, { log: (line) => process.stderr.write(`svc: ${line}\n`) });
    process.stdout.write(`Destroyed: ${spec.app}${plan.deleteNamespace ? ` and namespace ${spec.namespace}` : ` (namespace ${spec.namespace} kept)`}\n`);
    return 0;
  });
}

/**
 * `svc scale rollback <entry> [--to N]`: the app's Deployment back to an earlier revision, waited for.
 *
 * @example
 * await scaleRollback('app.ts', { to: 2 });
 */
export async function scaleRollback(entryArg: string | undefined, flags: ClusterFlags): Promise<void> {
  await run(async () => {
    const spec = specOf(entryArg, flags, 'svc scale rollback <entry.ts>');
    let to: number | undefined;
    if (flags.to !== undefined) {
      to = Number(flags.to);
      if (!Number.isInteger(to) || to < 1) throw new UsageError(`--to ${JSON.stringify(flags.to)}: a revision number (svc scale rollback <entry> lists them)`);
    }
    const kube = connectCluster(process.env);
    await reachCluster(kube);
    const kept = await revisions(kube, spec.namespace, spec.app);
    if (kept.length === 0) throw new ClusterError('SVC_ERR_NOT_DEPLOYED', `${spec.app} is not deployed in namespace ${spec.namespace}`);
    process.stderr.write(`svc: revisions kept: ${kept.map((r) => `${r.revision}${r.current ? ' (current)' : ''} ${r.image}`).join('; ')}\n`);
    const { from, to: target } = await rollback(kube, spec.namespace, spec.app, to);
    if (from === target) {
      process.stdout.write(`Revision ${target} is already the current one: nothing to do.\n`);
      return 0;
    }
    const outcome = await awaitRollout(kube, spec.namespace, spec.app, { onProgress: (line) => process.stderr.write(`svc: ${line}\n`) });
    if (!outcome.ok) {
      process.stderr.write(`svc: the rollback to revision ${target} did not become healthy: ${outcome.failure?.reason}\n`);
      return 1;
    }
    process.stdout.write(`Rolled back: ${spec.app} from revision ${from} to revision ${target} (now revision ${outcome.revision})\n`);
    return 0;
  });
}
