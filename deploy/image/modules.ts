/**
 * Production dependencies for the image.
 *
 * - svc's own, taken from the install svc runs from (`deps: 'host'`): the
 *   packages its `dependencies` (and the optional and peer ones that are
 *   installed) reach, found as Node finds them, each copied without its
 *   development dependencies or anything else of `node_modules` — in the
 *   layout they have here, so every package resolves the same versions in the
 *   image. Native addons built on this machine come along (better-sqlite3
 *   builds from source in about a minute where no prebuilt binary downloads):
 *   the image's Node must be this machine's major version, on the same libc.
 *   What only a build needs (object files, C sources, other platforms'
 *   binaries) is left out.
 * - the app's own: its `package.json` dependencies without svc (svc is copied
 *   beside them), `additional_packages` added, `plugin_versions` pinned (or
 *   left out with `none`), and its lockfile with svc's entries removed, so
 *   `npm ci` installs exactly what the app locked.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { ImageError } from './errors.ts';

interface PackageJson {
  name?: string;
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  [key: string]: unknown;
}

export function readJson<T = PackageJson>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** The folder of package `name` as Node resolves it from `from` (a package's folder), or undefined. */
function resolvePackage(name: string, from: string): string | undefined {
  for (let at = from; ; at = dirname(at)) {
    if (basename(at) !== 'node_modules') {
      const candidate = join(at, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) return candidate;
    }
    if (dirname(at) === at) return undefined;
  }
}

/**
 * Where a package found from svc's folder goes under the staged `node_modules`: its path under svc's own
 * `node_modules`, or — svc installed in a project, its packages hoisted beside it — under the nearest `node_modules`
 * above svc that holds it (nesting kept: `foo/node_modules/bar`).
 */
function stagedPath(root: string, found: string): string {
  for (let at = root; ; at = dirname(at)) {
    const modules = join(at, 'node_modules') + sep;
    if (basename(at) !== 'node_modules' && found.startsWith(modules)) return found.slice(modules.length).split(sep).join('/');
    if (dirname(at) === at) return basename(found);
  }
}

/** A package to stage: its folder here, and its path under the staged `node_modules`. */
export interface StagedPackage {
  from: string;
  to: string;
  name: string;
}

/**
 * The packages svc needs at run time, from the install at `root` (svc's folder): what `dependencies` reach, with the
 * `optionalDependencies` and `peerDependencies` that are installed. A required dependency that is missing, or two
 * versions of one package that would land on one path, is an error (use `deps: 'build'` then).
 *
 * @example
 * runtimePackages('/home/me/svc').find((p) => p.name === 'better-sqlite3') // { from: '/home/me/svc/node_modules/better-sqlite3', to: 'better-sqlite3', … }
 */
export function runtimePackages(root: string): StagedPackage[] {
  const out = new Map<string, StagedPackage>();
  const seen = new Map<string, string>();
  const queue: string[] = [root];
  while (queue.length > 0) {
    const dir = queue.shift() as string;
    const pkg = readJson(join(dir, 'package.json'));
    // Optional dependencies may be listed in `dependencies` too; those of other platforms are not installed.
    const optional = new Set([...Object.keys(pkg.optionalDependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);
    const wanted = new Set([...Object.keys(pkg.dependencies ?? {}), ...optional]);
    for (const name of wanted) {
      // Type declarations only (a library may list @types/node as a dependency): nothing of them runs.
      if (name.startsWith('@types/')) continue;
      const found = resolvePackage(name, dir);
      if (found === undefined) {
        if (optional.has(name)) continue;
        throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `${name} (a dependency of ${pkg.name ?? dir}) is not installed where svc runs from (${root}): run npm install there, or build with deps = 'build'`);
      }
      const real = realpathSync(found);
      if (seen.has(real)) continue;
      const to = stagedPath(root, found);
      const taken = out.get(to);
      if (taken !== undefined && realpathSync(taken.from) !== real) {
        throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `two versions of ${name} would both be node_modules/${to} in the image (${taken.from} and ${found}): build with deps = 'build'`);
      }
      seen.set(real, to);
      out.set(to, { from: found, to, name });
      queue.push(found);
    }
  }
  return [...out.values()].sort((a, b) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
}

/**
 * Whether a file or folder of package `name` (its path relative to the package's folder; `gyp`: the package builds a
 * native addon with node-gyp) is left out of the image: what only building the addon needs, and binaries of other platforms and Node versions.
 *
 * @example
 * prunedFile('better-sqlite3', 'deps', true, true) // true: SQLite's C sources
 * prunedFile('better-sqlite3', 'build/Release/better_sqlite3.node', false, true) // false
 */
export function prunedFile(name: string, rel: string, isDir: boolean, gyp: boolean, binary = `${process.platform}_${process.arch}_${process.versions.modules}.node`): boolean {
  // node-gyp's build folder (a package with a binding.gyp): only the addons themselves are loaded (build/Release/*.node).
  if (gyp && rel.startsWith('build/') && rel !== 'build/Release' && !(!isDir && /^build\/Release\/[^/]+\.node$/.test(rel))) return true;
  if (name === 'better-sqlite3' && (rel === 'deps' || rel === 'src' || rel === 'build/Release/test_extension.node')) return true;
  // uWebSockets.js ships every platform's binary for three Node versions (~115 MB); it loads binaries/uws_<platform>_<arch>_<abi>.node.
  if (name === 'uWebSockets.js' && !isDir && rel.endsWith('.node') && basename(rel) !== `uws_${binary}`) return true;
  return false;
}

/** The app's production dependencies for the image, and how npm installs them. */
export interface AppDependencies {
  /** The `package.json` npm installs from (the app's own, svc and `scripts` taken out, the dependencies as the image has them). */
  packageJson: PackageJson;
  /** The app's lockfile without svc's entries; undefined when the app has none. */
  lockfile: Record<string, unknown> | undefined;
  /** `npm ci` (lockfile present, the dependencies as locked) or `npm install` (no lockfile, or packages added or pinned). */
  command: 'ci' | 'install';
  /** Whether there is anything to install. */
  empty: boolean;
}

/** `name` and `version` of `name@version` (`@scope/name@1.2.3`; no version: `latest`). */
export function splitSpec(spec: string): [string, string] {
  const at = spec.indexOf('@', spec.startsWith('@') ? 1 : 0);
  return at === -1 ? [spec, 'latest'] : [spec.slice(0, at), spec.slice(at + 1) || 'latest'];
}

const PACKAGE_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;
const VERSION = /^[A-Za-z0-9.^~<>=|*+ -]+$/;

/**
 * The app's production dependencies: `dependencies` of its package.json without svc, plus `additional` (`name` or
 * `name@version`), with `pins` (`name` → version, or `none` to leave it out) applied.
 *
 * @example
 * appDependencies('/srv/app', 'svc', ['dayjs@1.11.13'], { lodash: 'none' }).packageJson.dependencies // { dayjs: '1.11.13', … }
 */
export function appDependencies(projectRoot: string, svcName: string, additional: readonly string[], pins: Readonly<Record<string, string | number>>): AppDependencies {
  const file = join(projectRoot, 'package.json');
  const app: PackageJson = existsSync(file) ? readJson(file) : { name: 'svc-app', version: '0.0.0', private: true };
  const packageJson: PackageJson = { ...app };
  delete packageJson.scripts;
  for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const) {
    const deps = app[field];
    if (deps === undefined) continue;
    const { [svcName]: _svc, ...rest } = deps;
    packageJson[field] = rest;
  }
  const dependencies: Record<string, string> = { ...(packageJson.dependencies ?? {}) };
  let changed = false;
  const check = (name: string, version: string, from: string): void => {
    if (!PACKAGE_NAME.test(name)) throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `${from}: "${name}" is not an npm package name`);
    if (!VERSION.test(version)) throw new ImageError('SVC_ERR_IMAGE_CONTEXT', `${from}: "${version}" is not a version of ${name}`);
  };
  for (const spec of additional) {
    const [name, version] = splitSpec(spec.trim());
    check(name, version, 'additional_packages');
    if (name === svcName) continue;
    if (dependencies[name] !== version) changed = true;
    dependencies[name] = version;
  }
  for (const [name, value] of Object.entries(pins)) {
    const version = String(value);
    if (name === svcName) continue;
    if (version === 'none') {
      if (name in dependencies) changed = true;
      delete dependencies[name];
      continue;
    }
    check(name, version, 'plugin_versions');
    if (dependencies[name] !== version) changed = true;
    dependencies[name] = version;
  }
  packageJson.dependencies = dependencies;
  const lockFile = ['npm-shrinkwrap.json', 'package-lock.json'].map((n) => join(projectRoot, n)).find((f) => existsSync(f));
  const lockfile = lockFile === undefined ? undefined : withoutPackage(readJson<Record<string, unknown>>(lockFile), svcName);
  const empty = Object.keys(dependencies).length === 0 && Object.keys(packageJson.optionalDependencies ?? {}).length === 0;
  return { packageJson, lockfile, command: lockfile !== undefined && !changed ? 'ci' : 'install', empty };
}

type LockEntry = { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; peerDependencies?: Record<string, string>; link?: boolean; resolved?: string; dev?: boolean };

/**
 * A lockfile (version 2 or 3) without package `name`: its root entry no longer names it, and the entries only it
 * reached — its own, a linked folder's, its hoisted dependencies — are gone.
 *
 * @example
 * withoutPackage(lock, 'svc').packages['node_modules/svc'] // undefined
 */
export function withoutPackage(lock: Record<string, unknown>, name: string): Record<string, unknown> {
  const packages = { ...((lock.packages ?? {}) as Record<string, LockEntry>) };
  const root = { ...(packages[''] ?? {}) } as LockEntry & Record<string, unknown>;
  for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const) {
    const deps = root[field] as Record<string, string> | undefined;
    if (deps === undefined) continue;
    const { [name]: _gone, ...rest } = deps;
    root[field] = rest;
  }
  packages[''] = root;
  // Keep what the root still reaches, resolving as Node does through the lockfile's paths.
  const reached = new Set<string>(['']);
  const queue = [''];
  const resolve = (dep: string, from: string): string | undefined => {
    const entry = packages[from];
    if (entry?.link && entry.resolved !== undefined) from = entry.resolved;
    for (let at = from; ; ) {
      const candidate = at === '' ? `node_modules/${dep}` : `${at}/node_modules/${dep}`;
      if (candidate in packages) return candidate;
      if (at === '') return undefined;
      const up = at.lastIndexOf('/node_modules/');
      at = up === -1 ? '' : at.slice(0, up);
    }
  };
  while (queue.length > 0) {
    const at = queue.shift() as string;
    const entry = packages[at] as LockEntry & { devDependencies?: Record<string, string> };
    const deps = { ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies, ...(at === '' ? entry.devDependencies : {}) };
    const targets = Object.keys(deps).map((dep) => resolve(dep, at));
    if (entry.link && entry.resolved !== undefined && entry.resolved in packages) targets.push(entry.resolved);
    for (const target of targets) {
      if (target === undefined || reached.has(target)) continue;
      reached.add(target);
      queue.push(target);
    }
  }
  const kept = Object.fromEntries(Object.entries(packages).filter(([path]) => reached.has(path)));
  const out: Record<string, unknown> = { ...lock, packages: kept };
  // Version 1's tree (and version 2's copy of it): rebuilt by npm from `packages`.
  delete out.dependencies;
  return out;
}

/** `to` relative to `from`, `/`-separated (for a Dockerfile or a message). */
export function posixRelative(from: string, to: string): string {
  return relative(from, to).split(sep).join('/');
}
