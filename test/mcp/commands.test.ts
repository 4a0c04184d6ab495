// list_commands, get_command and execute_command: the command table as tools, and `svc` run as a child
// process — exit codes normalised (usage errors 2), mcp refused, output capped, a timeout kills the group.
// What execute_command lets through is tested in command-policy.test.ts.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCli, commandTable } from '../../cli/table.ts';
import { COMMAND_GROUPS, executeCommand, getCommand, listCommands, runCommand, useCommandTable, type CommandDetail } from '../../mcp/tools/commands.ts';
import { ToolInputError } from '../../mcp/types.ts';

// Several cases start a real `svc` process: on a busy machine that takes a while.
t.setTimeout(180_000);

// What `svc mcp` does before it serves (the tool server imports nothing of cli/): hand the tools the command table.
useCommandTable(commandTable());

t.test('without the command table the tools fail, saying so', async (t) => {
  // A module instance of its own (another URL), to which no table was given.
  const url = new URL('../../mcp/tools/commands.ts?no-table', import.meta.url).href;
  const fresh = (await import(url)) as typeof import('../../mcp/tools/commands.ts');
  await t.rejects(fresh.listCommands(), /the svc command table was not given to the tool server \(useCommandTable\)/);
  await t.rejects(fresh.getCommand({ name: 'start' }), /useCommandTable/);
  await t.rejects(fresh.executeCommand({ command: 'init', args: ['--help'] }), /useCommandTable/);
  fresh.useCommandTable(commandTable());
  t.equal((await fresh.listCommands()).total, buildCli().commands.length, 'and work once it is given');
});

/** The environment of a run that must not see a server set up by the test run itself. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_ACCESS_LOG: 'false' };
  for (const name of ['JWT_SECRET', 'SVC_DATA_DIR', 'DOCDB_URI', 'KV_URL', 'NODE_ENV']) delete env[name];
  return env;
}

/** The live processes (zombies aside: they are dead, waiting to be reaped) of a process group, from /proc. */
function liveInGroup(pgid: number): number[] {
  const live: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') live.push(Number(entry));
  }
  return live;
}

/**
 * The live processes of a group once it empties, or after `ms`: a SIGKILL is certain, but the kernel tears a
 * process down after kill() returns, and the answer comes as soon as the leader's pipes close.
 */
async function leftInGroup(pgid: number, ms = 2_000): Promise<number[]> {
  const deadline = performance.now() + ms;
  let live = liveInGroup(pgid);
  while (live.length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    live = liveInGroup(pgid);
  }
  return live;
}

const noProc = process.platform === 'linux' ? false : 'reads /proc to find the processes of a group (Linux only)';

t.test('list_commands: every command of the table, mcp included, each in a group', async (t) => {
  const list = await listCommands();
  const table = buildCli().commands.map((c) => c.name);
  t.same(list.commands.map((c) => c.name).sort(), [...table].sort(), 'the table, no more, no less');
  t.ok(table.includes('mcp'), 'mcp is in the table');
  t.equal(list.total, table.length);
  for (const c of list.commands) {
    t.not(c.group, 'other', `${c.name} has a group`);
    t.match(c.usage, new RegExp(`^svc ${c.name}\\b`));
    t.ok(c.description.length > 10, `${c.name} has a description`);
  }
  t.same(
    list.groups.map((g) => g.name),
    COMMAND_GROUPS.map((g) => g.name),
  );
  t.same(list.groups.find((g) => g.name === 'tooling')?.commands, ['bench', 'init', 'mcp']);
  t.same(list.groups.flatMap((g) => g.commands).sort(), [...table].sort(), 'each command in exactly one group');
});

t.test('get_command start: its help, --port an OPTION with -p, entry a POSITIONAL, sources in cli/table.ts', async (t) => {
  const start = (await getCommand({ name: 'start' })) as CommandDetail;
  t.equal(start.name, 'start');
  t.equal(start.group, 'serve');
  t.match(start.help, /Usage:\n {2}\$ svc start \[entry\]/);
  t.match(start.help, /-p, --port <port>/);
  const table = readFileSync(new URL('../../cli/table.ts', import.meta.url), 'utf8').split('\n');
  const lineOf = (source: string): string => table[Number(source.split(':')[1]) - 1] ?? '';
  t.match(lineOf(start.source), ".command('start [entry]'");
  const port = start.args.find((a) => a.name === '--port');
  t.match(port, { kind: 'OPTION', type: 'string', short: '-p', required: false, default: '8000' });
  t.match(lineOf(port?.source ?? ''), ".option('-p, --port <port>'", 'the source names the line of the option');
  t.match(start.args.find((a) => a.name === 'entry'), { kind: 'POSITIONAL', required: false, type: 'string' });
  t.match(start.args.find((a) => a.name === '--dev'), { kind: 'OPTION', type: 'boolean', short: '-d' });
  t.match(start.args.find((a) => a.name === '--no-client'), { kind: 'OPTION', type: 'boolean', short: '-n' });
});

t.test('get_command: variadic args are REMAINDER; mcp lists its options; --host is found in its own command', async (t) => {
  const db = (await getCommand({ name: 'db' })) as CommandDetail;
  t.match(db.args.find((a) => a.name === 'args'), { kind: 'REMAINDER', type: 'string[]' });
  const mcp = (await getCommand({ name: 'mcp' })) as CommandDetail;
  t.same(
    mcp.args.map((a) => a.name),
    ['--transport', '--port', '--host', '--inspect', '--profile'],
  );
  const startHost = (await getCommand({ name: 'start' })) as CommandDetail;
  t.not(
    mcp.args.find((a) => a.name === '--host')?.source,
    startHost.args.find((a) => a.name === '--host')?.source,
    "mcp's --host is not start's line",
  );
});

t.test('get_command of a name not in the table: an error naming the commands', async (t) => {
  const r = await getCommand({ name: 'deploy' });
  t.match(r, { error: /no svc command named "deploy"; the commands: start, .*mcp/ });
});

t.test('execute_command init --help: success, exit 0, the help on stdout', async (t) => {
  const r = await executeCommand({ command: 'init', args: ['--help'], env: cleanEnv() });
  t.match(r, { success: true, exit_code: 0, command: 'svc init --help' });
  t.match(r.stdout, /\$ svc init \[dir\]/);
});

t.test('running a command: usage errors are 2 (an unknown option, a missing value, bench’s own 2); a failure is 1', async (t) => {
  // The mechanism under execute_command, unjudged: the exit codes svc gives are normalised.
  const dir = t.testdir({});
  const env = cleanEnv();
  const [unknown, missing, bench, failure] = await Promise.all([
    runCommand({ argv: ['start', '--nope'], cwd: dir, env }),
    runCommand({ argv: ['start', '--port'], cwd: dir, env }),
    runCommand({ argv: ['bench', 'app.ts', '--duration', '-3'], cwd: dir, env }),
    runCommand({ argv: ['start', 'missing.ts'], cwd: dir, env }),
  ]);
  t.match(unknown, { success: false, exit_code: 2, stderr: /Unknown option `--nope`/ });
  t.match(missing, { success: false, exit_code: 2, stderr: /value is missing/ });
  t.match(bench, { success: false, exit_code: 2, stderr: /--duration must be a number > 0/ });
  t.match(failure, { success: false, exit_code: 1, stderr: /^svc: / });
});

t.test('execute_command: cac’s usage errors are refused before anything starts (exit 2); a failure of what ran is 1', async (t) => {
  const dir = t.testdir({});
  let spawned = 0;
  const onSpawn = () => spawned++;
  const unknown = await executeCommand({ command: 'start', args: ['--faux', '--nope'], projectRoot: dir, onSpawn });
  t.match(unknown, { success: false, exit_code: 2, stdout: '', stderr: /Unknown option `--nope`/ });
  const missing = await executeCommand({ command: 'start', args: ['--faux', '--profile'], projectRoot: dir, onSpawn });
  t.match(missing, { success: false, exit_code: 2, stderr: /value is missing/ });
  t.equal(spawned, 0, 'nothing was spawned');
  const failure = await executeCommand({ command: 'start', args: ['missing.ts', '--faux'], projectRoot: dir, env: cleanEnv(), onSpawn });
  t.match(failure, { success: false, exit_code: 1, stderr: /^svc: /, command: 'svc start missing.ts --faux' });
  t.equal(spawned, 1, 'that one ran');
});

t.test('execute_command refuses mcp and commands not in the table (exit 2) without starting anything', async (t) => {
  let spawned = 0;
  const mcp = await executeCommand({ command: 'mcp', onSpawn: () => spawned++ });
  t.match(mcp, { success: false, exit_code: 2, stdout: '', command: 'svc mcp', stderr: /tool server itself/ });
  const unknown = await executeCommand({ command: 'deploy', args: ['x'], onSpawn: () => spawned++ });
  t.match(unknown, { success: false, exit_code: 2, command: 'svc deploy x', stderr: /unknown command "deploy"/ });
  t.equal(spawned, 0, 'nothing was spawned');
});

t.test('execute_command checks its arguments: args are strings, timeout 1–600', async (t) => {
  await t.rejects(executeCommand({ command: 'init', args: [1 as unknown as string] }), ToolInputError);
  await t.rejects(executeCommand({ command: 'init', args: 'x' as unknown as string[] }), ToolInputError);
  await t.rejects(executeCommand({ command: 'init', timeout: 0 }), ToolInputError);
  await t.rejects(executeCommand({ command: 'init', timeout: 601 }), ToolInputError);
  await t.rejects(executeCommand({ command: 1 as unknown as string }), ToolInputError);
});

t.test('execute_command caps each output and says how much it left out', async (t) => {
  const r = await executeCommand({ command: 'start', args: ['--help'], env: cleanEnv(), maxOutputBytes: 64 });
  t.equal(r.exit_code, 0);
  const [kept, marker] = r.stdout.split('\n[svc mcp: stdout truncated: ');
  t.equal(Buffer.byteLength(kept ?? ''), 64, 'the first 64 bytes are kept');
  t.match(marker, /^\d+ more bytes not shown\]\n$/);
});

t.test('running a command: at the timeout it is killed (a server that would run forever)', { skip: noProc }, async (t) => {
  const app = readFileSync(new URL('../../examples/todo/app.ts', import.meta.url), 'utf8');
  const dir = t.testdir({ 'app.ts': app });
  let pid = 0;
  const started = performance.now();
  const r = await runCommand({
    argv: ['start', 'app.ts', '--port', '0', '--host', '127.0.0.1', '--workers', '1'],
    timeout: 2,
    cwd: dir,
    env: cleanEnv(),
    onSpawn: (p) => (pid = p),
  });
  const seconds = (performance.now() - started) / 1000;
  t.match(r, { success: false, exit_code: 1, command: 'svc start app.ts --port 0 --host 127.0.0.1 --workers 1' });
  t.match(r.stderr, /svc mcp: timed out after 2 s; the command and its process group were killed \(SIGKILL\)\n$/);
  t.ok(seconds >= 2 && seconds < 10, `answered after ${seconds.toFixed(1)} s`);
  t.ok(pid > 0, 'the child was spawned');
  t.same(await leftInGroup(pid), [], 'no process of its group is left');
  t.notMatch(r.stdout, /0\.0\.0\.0/, 'it never bound every interface');
});

t.test('running a command: the timeout kills what it started too (bench runs the app as a child process)', { skip: noProc }, async (t) => {
  // A public walker that takes no field: bench's default scenario loads it until the run's end (a minute).
  const app = "import { entry, Root, Walker } from 'svc';\nexport class Ping extends Walker {\n  static access = 'pub' as const;\n  @entry(Root) go() {\n    this.report('pong');\n  }\n}\n";
  const dir = t.testdir({ 'app.ts': app, data: {} });
  let pid = 0;
  let most = 0;
  const poll = setInterval(() => (most = Math.max(most, pid ? liveInGroup(pid).length : 0)), 100);
  const r = await runCommand({
    argv: ['bench', 'app.ts', '--duration', '60', '--warmup', '0'],
    timeout: 10,
    cwd: dir,
    // A data folder of the test's own: bench removes its temporary one at the end, which a SIGKILL never reaches.
    env: { ...cleanEnv(), SVC_DATA_DIR: join(dir, 'data') },
    onSpawn: (p) => (pid = p),
  });
  clearInterval(poll);
  t.match(r, { success: false, exit_code: 1, stderr: /svc mcp: timed out after 10 s/ });
  t.ok(most >= 2, `bench had started the app: ${most} live processes in its group at most`);
  t.same(await leftInGroup(pid), [], 'none of them is left');
});
