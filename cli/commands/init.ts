/**
 * `svc init [dir]`: a new project that runs as written — `package.json`
 * (scripts `start`, `dev`, `typecheck` and `test`, a dependency on this svc),
 * `app.ts` (a node type and two walkers), `test/app.test.ts` (the walkers
 * through `svc/testing`), a commented `svc.toml`, a `tsconfig.json` for editor
 * types and a `.gitignore`. The folder is a new one, or an empty one (a lone `.git`
 * counts as empty): a folder that holds anything else is somebody's — a
 * project's `src/`, an installed package — and one that holds files of the
 * scaffold would lose them. Both are refused unless `--force` (which writes
 * the files into it, replacing those of the same names).
 *
 * svc is not on a package registry under its own name (an unrelated package
 * has it), so the dependency names where this svc comes from: the checkout
 * (`file:<path>`), or — when this svc is itself installed — the spec the
 * installing project used, rebased to the new folder.
 *
 * Decisions:
 * - The app's `tsc` reads svc's declarations (`dist/types`, built by svc's
 *   `prepare`; package.json `exports` name them under `types`), not svc's
 *   sources: the devDependencies are TypeScript, Node's types and tsx, no
 *   `@types/*` of svc's own dependencies (with `skipLibCheck`, a package
 *   without types is `any` inside the declarations, and none reaches the API).
 * - `allowScripts` (npm 11) repeats svc's own choices for the packages with
 *   install scripts that come with svc (esbuild's download of a binary: no,
 *   it is in the optional dependencies; better-sqlite3's build: yes), so
 *   `npm install` has nothing to warn about. svc installed from a folder
 *   (`file:` a checkout) is a link, whose `prepare` npm runs on each install
 *   (an entry `false` does not stop it): it is listed, allowed — it brings
 *   the checkout's declarations up to date, at once when they are.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This package's root folder (the one holding its package.json). */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  allowScripts?: Record<string, boolean>;
}

class InitError extends Error {}

/**
 * A valid npm package name from a folder name: lower case, URL-safe
 * characters, no leading dot or underscore. Never `svc` itself (npm refuses
 * to install a package under a package of the same name).
 *
 * @example
 * packageName('My App!') // 'my-app'
 */
export function packageName(folder: string, self = 'svc'): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._~-]+/g, '-')
    .replace(/^[._~-]+|[._~-]+$/g, '')
    .slice(0, 214);
  if (name === '' || name === 'node_modules' || name === 'favicon.ico') return 'svc-app';
  return name === self ? `${self}-app` : name;
}

/**
 * The dependency spec on this svc for a project in `target`: `file:` and the
 * path of the checkout when svc runs from one; when svc is installed in a
 * project's `node_modules`, that project's own spec (a `file:` path rebased to
 * `target`, a tarball or an `npm:` alias), else the version.
 *
 * @example
 * dependencySpec('/home/me/myapp', '/home/me/svc', '0.1.0') // 'file:../svc'
 * dependencySpec('/tmp/myapp', '/home/me/svc', '0.1.0') // 'file:/home/me/svc'
 */
export function dependencySpec(target: string, root = PACKAGE_ROOT, version = readPackage(root).version): string {
  const parts = root.split(sep);
  const at = parts.lastIndexOf('node_modules');
  if (at === -1) return fileSpec(target, root);
  const project = parts.slice(0, at).join(sep) || sep;
  let spec: string | undefined;
  try {
    const pkg = readPackage(project);
    const name = readPackage(root).name;
    spec = pkg.dependencies?.[name] ?? pkg.devDependencies?.[name];
  } catch {
    // no readable package.json above node_modules: fall back to the version
  }
  if (spec?.startsWith('file:')) {
    const path = spec.slice('file:'.length);
    return fileSpec(target, isAbsolute(path) ? path : resolve(project, path));
  }
  if (spec !== undefined && !/^[\^~]?\d/.test(spec)) return spec;
  return version;
}

function readPackage(dir: string): PackageJson {
  return JSON.parse(readFileSync(resolve(dir, 'package.json'), 'utf8')) as PackageJson;
}

function toPosix(path: string): string {
  return path.split(sep).join('/');
}

/** `file:` and `path` as seen from `target`: relative when they share a folder below the file-system root, else absolute. */
function fileSpec(target: string, path: string): string {
  const rel = relative(target, path);
  const ups = rel.split(sep).filter((part) => part === '..').length;
  const depth = target.split(sep).filter(Boolean).length;
  return `file:${rel === '' ? '.' : ups >= depth || isAbsolute(rel) ? toPosix(path) : toPosix(rel)}`;
}

/**
 * The development dependencies of a new project, at the versions this svc is
 * type-checked with: TypeScript and Node's types (the app's `tsc` reads svc's
 * declarations, whose own imports need no `@types/*` under `skipLibCheck`),
 * and tsx, to run TypeScript that imports svc outside `svc start` (the tests
 * with `svc/testing`, scripts with `svc/client`).
 */
function typesFor(self: PackageJson): Record<string, string> {
  const dev = self.devDependencies ?? {};
  return { '@types/node': dev['@types/node'] ?? '20', typescript: dev.typescript ?? self.dependencies?.typescript ?? '5', tsx: self.dependencies?.tsx ?? '4' };
}

/**
 * The app's `allowScripts`: svc's own choices for the packages with install
 * scripts that come with it, and svc itself when it is a folder (a link).
 *
 * @example
 * allowScriptsFor({ name: 'svc', version: '0.1.0', allowScripts: { esbuild: false } }, 'file:../svc') // { esbuild: false, 'file:../svc': true }
 */
export function allowScriptsFor(self: PackageJson, spec: string): Record<string, boolean> {
  const allow: Record<string, boolean> = { ...self.allowScripts };
  if (spec.startsWith('file:') && !/\.(tgz|tar\.gz|tar)$/.test(spec)) allow[spec] = true;
  return allow;
}

/** The files of a new project named `name`, depending on svc through `spec`. */
export function scaffold(name: string, spec: string, self: PackageJson = readPackage(PACKAGE_ROOT)): Record<string, string> {
  const pkg = {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      start: 'svc start app.ts',
      dev: 'svc start app.ts --dev',
      typecheck: 'tsc -p .',
      test: 'node --import tsx --test test/*.test.ts',
    },
    engines: { node: '>=20.6' },
    dependencies: { [self.name]: spec },
    devDependencies: Object.fromEntries(Object.entries(typesFor(self)).sort(([a], [b]) => a.localeCompare(b))),
    allowScripts: allowScriptsFor(self, spec),
  };
  const tsconfig = {
    compilerOptions: {
      // svc's decorators (@entry, @exit) are standard (TC39) decorators: no experimentalDecorators.
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2023'],
      types: ['node'],
      strict: true,
      allowImportingTsExtensions: true,
      verbatimModuleSyntax: true,
      isolatedModules: true,
      skipLibCheck: true,
      noEmit: true,
    },
    exclude: ['node_modules', '.svc'],
  };
  return {
    'package.json': `${JSON.stringify(pkg, null, 2)}\n`,
    'app.ts': APP,
    'test/app.test.ts': APP_TEST,
    'svc.toml': TOML,
    'tsconfig.json': `${JSON.stringify(tsconfig, null, 2)}\n`,
    '.gitignore': 'node_modules/\n.svc/\n',
  };
}

const APP = `// A first svc app. \`npm run dev\` serves it and reloads it on every save:
//
//   curl -s -X POST localhost:8000/walker/AddNote -d '{"text":"hello"}'
//   curl -s -X POST localhost:8000/walker/ListNotes
//
// Every exported walker and function is an endpoint: open http://localhost:8000/docs.
import { entry, Node, Root, T, Walker } from 'svc';

/** A node type: its fields are a TypeBox schema; nodes reachable from a root persist. */
export class Note extends Node {
  static has = T.Object({ text: T.String({ minLength: 1 }) });
  declare text: string;
}

/**
 * POST /walker/AddNote {"text": "…"}: connects a new note to the caller's root.
 * Public: without a token it runs on the shared guest graph, with one on the user's own.
 */
export class AddNote extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ text: T.String({ minLength: 1 }) });
  declare text: string;

  @entry(Root) async add(here: Root) {
    this.report(await here.connect(new Note({ text: this.text })));
  }
}

/** POST /walker/ListNotes: visits every note of the root and reports it. Drop \`access\` to require a token. */
export class ListNotes extends Walker {
  static access = 'pub' as const;

  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Note));
  }

  @entry(Note) each(here: Note) {
    this.report(here);
  }
}
`;

const APP_TEST = `// \`npm test\` (node --import tsx --test): the app runs in the test's process, and requests reach it without a socket.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { testApp, type TestApp } from 'svc/testing';

let app: TestApp;
before(async () => {
  app = await testApp({ entry: new URL('../app.ts', import.meta.url).pathname });
});
after(() => app.close());

test('AddNote connects a note to the root, ListNotes reports it', async () => {
  const added = await app.inject({ method: 'POST', url: '/walker/AddNote', body: { text: 'hello' } });
  assert.equal(added.status, 200);
  const listed = await app.inject({ method: 'POST', url: '/walker/ListNotes' });
  assert.deepEqual(listed.json().data.reports.map((note: { context: { text: string } }) => note.context.text), ['hello']);
});

test('a note needs a text', async () => {
  const res = await app.inject({ method: 'POST', url: '/walker/AddNote', body: { text: '' } });
  assert.equal(res.status, 400);
});
`;

const TOML = `# svc.toml: settings of \`svc start\`, read from beside the entry file.
# Every key is optional; the values shown are the defaults. Environment
# variables (named after each key) override this file, and flags override both.

[scale.server]
# port = 8000                  # SVC_PORT; the next free one when taken
# host = "0.0.0.0"             # SVC_HOST: the bind address
# workers = 0                  # worker threads; 0 = one per core
# docs_enabled = true          # /docs, /redoc and /openapi.json

[scale.jwt]
# secret = ""                  # JWT_SECRET; in development one is generated in .svc/jwt_secret
# exp_delta_days = 7           # token lifetime

[scale.database]
# docdb_uri = ""               # DOCDB_URI (postgres://… or mongodb://…); empty: SQLite in .svc/data/
`;

/**
 * Write a new project into `dir` (default: the current folder) and say what
 * to do next. Refuses, unless `force`, a folder that holds files of the
 * scaffold (naming them) or anything else but a `.git`.
 *
 * @example
 * await init('../myapp', {}) // then: cd ../myapp && npm install && npm run dev
 */
export async function init(dir: string | undefined, flags: { force?: boolean }): Promise<void> {
  try {
    const target = resolve(dir ?? '.');
    if (existsSync(target) && !statSync(target).isDirectory()) throw new InitError(`${dir} exists and is not a folder`);
    const spec = dependencySpec(target);
    const files = scaffold(packageName(basename(target)), spec);
    const existing = Object.keys(files).filter((name) => existsSync(resolve(target, name)));
    if (existing.length > 0 && !flags.force) {
      throw new InitError(`not overwriting ${existing.join(', ')} in ${target} (use --force to replace ${existing.length === 1 ? 'it' : 'them'})`);
    }
    const held = existsSync(target) ? readdirSync(target).filter((name) => name !== '.git').sort() : [];
    if (held.length > 0 && !flags.force) {
      const shown = held.length > 5 ? `${held.slice(0, 5).join(', ')} and ${held.length - 5} more` : held.join(', ');
      throw new InitError(`${target} is not empty (it holds ${shown}): svc init makes a project in a new or empty folder (use --force to add the files to it anyway)`);
    }
    mkdirSync(target, { recursive: true });
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(resolve(target, name)), { recursive: true });
      writeFileSync(resolve(target, name), text);
    }
    process.stdout.write(nextSteps(target, spec, Object.keys(files)));
  } catch (error) {
    process.stderr.write(`svc: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

function nextSteps(target: string, spec: string, files: string[]): string {
  const where = relative(process.cwd(), target);
  const cd = where === '' ? '' : `  cd ${/\s/.test(where) ? JSON.stringify(where) : where}\n`;
  const version = readPackage(PACKAGE_ROOT).version;
  const install = spec.startsWith('file:') || spec.startsWith('npm:')
    ? `  npm install                 # svc from ${spec}\n` +
      `                              # (or: npm install <path to a svc checkout, or svc-${version}.tgz made by npm pack there>)\n`
    : `  npm install <path to a svc checkout, or svc-${version}.tgz made by npm pack there>\n` +
      `                              # svc is not on the registry under this name: a plain npm install fetches another package\n`;
  return [
    `Created ${files.join(', ')} in ${target}`,
    '',
    'Next:',
    `${cd}${install}  npm run dev                 # serves app.ts on http://localhost:8000, reloading on save`,
    '  npm test                    # test/app.test.ts; npm run typecheck: tsc',
    '  curl -s -X POST localhost:8000/walker/AddNote -d \'{"text":"hello"}\'',
    '',
  ].join('\n');
}
