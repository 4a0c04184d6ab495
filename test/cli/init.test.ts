// `svc init` makes a project in a new or empty folder: a folder that holds anything (a project's src/, an installed
// package) is refused with what it holds, unless --force; the scaffold's files are named when they would be replaced.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runSvc } from '../kit/index.ts';

const SCAFFOLD = ['.gitignore', 'app.ts', 'package.json', 'svc.toml', 'tsconfig.json'];

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
