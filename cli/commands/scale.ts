/**
 * `svc start <entry> --scale`: deploy the app to Kubernetes. `--dry-run` prints
 * the plan (`--show-yaml`: the manifests) and contacts nothing; `--build` builds
 * and pushes the image first; otherwise the plan is applied to the cluster of the
 * kubeconfig, the rollout followed to its end (a failed one rolled back), the app
 * probed through the ingress, and `Deployment complete: <url>` printed.
 * `--enable-tls` then binds the ingress to `domain` with a certificate.
 *
 * Exit codes: 0 deployed (or a plan, or a built image), 2 a configuration the
 * deploy refuses (every problem listed, before anything is contacted), 1 a
 * failure on the way (the cluster, the apply, the rollout, the image build).
 */
import { dirname } from 'node:path';
import { ConfigError, loadConfig } from '../../runtime/index.ts';
import {
  appImage,
  buildManifests,
  ClusterError,
  connectCluster,
  deploySpec,
  deployToCluster,
  DeployConfigError,
  ImageError,
  ManifestError,
  planText,
  renderYaml,
  tlsConfigProblems,
  validateManifests,
} from '../../deploy/index.ts';
import { EntryError, resolveEntry } from '../entry.ts';

export interface ScaleFlags {
  profile?: string;
  dryRun?: boolean;
  showYaml?: boolean;
  showSecrets?: boolean;
  build?: boolean;
  target?: string;
  experimental?: boolean;
  /** `--no-push`: build the image here only. */
  push?: boolean;
  /** `--enable-tls`: HTTPS for `domain` through cert-manager. */
  enableTls?: boolean;
}

/** A usage or configuration error: the message, exit 2. */
class UsageError extends Error {}

export async function scale(entryArg: string | undefined, flags: ScaleFlags): Promise<void> {
  const started = performance.now();
  try {
    const entry = resolveEntry(entryArg, 'svc start <entry.ts> --scale');
    const projectRoot = dirname(entry);
    if (flags.target !== undefined && flags.target !== 'orchestrator' && flags.target !== 'kubernetes') {
      throw new UsageError(`--target ${JSON.stringify(flags.target)}: the one target is orchestrator (Kubernetes)`);
    }
    if ((flags.showYaml || flags.showSecrets) && !flags.dryRun) throw new UsageError('--show-yaml and --show-secrets go with --dry-run');
    if (flags.showSecrets && !flags.showYaml) throw new UsageError('--show-secrets shows the Secrets of --show-yaml: give both');
    if (flags.push === false && !flags.build) throw new UsageError('--no-push goes with --build');
    if (flags.enableTls && flags.dryRun) process.stderr.write('svc: warning: --dry-run ignores --enable-tls (issuing a certificate changes the cluster)\n');
    const { config, files, warnings } = loadConfig({ dir: projectRoot, profile: flags.profile, env: process.env });
    for (const w of warnings) if (!/unknown key scale\.(orchestrator|monitoring|database)\./.test(w)) process.stderr.write(`svc: warning: ${w}\n`);
    const experimental = flags.experimental === true;
    const { spec, warnings: notes } = deploySpec({ config, files, warnings, env: process.env, image: '', experimental, profile: flags.profile });
    const image = appImage({ entry, projectRoot, config, build: flags.build === true, env: process.env, experimental, push: flags.push !== false });
    spec.images.app = image.ref;
    const objects = buildManifests(spec);
    const problems = validateManifests(objects);
    if (problems.length > 0) throw new ManifestError(problems);
    if (flags.dryRun) {
      const plan = planText({ spec, objects, warnings: [...image.warnings, ...notes], imageNote: flags.build ? `${image.note} — not in a dry run` : image.note });
      if (flags.showYaml) {
        // The YAML alone on stdout (`… --show-yaml | kubectl apply -f -`); the plan beside it on stderr.
        process.stderr.write(plan);
        process.stdout.write(renderYaml(objects, { showSecrets: flags.showSecrets === true }));
      } else {
        process.stdout.write(plan);
      }
      process.stderr.write(`svc: planned in ${Math.round(performance.now() - started)} ms\n`);
      return;
    }
    if (flags.enableTls && !(flags.build && flags.push === false)) {
      const problems = tlsConfigProblems(spec);
      if (problems.length > 0) throw new UsageError(problems.join('\n'));
    }
    // The registry's credentials, then the cluster's configuration: no image is built for a deploy that cannot happen.
    if (flags.build) image.check();
    const kube = flags.build && flags.push === false ? undefined : connectCluster(process.env);
    if (flags.build) {
      await image.build((line: string) => process.stderr.write(`svc: ${line}\n`));
      process.stdout.write(`${flags.push === false ? 'Image built' : 'Image pushed'}: ${spec.images.app}\n`);
      if (flags.push === false) {
        process.stdout.write(`Run it here as a pod would: ${runHint(spec.images.app, spec.port)}\n`);
        return;
      }
    }
    for (const w of [...image.warnings, ...notes]) process.stderr.write(`svc: warning: ${w}\n`);
    process.stderr.write(`svc: deploying ${spec.app} to ${kube!.server} (namespace ${spec.namespace}); image ${spec.images.app} (${image.note})\n`);
    const result = await deployToCluster(kube!, spec, { log: (line) => process.stderr.write(`svc: ${line}\n`), enableTls: flags.enableTls === true });
    process.stderr.write(`svc: deployed in ${((performance.now() - started) / 1000).toFixed(1)} s (apply ${result.timings.apply} ms, rollout ${result.timings.rollout} ms)\n`);
    process.stdout.write(`Deployment complete: ${result.url}\n`);
  } catch (error) {
    if (error instanceof ClusterError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(1);
    }
    // A bad entry or package setting found while deciding the image's content is a configuration error too.
    if (error instanceof ImageError && error.code === 'SVC_ERR_IMAGE_CONTEXT' && flags.dryRun) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof EntryError || error instanceof UsageError || error instanceof ConfigError || error instanceof DeployConfigError || error instanceof ManifestError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`svc: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** The command that runs a built image on this machine as the pod runs it (read-only root, writable scratch). */
function runHint(ref: string, port: number): string {
  return `docker run --rm -p 127.0.0.1:${port}:${port} --read-only --tmpfs /tmp --tmpfs /app/.svc --tmpfs /app/node_modules/.cache -e JWT_SECRET=$(openssl rand -hex 32) ${ref}   (or podman run …)`;
}
