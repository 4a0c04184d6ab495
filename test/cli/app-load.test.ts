// An app that fails as it loads stops `svc start` with the file, line and column, before anything is created on
// disk; a class declared wrongly fails the start (not the first request); a 500 of a served app is logged with the
// app's source-mapped frames and its classes' own names, in production too; no esbuild process outlives the start.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runSvc, startServer } from '../kit/index.ts';


// No SVC_DATA_DIR (nor a secret): the data folder would be <project>/.svc, which must not appear.
const svc = (args: string[], cwd: string, env: Record<string, string> = {}) => runSvc(args, { cwd, env, clean: true });

const WALKER = `export class Hello extends Walker {
  static access = 'pub' as const;
  @entry(Root) hi() { this.report('hello'); }
}
`;
const HEAD = `import { entry, Node, Root, T, Walker } from 'svc';\n`;

t.test('errors at import time name file:line:column and leave nothing on disk', async (t) => {
  const dir = t.testdir({
    'throws.ts': `${HEAD}${WALKER}const settings = (globalThis as any).missing.value;\n`,
    'misspelled.ts': `${HEAD}${WALKER}export class Note extends Nod {}\n`,
    'raise.ts': `${HEAD}${WALKER}\n\nthrow new Error('no configuration found');\n`,
  });
  const cases: [string, RegExp][] = [
    ['throws.ts', /^svc: throws\.ts:6:\d+: TypeError: Cannot read properties of undefined \(reading 'value'\)\n$/],
    ['misspelled.ts', /^svc: misspelled\.ts:6:\d+: ReferenceError: Nod is not defined\n$/],
    ['raise.ts', /^svc: raise\.ts:8:7: no configuration found\n$/],
  ];
  for (const [file, expected] of cases) {
    const r = await svc(['start', file, '--port', '0', '--host', '127.0.0.1', '--workers', '1'], dir);
    t.equal(r.code, 1, file);
    t.match(r.stderr, expected, file);
    t.notMatch(r.stdout, /admin account/, `${file}: no admin account was made`);
  }
  t.notOk(existsSync(join(dir, '.svc')), 'no data folder was created');
  t.same(readdirSync(dir).sort(), ['misspelled.ts', 'raise.ts', 'throws.ts']);
});

t.test('a field with an initializer instead of `declare` fails the start, not the first request', async (t) => {
  const dir = t.testdir({
    'app.ts': `${HEAD}export class Note extends Node {\n  static has = T.Object({ text: T.String({ default: '' }) });\n  text = '';\n}\n${WALKER}`,
  });
  const r = await svc(['start', 'app.ts', '--port', '0', '--host', '127.0.0.1', '--workers', '1'], dir);
  t.equal(r.code, 1);
  t.match(r.stderr, /^svc: Note\.text is a class field, so writes to it are not seen; declare it with `declare text: …`\n$/);
  t.notOk(existsSync(join(dir, '.svc')), 'nothing created on disk');
  const faux = await svc(['start', 'app.ts', '--faux'], dir);
  t.equal(faux.code, 1, '--faux refuses it as well');
});

t.test('a 500 is logged with the app’s source-mapped TypeScript lines, in production too', async (t) => {
  const dir = t.testdir({
    'app.ts': `${HEAD}import { explode } from './helper.ts';\n\nexport class Crash extends Walker {\n  static access = 'pub' as const;\n  @entry(Root) crash() {\n    explode('it broke');\n  }\n}\n`,
    'helper.ts': `// a module of the app\n\nexport function explode(message: string): never {\n  throw new Error(message);\n}\n`,
  });
  const server = await startServer({ entry: join(dir, 'app.ts'), env: { NODE_ENV: 'production', ADMIN_DEFAULT_PASSWORD: 'a long passphrase for ops 42' } });
  t.teardown(() => server.stop());
  const res = await fetch(`${server.url}/walker/Crash`, { method: 'POST' });
  t.equal(res.status, 500);
  const body = (await res.json()) as { error: { code: string; message: string; details?: unknown } };
  t.match(body.error, { code: 'EXECUTION_ERROR', message: 'it broke' });
  t.equal(body.error.details, undefined, 'no stack in a production answer');
  const line = JSON.parse(await server.waitFor(/"msg":"request failed"/)) as { route: string; err: { message: string; stack: string } };
  t.match(line, { route: /Crash/, err: { message: 'it broke' } });
  t.match(line.err.stack, /helper\.ts:4:9/, 'the throwing line of the app’s module');
  t.match(line.err.stack, /app\.ts:7:5/, 'the walker’s line');
  // esbuild's lowering of the decorators renames the class `_Crash`, which in svc reads as a hook walker.
  t.match(line.err.stack, /at Crash\.crash \(.*app\.ts:7:5\)/, 'the frame names the walker’s class as written');
  t.notMatch(line.err.stack, /_Crash/);
  // The bundles are built; esbuild's service (~80–100 MB) is not left running beside the server (a --dev start keeps it:
  // dev-reload.test.ts sees it there with the same probe).
  const esbuild = execFileSync('ps', ['-eo', 'ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.trim().split(/\s+/)[0] === String(server.proc.pid) && /esbuild.*--service/.test(l));
  t.same(esbuild, [], 'no esbuild process among the server\'s children');
  t.notMatch(line.err.stack, /svc-workers|actors[\\/]anchor/, 'neither the bundle nor the runtime');
});

t.test('without an entry argument and without main.ts, the app.ts that svc init writes is the entry', async (t) => {
  const dir = t.testdir({ 'app.ts': `${HEAD}${WALKER}` });
  const r = await svc(['start', '--faux'], dir);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /POST \/walker\/Hello\s+walker Hello/);
});
