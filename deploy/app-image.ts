/**
 * The image a deployment runs: `[scale.orchestrator] image` when set (and no
 * `--build`), else `{registry}/{app}:{tag}` with the tag derived from the
 * content (deploy/image: the same code gives the same tag), which `--build`
 * builds and pushes. Deciding it reads files and runs nothing; building it
 * runs the container command.
 */
import type { SvcConfig } from '../runtime/index.ts';
import { buildAndPush, chooseContainerCli, contentTag, imageConfigFiles, imageContext, ImageError, registryCredentials, requireCredentials, type ImageContextOptions } from './image/index.ts';

export interface AppImage {
  /** The reference the Deployment names. */
  ref: string;
  /** How it comes to be, for the plan. */
  note: string;
  warnings: string[];
  /** Build and push it (`--build`): stage, login (password on stdin), build, push, clean up. */
  build(log: (line: string) => void): Promise<void>;
  /** What `build` needs and can be checked without running anything (the registry and its credentials); throws ImageError. */
  check(): void;
}

/**
 * @example
 * const image = appImage({ entry, projectRoot, config, build: true, env: process.env });
 * await image.build((line) => process.stderr.write(`${line}\n`));
 */
export function appImage(options: { entry: string; projectRoot: string; config: SvcConfig; build: boolean; env: NodeJS.ProcessEnv; experimental?: boolean; push?: boolean }): AppImage {
  const push = options.push !== false;
  const o = options.config['scale.orchestrator'];
  const warnings: string[] = [];
  const credentials = registryCredentials(options.projectRoot, options.env);
  const context: ImageContextOptions = {
    entry: options.entry,
    projectRoot: options.projectRoot,
    baseImage: o.python_image !== '' ? o.python_image : o.base_image,
    port: o.container_port,
    deps: o.image_deps as 'build' | 'host',
    additionalPackages: o.additional_packages,
    pluginVersions: o.plugin_versions,
    svcRepo: options.experimental && o.svc_repo_url !== '' ? { url: o.svc_repo_url, branch: o.svc_branch, commit: o.svc_commit } : undefined,
  };
  // Credentials never go into an image; those the deployment does not carry in its own Secrets must come through [scale.secrets].
  const carried = /^\[(scale\.jwt\] secret|scale\.metrics\] scrape_token|scale\.database\] (docdb_uri|kv_url)|scale\.admin\] default_password)/;
  for (const file of imageConfigFiles(options.projectRoot)) {
    for (const key of file.removed.filter((r) => !carried.test(r))) warnings.push(`${file.name}: ${key} is a credential: it is left out of the image`);
  }
  if (o.image !== '' && !options.build) {
    return { ref: o.image, note: 'configured: [scale.orchestrator] image', warnings, build: async () => undefined, check: () => undefined };
  }
  const registry = o.registry.replace(/\/+$/, '');
  const ref = `${registry === '' ? '' : `${registry}/`}${o.app_name}:${contentTag(context)}`;
  if (o.image !== '') warnings.push(`--build: the image built (${ref}) is deployed instead of [scale.orchestrator] image (${o.image})`);
  if (registry === '' && push) warnings.push('no registry: the image is named without one (for a local cluster that loads images itself); set [scale.orchestrator] registry (SVC_SCALE_REGISTRY) for the registry the cluster pulls from');
  return {
    ref,
    note: options.build ? (push ? 'built and pushed by --build' : 'built here by --build --no-push, not pushed') : 'the image --build makes of this code: without --build the registry must already hold it',
    warnings,
    check: () => {
      if (push) requireCredentials(ref, credentials);
      if (push && registry === '') throw new ImageError('SVC_ERR_IMAGE_LOGIN', 'no registry to push to: set [scale.orchestrator] registry (SVC_SCALE_REGISTRY)');
    },
    build: async (log) => {
      // Credentials first: without them nothing is staged or run (not even `docker info`).
      if (push) requireCredentials(ref, credentials);
      if (push && registry === '') throw new ImageError('SVC_ERR_IMAGE_LOGIN', 'no registry to push to: set [scale.orchestrator] registry (SVC_SCALE_REGISTRY)');
      const cli = await chooseContainerCli(o.container_cli);
      const staged = imageContext({ ...context, log });
      try {
        await buildAndPush({ cli, context: staged, ref, registry: registry.split('/')[0] as string, credentials: push ? credentials : undefined, push, log });
      } finally {
        staged.cleanup();
      }
    },
  };
}
