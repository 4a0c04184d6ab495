/**
 * The build context of the app's image, staged in a folder of its own under
 * the system's temporary folder: the project's files, svc's run-time files,
 * the production dependencies (`deps: 'host'`) or what installs them
 * (`deps: 'build'`), the Dockerfile and a `.dockerignore`. Its tag is the
 * hash of all of it, so the same app, svc and dependencies give the same tag
 * on any machine, and a one-byte change gives another.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOCKERIGNORE, dockerfile } from './dockerfile.ts';
import { CONFIG_FILE, imageConfigFiles } from './config-files.ts';
import { ImageError } from './errors.ts';
import { copyFile, copyTree, hashTree, type Skip } from './files.ts';
import { appDependencies, posixRelative, prunedFile, readJson, runtimePackages } from './modules.ts';

/** The folder of the svc that is running (the one holding its package.json). */
export const SVC_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** svc's folders the runtime needs (the CLI, the product, the documents the tool server reads); with package.json `files`. */
const SVC_PARTS = ['index.ts', 'kernel', 'actors', 'stores', 'transports', 'cluster', 'runtime', 'client', 'mcp', 'cli', 'bin', 'deploy', 'docs', 'bench/harness', 'LICENSE'];
/** Never in the image from svc's folder: demo apps (the image serves the user's). */
const SVC_LEFT_OUT = new Set(['examples', 'test', 'bench', 'node_modules']);

/** Folders and files of a project that never go into the image, at any depth: installs, local data, history, secrets (npm tokens too). */
const PROJECT_LEFT_OUT = new Set(['node_modules', '.svc', '.git', '.env', '.npmrc']);
/** Left out at the project's top only: its build output and benchmark results (a `dist` deeper down may be the app's). */
const PROJECT_TOP_LEFT_OUT = new Set(['dist', 'bench-results']);
/** `.env.*` files hold secrets too; these templates do not. */
const ENV_TEMPLATES = new Set(['.env.example', '.env.sample', '.env.template']);

export interface ImageContextOptions {
  /** The app's entry file (absolute). */
  entry: string;
  /** The project's folder: the entry is in it, and it is /app in the image. */
  projectRoot: string;
  /** The runtime image (`[scale.orchestrator] base_image`, e.g. `node:20-bookworm-slim`). */
  baseImage: string;
  /** The build stage's image (`deps: 'build'`); default: `baseImage` without its `-slim` (npm and a toolchain). */
  buildImage?: string;
  /** The app's port in the container (`container_port`). */
  port: number;
  /** Where production dependencies are installed: in a build stage, or on this machine beforehand (then copied in). */
  deps: 'build' | 'host';
  /** npm packages added to the app's (`name` or `name@version`). */
  additionalPackages?: readonly string[];
  /** `--experimental`: svc cloned from this git repository (branch, or a commit when set) in the build stage, not copied from svcRoot. */
  svcRepo?: { url: string; branch: string; commit: string } | undefined;
  /** npm packages pinned: `name` → version, `latest`, or `none` to leave it out. */
  pluginVersions?: Readonly<Record<string, string | number>>;
  /** svc's folder (default: the svc that is running). */
  svcRoot?: string;
  /** Where the staging folder is made (default: the system's temporary folder). */
  tmpDir?: string;
  /** Progress lines. */
  log?: (line: string) => void;
}

export interface ImageContext {
  /** The staged build context (a fresh folder under `tmpDir`). */
  dir: string;
  /** The Dockerfile's text (also `Dockerfile` in `dir`). */
  dockerfile: string;
  /** The content-derived tag: the first 12 hex digits of the sha256 over every staged file's path and bytes. */
  tag: string;
  /** The entry as the image runs it, relative to /app. */
  entry: string;
  /** Remove the staging folder. */
  cleanup(): void;
}

/** The real path of what exists; the path itself otherwise (the checks that follow name it). */
function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** The build stage's image for a runtime image: `node:20-bookworm-slim` → `node:20-bookworm`. */
export function buildImageFor(baseImage: string): string {
  return baseImage.replace(/^([^@]*:[^@/]*?)-slim\b/, '$1');
}

/** What goes into the image, chosen from the sources (read, never written): the same for staging and for the tag. */
function sources(options: ImageContextOptions) {
  // Real paths: a project reached through a symbolic link is hashed and copied as the files it holds.
  const projectRoot = realpathOr(resolve(options.projectRoot));
  const entry = posixRelative(projectRoot, realpathOr(resolve(options.entry)));
  if (!isAbsolute(options.entry) || entry.startsWith('../') || entry === '..' || isAbsolute(entry) || entry === '') {
    throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `the entry ${options.entry} must be an absolute path of a file in the project ${projectRoot}`);
  }
  if (!existsSync(options.entry)) throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `the entry ${options.entry} does not exist`);
  if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535) throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `port ${options.port} is not a TCP port`);
  const svcRoot = resolve(options.svcRoot ?? SVC_ROOT);
  const svcPkg = readJson<{ name: string; files?: string[] }>(join(svcRoot, 'package.json'));
  // svc.toml and its profiles go in cleaned (config-files.ts), not as they are.
  const projectSkip: Skip = (name, rel) =>
    PROJECT_LEFT_OUT.has(name) || (name.startsWith('.env.') && !ENV_TEMPLATES.has(name)) || (rel === name && (CONFIG_FILE.test(name) || PROJECT_TOP_LEFT_OUT.has(name)));
  const segments = entry.split('/');
  if (segments.some((segment, i) => projectSkip(segment, segments.slice(0, i + 1).join('/'), i < segments.length - 1))) {
    throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `the entry ${entry} is in a folder the image leaves out (node_modules, .svc, .git, or dist and bench-results at the project's top): move it, or build it elsewhere`);
  }
  const svcSkip: Skip = (name, _rel, isDir) => (isDir && (name === 'node_modules' || name === '.svc' || name === '.git')) || name === '.env';
  const wanted = new Set([...SVC_PARTS, ...(svcPkg.files ?? []).filter((f) => !f.startsWith('!')).map((f) => f.replace(/\/+$/, ''))]);
  const parts = [...['package.json', 'package-lock.json', 'npm-shrinkwrap.json'], ...[...wanted].sort().filter((part) => !SVC_LEFT_OUT.has(part.split('/')[0] as string) || part === 'bench/harness')].filter((part) =>
    existsSync(join(svcRoot, part)),
  );
  const svcLockFile = ['npm-shrinkwrap.json', 'package-lock.json'].find((file) => existsSync(join(svcRoot, file)));
  // The app's own production dependencies.
  const app = appDependencies(projectRoot, svcPkg.name, options.additionalPackages ?? [], options.pluginVersions ?? {});
  const text = dockerfile({
    deps: options.deps,
    baseImage: options.baseImage,
    buildImage: options.buildImage ?? buildImageFor(options.baseImage),
    port: options.port,
    entry,
    svcLockFile,
    appDeps: app.empty ? 'none' : app.command,
    svcRepo: options.svcRepo,
  });
  if (options.svcRepo) parts.length = 0; // svc comes from the repository: none of this copy goes in
  const configFiles = imageConfigFiles(projectRoot);
  return { projectRoot, svcRoot, entry, parts, projectSkip, svcSkip, app, text, configFiles };
}

/**
 * The image's tag, derived from its content without staging anything: the first 12 hex digits of a sha256 over the
 * project's files (as the image takes them), svc's run-time files, the app's dependency manifest and the Dockerfile —
 * the same code gives the same tag on any machine, a one-byte change another. (Installed packages are not hashed:
 * they follow from the lockfiles, which are.)
 *
 * @example
 * contentTag({ entry: '/srv/app/app.ts', projectRoot: '/srv/app', baseImage: 'node:20-bookworm-slim', port: 8000, deps: 'build' }) // '3f9c2a7be410'
 */
export function contentTag(options: ImageContextOptions): string {
  const { projectRoot, svcRoot, parts, projectSkip, svcSkip, app, text, configFiles } = sources(options);
  const hash = createHash('sha256');
  hashTree(hash, projectRoot, 'app', projectSkip);
  for (const file of configFiles) hash.update(`config\0app/${file.name}\0${file.content}\0`);
  for (const part of parts) hashTree(hash, join(svcRoot, part), `svc/${part}`, svcSkip);
  hash.update(`deps\0${JSON.stringify(app.empty ? null : [app.packageJson, app.lockfile ?? null])}\0`);
  hash.update(`Dockerfile\0${text}\0.dockerignore\0${DOCKERIGNORE}`);
  return hash.digest('hex').slice(0, 12);
}

/**
 * Stage the build context of an app's image.
 *
 * @example
 * const context = imageContext({ entry: '/srv/app/app.ts', projectRoot: '/srv/app', baseImage: 'node:20-bookworm-slim', port: 8000, deps: 'build' });
 * try { await buildAndPush({ cli: ['docker'], context, ref: `registry.example.com/app:${context.tag}`, … }); } finally { context.cleanup(); }
 */
export function imageContext(options: ImageContextOptions): ImageContext {
  const log = options.log ?? (() => undefined);
  const { projectRoot, svcRoot, entry, parts, projectSkip, svcSkip, app, text, configFiles } = sources(options);
  const dir = mkdtempSync(join(options.tmpDir ?? tmpdir(), 'svc-image-'));
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    // The project: everything but installs, local data, history, build output and secrets.
    copyTree(projectRoot, join(dir, 'app'), projectSkip);
    for (const file of configFiles) writeFileSync(join(dir, 'app', file.name), file.content);
    // svc's run-time files.
    for (const part of parts) {
      const from = join(svcRoot, part);
      if (statSync(from).isDirectory()) copyTree(from, join(dir, 'svc', part), svcSkip);
      else copyFile(from, join(dir, 'svc', part));
    }
    if (!app.empty) {
      mkdirSync(join(dir, 'app-deps'));
      writeFileSync(join(dir, 'app-deps/package.json'), `${JSON.stringify(app.packageJson, null, 2)}\n`);
      if (app.lockfile !== undefined) writeFileSync(join(dir, 'app-deps/package-lock.json'), `${JSON.stringify(app.lockfile, null, 2)}\n`);
    }
    if (options.deps === 'host') {
      const started = Date.now();
      const packages = runtimePackages(svcRoot);
      for (const pkg of packages) {
        const gyp = existsSync(join(pkg.from, 'binding.gyp'));
        copyTree(pkg.from, join(dir, 'svc-modules', pkg.to), (name, rel, isDir) => (isDir && name === 'node_modules' && rel === name) || prunedFile(pkg.name, rel, isDir, gyp));
      }
      mkdirSync(join(dir, 'svc-modules'), { recursive: true });
      log(`svc's ${packages.length} production packages copied from ${svcRoot} in ${Date.now() - started} ms`);
      if (!app.empty) {
        log(`npm ${app.command} --omit=dev (the app's own dependencies)`);
        const npm = spawnSync('npm', [app.command, '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: join(dir, 'app-deps'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
        if (npm.status !== 0) {
          const tail = (npm.stderr || npm.error?.message || '').trim().split('\n').slice(-5).join(' / ');
          throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `npm ${app.command} of the app's dependencies failed: ${tail}`);
        }
      }
    }
    mkdirSync(join(dir, 'writable'));
    writeFileSync(join(dir, 'Dockerfile'), text);
    writeFileSync(join(dir, '.dockerignore'), DOCKERIGNORE);
    const tag = contentTag(options);
    log(`build context staged in ${dir}; tag ${tag}`);
    return { dir, dockerfile: text, tag, entry, cleanup };
  } catch (error) {
    cleanup();
    if (error instanceof ImageError) throw error;
    throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `the image's build context could not be staged: ${(error as Error).message}`, { cause: error });
  }
}
