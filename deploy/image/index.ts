/**
 * The app's container image (`svc start --scale --build`).
 *
 * - {@link imageContext} stages the build context: the project (never its
 *   `node_modules`, `.svc`, `.git`, `dist`, `bench-results` or `.env`), svc's
 *   run-time files, the production dependencies and a generated multi-stage
 *   Dockerfile; its tag is derived from that content (never `latest`).
 *   The image runs `node …/svc/bin/svc.mjs start <entry> --host 0.0.0.0 --port <port>`
 *   as PID 1, as user 1000, in /app; SIGTERM drains it and it exits 0. With a
 *   read-only root file system it needs writable mounts at /tmp, /app/.svc and
 *   /app/node_modules/.cache.
 * - {@link buildAndPush} builds it and pushes it with a docker-compatible
 *   command ({@link chooseContainerCli}: docker, podman, or a wrapper).
 * - {@link registryCredentials}: the registry login, from the environment or
 *   the project's `.env` — `SVC_REGISTRY_USERNAME` and `SVC_REGISTRY_PASSWORD`
 *   (also read: `DOCKER_USERNAME`, `DOCKER_PASSWORD`); the environment wins.
 *   The password goes to the command's stdin only.
 *
 * @example
 * import { buildAndPush, chooseContainerCli, imageContext, registryCredentials } from './image/index.ts';
 * const context = imageContext({ entry: '/srv/app/app.ts', projectRoot: '/srv/app', baseImage: 'node:20-bookworm-slim', port: 8000, deps: 'build' });
 * try {
 *   const ref = `registry.example.com/myapp:${context.tag}`;
 *   await buildAndPush({ cli: await chooseContainerCli(''), context, ref, registry: 'registry.example.com', credentials: registryCredentials('/srv/app'), push: true, log: console.log });
 * } finally {
 *   context.cleanup();
 * }
 */
export { buildImageFor, contentTag, imageContext, SVC_ROOT } from './context.ts';
export type { ImageContext, ImageContextOptions } from './context.ts';
export { APP_USER, dockerfile, DOCKERIGNORE } from './dockerfile.ts';
export type { DockerfilePlan } from './dockerfile.ts';
export { buildAndPush, chooseContainerCli, requireCredentials, runCommand } from './build.ts';
export type { BuildAndPushOptions, Runner, RunResult } from './build.ts';
export { parseDotEnv, registryCredentials, REGISTRY_PASSWORD_VARIABLES, REGISTRY_USERNAME_VARIABLES } from './credentials.ts';
export type { RegistryCredentials } from './credentials.ts';
export { IMAGE_ERRORS, ImageError } from './errors.ts';
export type { ImageErrorCode } from './errors.ts';
export { CONFIG_FILE, imageConfigFiles } from './config-files.ts';
export type { ImageConfigFile } from './config-files.ts';
