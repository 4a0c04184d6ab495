import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** Used by tooling (package.json scripts, tap config), not by an import. */
const TOOLING: Record<string, string> = {
  tsx: 'runs TypeScript: the tap node-arg and the bin',
  typescript: 'npm run typecheck',
  '@types/node': 'types for typecheck',
  tap: 'the test runner',
  'swagger-ui-dist': 'its files are served at /docs (transports/http/docs.ts resolves them by path)',
  redoc: 'its standalone bundle is served at /redoc (transports/http/docs.ts resolves it by path)',
};

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else if (/\.(ts|mts|js|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

function packageOf(spec: string): string | undefined {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) return undefined;
  if (builtinModules.includes(spec.split('/')[0] as string)) return undefined;
  const parts = spec.split('/');
  return spec.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

const importRe = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

function imports(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of src.matchAll(importRe)) {
    const pkgName = packageOf((m[1] ?? m[2] ?? m[3]) as string);
    if (pkgName) found.push(pkgName);
  }
  return found;
}

t.test('product code imports only declared runtime dependencies', async (t) => {
  // The load harness behind `svc bench` is product code; the repository's own scenarios (bench/*.ts) are not.
  const product = files(root).filter((f) => !relative(root, f).startsWith('test/') && (!relative(root, f).startsWith('bench/') || relative(root, f).startsWith('bench/harness/')));
  for (const file of product) {
    for (const name of imports(file)) {
      if (name === pkg.name) continue;
      t.ok(name in pkg.dependencies, `${relative(root, file)} imports ${name}, declared in dependencies`);
    }
  }
});

t.test('tests and benches import only declared dependencies', async (t) => {
  const rest = files(root).filter((f) => /^(test|bench)\//.test(relative(root, f)) && !relative(root, f).startsWith('bench/harness/'));
  for (const file of rest) {
    for (const name of imports(file)) {
      if (name === pkg.name) continue;
      t.ok(name in pkg.dependencies || name in pkg.devDependencies, `${relative(root, file)} imports ${name}, declared`);
    }
  }
});

t.test('every declared dependency is used', async (t) => {
  const used = new Set(files(root).flatMap(imports));
  for (const name of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]) {
    const typed = name.startsWith('@types/') && used.has(name.slice('@types/'.length));
    t.ok(used.has(name) || typed || name in TOOLING, `${name} is imported somewhere${TOOLING[name] ? ` (${TOOLING[name]})` : ''}`);
  }
});

t.test('versions are pinned', async (t) => {
  for (const [name, version] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
    t.match(version, /^(\d+\.\d+\.\d+|npm:(@[^/]+\/)?[^@]+@\d+\.\d+\.\d+\S*|file:\S+)$/, `${name}@${version} is exact`);
  }
});

/** Node modules the kernel may use: none does I/O (observers publish their events on diagnostics channels). */
const KERNEL_BUILTINS = new Set(['node:diagnostics_channel']);

t.test('kernel/ imports nothing of ours outside kernel/ and no I/O module', async (t) => {
  const kernel = files(join(root, 'kernel'));
  t.ok(kernel.length > 5);
  for (const file of kernel) {
    const src = readFileSync(file, 'utf8');
    for (const m of src.matchAll(/from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = (m[1] ?? m[2]) as string;
      t.ok(spec.startsWith('./') || KERNEL_BUILTINS.has(spec), `${relative(root, file)} imports ${spec}: only ./ siblings (and ${[...KERNEL_BUILTINS].join(', ')}) allowed`);
    }
  }
});
