// execute_command's policy: each command judged as `svc` parses it (cli/table.ts's cac table), `--` refused, help
// only as help, paths resolved inside the project (symlinks, /proc), no secret of the server in the command's
// environment — the issue's exploits replayed over streamable HTTP against a real `svc mcp`, with the SDK client.
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { buildCli } from '../../cli/table.ts';
import { commandEnv, judgeCommand, outsideProject, RUN_FOLDER_PREFIX } from '../../mcp/tools/command-policy.ts';

// Each exploit starts a real command (or, on old code, a real server): on a busy machine that takes a while.
t.setTimeout(300_000);

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/svc.mjs');
const TODO = readFileSync(join(ROOT, 'examples/todo/app.ts'), 'utf8');

// The project the tool server serves, and a folder beside it that is not the project.
const base = mkdtempSync(join(tmpdir(), 'svc-mcp-policy-'));
t.teardown(() => rmSync(base, { recursive: true, force: true }));
const project = join(base, 'project');
const outside = join(base, 'outside');
mkdirSync(project);
mkdirSync(outside);
// An app that writes down the environment it was loaded with (start --faux loads it to list its endpoints).
writeFileSync(join(project, 'app.ts'), `${TODO}\nimport { writeFileSync as keepEnv } from 'node:fs';\nkeepEnv('env-seen.json', JSON.stringify(process.env));\n`);
// Were a server started after all (old code), it listens on loopback on any free port.
writeFileSync(join(project, 'svc.toml'), '[scale.server]\nport = 0\nhost = "127.0.0.1"\nworkers = 1\n');

const judge = (command: string, args: string[], root = project) => judgeCommand(buildCli(), command, args, root, { PATH: '/usr/bin' });

t.test('judged on the parse, not the spelling', async (t) => {
  const refused: [string, string[], RegExp][] = [
    ['token', ['--create', '--role', 'admin', 'x', 'app.ts', '--', '--help'], /"--" is refused/],
    ['init', ['x', '--', '--help'], /"--" is refused/],
    ['init', ['scratch', '--force=true'], /--force replaces files/],
    ['init', ['scratch', '--force', '--force'], /more than once/],
    ['start', ['app.ts', '--faux', '--no-faux'], /only with --faux/],
    ['start', ['app.ts', '--faux=false'], /only with --faux/],
    ['start', ['app.ts', '--faux.x'], /disagree/],
    ['start', ['app.ts', '--faux', '--port', '0'], /--port is not run/],
    ['start', ['app.ts', '--faux', '--profile', '../x'], /plain name/],
    ['start', ['--faux', '--nope'], /Unknown option `--nope`/],
    ['bench', ['app.ts'], /only bench compare/],
    ['bench', ['compare', 'a.json', 'b.json', '--out', 'x'], /--out is not run/],
    ['bench', ['compare', 'a.txt', 'b.json'], /\.json result files only/],
    ['db', ['copy', '--to', 'postgres://h/db'], /--to is not run/],
    ['db', ['quarantine', 'drop', 'abc'], /only reads/],
    ['token', ['alice'], /mints credentials/],
    ['mcp', [], /tool server itself/],
    ['deploy', [], /unknown command/],
  ];
  for (const [command, args, reason] of refused) {
    const v = judge(command, args);
    t.match(v, { ok: false, reason }, `svc ${command} ${args.join(' ')}: refused`);
  }
  t.match(judge('init', ['scratch', '--force=false']), { ok: true }, '--force=false parses to no --force');
  t.match(judge('start', ['app.ts', '-f']), { ok: true, argv: ['start', 'app.ts', '-f'] }, 'the short form of --faux');
  // Help is pure help: whatever else was asked, the child runs `svc <command> --help` alone.
  t.match(judge('token', ['x', '--create', '--role', 'admin', '-h']), { ok: true, help: true, argv: ['token', '--help'] });
  t.match(judge('token', ['x', '--create', '--help', '--no-help']), { ok: false }, '--no-help after --help: no help, so token is judged');
});

t.test('paths resolve inside the project: symlinks and /proc followed, no "..", no .svc, no run folder', async (t) => {
  mkdirSync(join(outside, 'lib'), { recursive: true });
  symlinkSync(outside, join(project, 'link'));
  symlinkSync(join(outside, 'nowhere'), join(project, 'dangling'));
  t.teardown(() => {
    rmSync(join(project, 'link'));
    rmSync(join(project, 'dangling'));
  });
  t.equal(outsideProject('app.ts', project), undefined);
  t.equal(outsideProject('new/folder/deeper', project), undefined, 'a path that does not exist yet: its nearest existing ancestor decides');
  t.equal(outsideProject(join(project, 'app.ts'), project), undefined, 'an absolute path inside');
  t.match(outsideProject('link/lib/app.ts', project), /outside the project/, 'through a symlink');
  t.match(outsideProject('link/new/x', project), /outside the project/, 'not there yet, under a symlink');
  t.match(outsideProject('dangling/x', project), /link to nothing/);
  t.match(outsideProject('a/../../x', project), /without ".."/);
  t.match(outsideProject('/etc/passwd', project), /outside the project/);
  t.match(outsideProject(`/proc/${process.pid}/cwd/x.mjs`, project), /outside the project/, "another process's folder");
  t.match(outsideProject('/proc/self/cwd/app.ts', project), /names the files of the process/);
  t.match(outsideProject('file:///etc/passwd', project), /not URLs/);
  t.match(outsideProject('.svc/jwt_secret', project), /\.svc folder/);
  // The project holding a run folder (a project_root of /tmp): what run_svc wrote there is still refused.
  t.match(outsideProject(join(tmpdir(), `${RUN_FOLDER_PREFIX}x`, 'evil.mjs'), tmpdir()), /run_svc folder/);
});

t.test('a module to load is the project\'s own source; init makes a new folder of the project', async (t) => {
  mkdirSync(join(project, 'node_modules/tool/lib'), { recursive: true });
  writeFileSync(join(project, 'node_modules/tool/index.js'), '// a package\n');
  mkdirSync(join(project, '.hidden'), { recursive: true });
  writeFileSync(join(project, '.hidden/app.ts'), '// not the project\'s source\n');
  writeFileSync(join(project, 'notes.txt'), 'not a module\n');
  symlinkSync(join(project, 'node_modules/tool/index.js'), join(project, 'entry.js'));
  t.teardown(() => {
    for (const p of ['node_modules', '.hidden', 'notes.txt', 'entry.js']) rmSync(join(project, p), { recursive: true, force: true });
  });
  const refused: [string, string[], RegExp][] = [
    ['start', ['node_modules/tool/index.js', '--faux'], /in node_modules: execute_command loads the project's own modules only/],
    ['start', [join(project, 'node_modules/tool/index.js'), '--faux'], /in node_modules/],
    ['start', ['entry.js', '--faux'], /is .*node_modules\/tool\/index\.js, which is in node_modules/],
    ['start', ['.hidden/app.ts', '--faux'], /dot-folder/],
    ['start', ['notes.txt', '--faux'], /not a module/],
    ['db', ['inspect', '--app', 'node_modules/tool/index.js'], /in node_modules/],
    ['db', ['stats', '--app=.hidden/app.ts'], /dot-folder/],
    ['init', ['node_modules/tool/lib'], /in node_modules: svc init does not write into installed packages/],
    ['init', ['node_modules/new-one'], /in node_modules/],
    ['init', ['.hidden/x'], /dot-folder/],
    ['init', ['.git'], /dot-folder/],
    ['init', ['main.ts'], /named like a file/],
    ['init', ['src/app.mjs'], /named like a file/],
  ];
  for (const [command, args, reason] of refused) t.match(judge(command, args), { ok: false, reason }, `svc ${command} ${args.join(' ')}: refused`);
  for (const [command, args] of [['start', ['app.ts', '--faux']], ['db', ['inspect', '--app', 'app.ts']], ['init', ['fresh-one']], ['init', ['apps/my.app']]] as [string, string[]][]) {
    t.match(judge(command, args), { ok: true }, `svc ${command} ${args.join(' ')}: runs`);
  }
  // The entry a command picks by itself, when it is a link into a package.
  symlinkSync(join(project, 'node_modules/tool/index.js'), join(project, 'main.ts'));
  t.teardown(() => rmSync(join(project, 'main.ts'), { force: true }));
  t.match(judge('start', ['--faux']), { ok: false, reason: /^the default "main\.ts" is .*, which is in node_modules/ });
  t.match(judge('db', ['stats']), { ok: false, reason: /^the default "main\.ts" .*node_modules/ });
});

t.test('the environment: an allowlist, no secret', async (t) => {
  const env = commandEnv({ PATH: '/bin', HOME: '/h', LC_ALL: 'C', JWT_SECRET: 's', SVC_MCP_TOKEN: 't', DB_PASSWORD: 'p', MY_API_KEY: 'k', DOCDB_URI: 'postgres://u:p@h/d', NODE_OPTIONS: '--require x' }, { SVC_X: '1' });
  t.same(env, { PATH: '/bin', HOME: '/h', LC_ALL: 'C', SVC_X: '1' });
});

/** `svc mcp` over streamable HTTP in `cwd` (default the project), with `env` added to this process's; a connected SDK client. */
async function serve(t: Test, env: Record<string, string>, cwd = project): Promise<{ client: Client; proc: ChildProcess }> {
  const token = 'policy-test-token-0123456789abcdef';
  const proc = spawn(process.execPath, [BIN, 'mcp', '--transport', 'streamable-http', '--port', '0', '--host', '127.0.0.1'], {
    cwd,
    env: { ...process.env, ...env, SVC_MCP_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    proc.kill('SIGKILL');
  });
  let stderr = '';
  proc.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const m = /serving \S+ at (\S+)/.exec(line);
      if (m) resolve(m[1] as string);
    });
    proc.once('exit', (code) => reject(new Error(`svc mcp exited (${code}): ${stderr}`)));
  });
  const client = new Client({ name: 'policy-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  t.teardown(() => client.close());
  return { client, proc };
}

type Run = { success: boolean; exit_code: number; stdout: string; stderr: string; command: string };

const SECRETS = {
  JWT_SECRET: 'server-jwt-secret-that-must-stay-in-the-server-0123',
  WEBHOOK_SECRET: 'server-webhook-secret-0123456789abcdef',
  DB_PASSWORD: 'hunter2-db',
  MY_API_TOKEN: 'api-token-abc',
  AWS_SECRET_ACCESS_KEY: 'aws-key-xyz',
};

t.test('the exploits, over streamable HTTP against svc mcp', async (t) => {
  const { client } = await serve(t, SECRETS);
  const exec = async (command: string, args: string[], timeout = 60): Promise<Run> => {
    const r = await client.callTool({ name: 'execute_command', arguments: { command, args, timeout } });
    return r.structuredContent as Run;
  };

  t.test('an admin token through `token … -- --help`', async (t) => {
    const r = await exec('token', ['--create', '--role', 'admin', 'x', 'app.ts', '--', '--help']);
    t.equal(r.exit_code, 2, 'refused');
    t.notMatch(r.stdout, /eyJ/, 'no token printed');
    t.match(r.stderr, /"--" is refused/);
  });

  t.test('init of a folder outside the project, `-- --help`', async (t) => {
    const target = join(outside, 'planted');
    const r = await exec('init', [target, '--', '--help']);
    t.equal(r.exit_code, 2, 'refused');
    t.notOk(existsSync(target), 'nothing was written outside the project');
    const plain = await exec('init', [target]);
    t.match(plain, { exit_code: 2, stderr: /outside the project/ }, 'nor without --');
    t.notOk(existsSync(target));
  });

  t.test('bench compare /etc/passwd, `-- --help`', async (t) => {
    const r = await exec('bench', ['compare', '/etc/passwd', 'b.json', '--', '--help']);
    t.equal(r.exit_code, 2, 'refused');
    t.notMatch(r.stdout + r.stderr, /root:/, "none of the file's bytes");
  });

  t.test('init scratch --force=true', async (t) => {
    mkdirSync(join(project, 'scratch'), { recursive: true });
    writeFileSync(join(project, 'scratch/app.ts'), '// mine\n');
    const r = await exec('init', ['scratch', '--force=true']);
    t.match(r, { exit_code: 2, stderr: /--force replaces files/ }, 'refused');
    t.equal(readFileSync(join(project, 'scratch/app.ts'), 'utf8'), '// mine\n', 'the file is untouched');
    const made = await exec('init', ['fresh']);
    t.equal(made.exit_code, 0, 'init of a new folder inside the project runs');
    t.ok(existsSync(join(project, 'fresh/app.ts')));
  });

  t.test('init into a folder that exists, into an installed package, as a file name', async (t) => {
    mkdirSync(join(project, 'src'), { recursive: true });
    writeFileSync(join(project, 'src/main.ts'), '// the project\'s own code\n');
    mkdirSync(join(project, 'node_modules/typescript/lib'), { recursive: true });
    writeFileSync(join(project, 'node_modules/typescript/lib/tsc.js'), '// a package\n');
    t.teardown(() => {
      rmSync(join(project, 'src'), { recursive: true, force: true });
      rmSync(join(project, 'node_modules'), { recursive: true, force: true });
      rmSync(join(project, 'main.ts'), { recursive: true, force: true });
    });
    const src = await exec('init', ['src']);
    t.match(src, { exit_code: 1, stderr: /src is not empty \(it holds main\.ts\)/ }, 'svc init itself refuses a folder that holds files');
    t.notOk(existsSync(join(project, 'src/package.json')), 'no package.json added to src/');
    const pkg = await exec('init', ['node_modules/typescript/lib']);
    t.match(pkg, { exit_code: 2, stderr: /in node_modules/ }, 'refused before anything runs');
    t.notOk(existsSync(join(project, 'node_modules/typescript/lib/package.json')), 'the package is untouched');
    const named = await exec('init', ['main.ts']);
    t.match(named, { exit_code: 2, stderr: /named like a file/ });
    t.notOk(existsSync(join(project, 'main.ts')), 'no folder named main.ts');
  });

  t.test("start and db --app load the project's own modules only, never a package's", async (t) => {
    const marker = join(outside, 'package-ran');
    mkdirSync(join(project, 'node_modules/tool'), { recursive: true });
    writeFileSync(join(project, 'node_modules/tool/index.js'), `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\n`);
    t.teardown(() => rmSync(join(project, 'node_modules'), { recursive: true, force: true }));
    const start = await exec('start', ['node_modules/tool/index.js', '--faux']);
    t.match(start, { exit_code: 2, stdout: '', stderr: /in node_modules: execute_command loads the project's own modules only/ });
    const db = await exec('db', ['inspect', '--app', 'node_modules/tool/index.js']);
    t.match(db, { exit_code: 2, stderr: /in node_modules/ });
    t.notOk(existsSync(marker), "the package's code never ran");
  });

  t.test('start app.ts --faux --no-faux', async (t) => {
    const started = performance.now();
    const r = await exec('start', ['app.ts', '--faux', '--no-faux'], 20);
    t.match(r, { exit_code: 2, stdout: '', stderr: /only with --faux/ }, 'refused: the parsed faux is false');
    t.ok(performance.now() - started < 15_000, 'answered without running until the timeout');
    const faux = await exec('start', ['app.ts', '--faux']);
    t.match(faux, { exit_code: 0, stdout: /\/walker\/AddTodo/ }, 'start --faux lists the endpoints');
  });

  t.test('a symlink out of the project', async (t) => {
    const marker = join(outside, 'pwned-by-link');
    writeFileSync(join(outside, 'evil.mjs'), `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'pwned');\n`);
    symlinkSync(outside, join(project, 'elsewhere'));
    t.teardown(() => rmSync(join(project, 'elsewhere')));
    const r = await exec('start', ['elsewhere/evil.mjs', '--faux']);
    t.match(r, { exit_code: 2, stderr: /outside the project/ }, 'refused');
    t.notOk(existsSync(marker), 'the module outside never ran');
  });

  t.test('run_svc writes a module, then start /proc/<pid>/cwd/evil.mjs', { skip: process.platform === 'linux' ? false : 'needs /proc' }, async (t) => {
    const tag = `evil-${process.pid}-${Date.now()}`;
    const marker = join(outside, `${tag}.ran`);
    const evil = `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran outside the sandbox');\n`;
    // The run leaves the module in its folder and stays alive until the test drops a `stop` file there (polled).
    const code = `import { existsSync, writeFileSync } from 'node:fs';
writeFileSync(${JSON.stringify(`${tag}.mjs`)}, ${JSON.stringify(evil)});
const until = Date.now() + 50_000;
while (!existsSync('stop') && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
console.log('stopped');`;
    const running = client.callTool({ name: 'run_svc', arguments: { code, timeout: 60 } });
    // The run's folder, found as the exploit would: a process whose working folder holds the module.
    let pid: number | undefined;
    let folder = '';
    const deadline = performance.now() + 60_000;
    while (pid === undefined && performance.now() < deadline) {
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const cwd = readlinkSync(`/proc/${entry}/cwd`);
          if (cwd.includes(RUN_FOLDER_PREFIX) && existsSync(join(cwd, `${tag}.mjs`))) {
            pid = Number(entry);
            folder = cwd;
            break;
          }
        } catch {
          // Gone, or not ours to read.
        }
      }
      if (pid === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    t.ok(pid, 'the run is alive, its module written');
    try {
      const viaProc = await exec('start', [`/proc/${pid}/cwd/${tag}.mjs`, '--faux', '--', '--help']);
      t.equal(viaProc.exit_code, 2, 'with -- --help: refused');
      const plain = await exec('start', [`/proc/${pid}/cwd/${tag}.mjs`, '--faux']);
      t.match(plain, { exit_code: 2, stderr: /outside the project|run_svc folder/ }, 'without: refused, the path resolved out of the project');
      t.notOk(existsSync(marker), 'the module never ran outside the sandbox');
    } finally {
      if (folder) writeFileSync(join(folder, 'stop'), '');
      await running;
    }
  });

  t.test('no secret of the server reaches the command', async (t) => {
    rmSync(join(project, 'env-seen.json'), { force: true });
    const r = await exec('start', ['app.ts', '--faux']);
    t.equal(r.exit_code, 0, r.stderr);
    const seen = JSON.parse(readFileSync(join(project, 'env-seen.json'), 'utf8')) as Record<string, string>;
    for (const name of [...Object.keys(SECRETS), 'SVC_MCP_TOKEN']) t.notOk(name in seen, `${name} is not in the command's environment`);
    const values = JSON.stringify(seen);
    for (const value of Object.values(SECRETS)) t.notOk(values.includes(value), 'nor its value under another name');
    t.ok(seen.PATH, 'PATH is');
  });

  t.test('help is served, as help only', async (t) => {
    const r = await exec('token', ['x', '--create', '--role', 'admin', '--help']);
    t.match(r, { exit_code: 0, command: 'svc token --help', stdout: /\$ svc token \[user_id\] \[entry\]/ });
    t.notMatch(r.stdout, /eyJ/);
  });
});

t.test('execute_command runs two commands at a time, four wait, more are refused as busy', async (t) => {
  // A project whose app, as start --faux loads it, counts the loads running at once, then waits for the test's `go`.
  const busy = join(base, 'busy');
  mkdirSync(busy);
  writeFileSync(
    join(busy, 'app.ts'),
    `import { appendFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { entry, Root, Walker } from 'svc';
mkdirSync('running', { recursive: true });
const me = 'running/' + process.pid;
writeFileSync(me, '');
appendFileSync('seen.log', readdirSync('running').length + '\\n');
while (!existsSync('go')) await new Promise((resolve) => setTimeout(resolve, 20));
rmSync(me);
export class Ping extends Walker {
  static access = 'pub' as const;
  @entry(Root) go() {
    this.report('pong');
  }
}
`,
  );
  const { client } = await serve(t, {}, busy);
  type Answer = { isError?: boolean; structuredContent?: Run & { error?: string } };
  const answers: Answer[] = [];
  let settle: () => void = () => {};
  const twoAnswered = new Promise<void>((resolve) => (settle = resolve));
  const calls = Array.from({ length: 8 }, () =>
    (client.callTool({ name: 'execute_command', arguments: { command: 'start', args: ['app.ts', '--faux'], timeout: 120 } }, undefined, { timeout: 300_000 }) as Promise<Answer>).then((r) => {
      answers.push(r);
      if (answers.length === 2) settle();
      return r;
    }),
  );
  const seen = () => (existsSync(join(busy, 'seen.log')) ? readFileSync(join(busy, 'seen.log'), 'utf8').trim().split('\n').filter(Boolean).map(Number) : []);
  try {
    // The two over the queue are answered at once, while the first two wait for `go`.
    const deadline = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 60_000).unref());
    t.not(await Promise.race([twoAnswered, deadline]), 'late', 'two calls were answered while the others ran or waited');
    t.equal(answers.length, 2, 'only those');
    for (const a of answers) {
      t.equal(a.isError, true, 'an error result');
      t.match(a.structuredContent?.error, /execute_command is busy: 2 commands are running and 4 waiting/);
    }
    // Both running commands have loaded the app and wait for `go`.
    const running = () => (existsSync(join(busy, 'running')) ? readdirSync(join(busy, 'running')).length : 0);
    const until = performance.now() + 120_000;
    while (running() < 2 && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal(running(), 2, 'two loads of the app are running');
  } finally {
    writeFileSync(join(busy, 'go'), '');
  }
  const all = await Promise.all(calls);
  const ran = all.filter((a) => !a.isError);
  t.equal(ran.length, 6, 'the two running and the four waiting all ran');
  for (const a of ran) t.match(a.structuredContent, { exit_code: 0, stdout: /\/walker\/Ping/ });
  t.equal(seen().length, 6, 'six loads of the app');
  t.ok(Math.max(...seen()) <= 2, `never more than two at once (seen: ${seen().join(' ')})`);
});
