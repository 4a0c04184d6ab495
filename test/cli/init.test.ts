// `svc init` makes a project in a new or empty folder: a folder that holds anything (a project's src/, an installed
// package) is refused with what it holds, unless --force; the scaffold's files are named when they would be replaced.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runSvc } from '../kit/index.ts';

const SCAFFOLD = ['.gitignore', 'app.ts', 'package.json', 'svc.toml', 'test', 'tsconfig.json'];
const REPO = realpathSync(resolve(fileURLToPath(new URL('../..', import.meta.url))));
const repoPackage = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { devDependencies: Record<string, string>; dependencies: Record<string, string>; allowScripts: Record<string, boolean> };

/** Run a command to completion, without the tap loader in NODE_OPTIONS (a user's shell). */
function run(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_ACCESS_LOG: 'false' };
  delete env.NODE_OPTIONS;
  return new Promise((done, fail) => {
    const p = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.stderr.on('data', (d: Buffer) => (out += d));
    p.on('error', fail);
    p.on('exit', (code) => done({ code, out }));
  });
}

t.test('a folder that holds files is refused, and left as it was; --force still writes into it', async (t) => {
  const dir = t.testdir({ src: { 'main.ts': '// the project\'s own code\n' }, lib: { 'package.json': '{"name":"lib"}\n', 'index.js': '' } });
  const src = await runSvc(['init', 'src'], { cwd: dir });
  t.equal(src.code, 1);
  t.match(src.stderr, /^svc: .*src is not empty \(it holds main\.ts\): svc init makes a project in a new or empty folder \(use --force/);
  t.same(readdirSync(join(dir, 'src')), ['main.ts'], 'nothing was added');
  // An existing file of the scaffold is named first (it would be replaced).
  const lib = await runSvc(['init', 'lib'], { cwd: dir });
  t.match(lib, { code: 1, stderr: /not overwriting package\.json in .*lib \(use --force to replace it\)/ });
  t.equal(readFileSync(join(dir, 'lib/package.json'), 'utf8'), '{"name":"lib"}\n');
  const forced = await runSvc(['init', 'src', '--force'], { cwd: dir });
  t.equal(forced.code, 0, forced.stderr);
  t.same(readdirSync(join(dir, 'src')).sort(), [...SCAFFOLD, 'main.ts'].sort(), '--force adds the files beside what was there');
});

t.test('a new folder, an empty one and one holding only .git are made into projects; a file is not a folder', async (t) => {
  const dir = t.testdir({ empty: {}, repo: { '.git': { HEAD: 'ref: refs/heads/main\n' } }, 'notes.txt': 'x\n' });
  for (const target of ['fresh/deeper', 'empty', 'repo']) {
    const r = await runSvc(['init', target], { cwd: dir });
    t.equal(r.code, 0, `${target}: ${r.stderr}`);
    t.ok(SCAFFOLD.every((f) => existsSync(join(dir, target, f))), `${target}: the scaffold is there`);
  }
  t.ok(existsSync(join(dir, 'repo/.git/HEAD')), 'the repository is kept');
  const file = await runSvc(['init', 'notes.txt'], { cwd: dir });
  t.match(file, { code: 1, stderr: /notes\.txt exists and is not a folder/ });
});

t.test('the current folder: refused when it holds anything', async (t) => {
  const dir = t.testdir({ 'README.md': '# mine\n' });
  const r = await runSvc(['init'], { cwd: dir });
  t.match(r, { code: 1, stderr: /is not empty \(it holds README\.md\)/ });
  t.same(readdirSync(dir), ['README.md']);
});

t.test('the scaffold\'s package.json: its scripts, TypeScript without svc\'s @types, npm\'s allowScripts as svc\'s own', async (t) => {
  const dir = t.testdir({});
  const r = await runSvc(['init', 'app'], { cwd: dir });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Created package\.json, app\.ts, test\/app\.test\.ts, svc\.toml, tsconfig\.json, \.gitignore/);
  const pkg = JSON.parse(readFileSync(join(dir, 'app/package.json'), 'utf8'));
  t.same(pkg.scripts, { start: 'svc start app.ts', dev: 'svc start app.ts --dev', typecheck: 'tsc -p .', test: 'node --import tsx --test test/*.test.ts' });
  t.same(pkg.devDependencies, { '@types/node': repoPackage.devDependencies['@types/node'], tsx: repoPackage.dependencies.tsx, typescript: repoPackage.dependencies.typescript }, 'svc ships declarations: no @types of its own dependencies');
  const spec = pkg.dependencies.svc as string;
  t.equal(resolve(dir, 'app', spec.replace(/^file:/, '')), REPO, 'svc from this checkout');
  // The checkout is a link: npm runs its `prepare` (the declarations), so it is listed too, and npm has nothing to warn about.
  t.same(pkg.allowScripts, { ...repoPackage.allowScripts, [spec]: true });
  t.equal(pkg.allowScripts.esbuild, false);
  t.equal(pkg.allowScripts['better-sqlite3'], true);
});

t.test('a scaffolded app type-checks against svc\'s declarations, no svc source in its program, and its own test passes', async (t) => {
  // What `npm install` makes of the scaffold, by hand (no registry, no install scripts): svc a link to this checkout,
  // and the scaffold's devDependencies at the checkout's versions.
  const dir = t.testdir({});
  const project = join(dir, 'app');
  const r = await runSvc(['init', 'app'], { cwd: dir });
  t.equal(r.code, 0, r.stderr);
  mkdirSync(join(project, 'node_modules/@types'), { recursive: true });
  symlinkSync(REPO, join(project, 'node_modules/svc'), 'dir');
  for (const name of ['typescript', 'tsx', '@types/node']) symlinkSync(join(REPO, 'node_modules', name), join(project, 'node_modules', name), 'dir');
  // The declarations, as `prepare` builds them (at once when they are up to date).
  const built = await run(process.execPath, [join(REPO, 'bin/build-types.mjs')], REPO);
  t.equal(built.code, 0, `the declarations are built: ${built.out.trim()}`);
  t.ok(existsSync(join(REPO, 'dist/types/index.d.ts')) && existsSync(join(REPO, 'dist/types/runtime/testing.d.ts')), 'dist/types holds the doors\' declarations');

  const tsc = join(REPO, 'node_modules/typescript/lib/tsc.js');
  const listed = await run(process.execPath, [tsc, '-p', '.', '--listFilesOnly'], project);
  t.equal(listed.code, 0, 'tsc --listFilesOnly');
  const files = listed.out.split('\n').filter(Boolean).map((f) => resolve(project, f));
  // (The project itself is under the checkout, in .tap/fixtures.)
  const own = files.filter((f) => f.startsWith(`${REPO}/`) && !f.includes('/node_modules/') && !f.startsWith(`${realpathSync(project)}/`));
  t.ok(own.length > 20, `${own.length} of svc's files in the program`);
  t.same(own.filter((f) => !f.startsWith(join(REPO, 'dist/types/')) || !f.endsWith('.d.ts')), [], 'every one a declaration of dist/types, no source');
  t.ok(files.includes(join(REPO, 'dist/types/runtime/testing.d.ts')), 'the test\'s svc/testing through its declarations');
  const checked = await run(process.execPath, [tsc, '-p', '.'], project);
  t.equal(checked.code, 0, `npm run typecheck passes: ${checked.out}`);

  const tested = await run(process.execPath, ['--import', 'tsx', '--test', 'test/app.test.ts'], project);
  t.equal(tested.code, 0, 'node --import tsx --test test/app.test.ts exits 0');
  if (tested.code !== 0) t.comment(tested.out);
  t.match(tested.out, /# pass 2\n# fail 0/, 'test/app.test.ts: both tests pass');
});
