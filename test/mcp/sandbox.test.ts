// run_svc and graph_visualize in their sandbox (the compiler tools' killable pool: pool.test.ts).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolInputError } from '../../mcp/index.ts';
import { graphVisualize, isolation, OUTPUT_LIMIT, runSvc } from '../../mcp/tools/run.ts';

const TODO = `import { Node, Walker, Root, entry, T } from 'svc';
export class Todo extends Node {
  static has = T.Object({ title: T.String() });
  declare title: string;
}
export class Main extends Walker {
  @entry(Root) async make(here: Root) {
    const a = await here.connect(new Todo({ title: 'a' }));
    await a.connect(new Todo({ title: 'b "quoted"' }));
    await here.connect(new Todo({ title: 'c' }));
    console.log('made three');
    this.report(a);
  }
}
export class Other extends Walker {
  static access = 'pub' as const;
  @entry(Root) hello() { this.report('hi'); }
}`;

const { namespaces: netns, cgroup, root } = isolation();

t.test('run_svc runs a module and its entry point', async (t) => {
  const main = (await runSvc({ code: TODO })) as { stdout: string; exit_code: number; warnings: string[] };
  t.equal(main.exit_code, 0);
  t.match(main.stdout, /made three/);
  t.match(JSON.parse(main.stdout.split('\n')[1] as string), [{ type: 'Todo', context: { title: 'a' } }], 'Main ran by default; its reports as JSON');
  const other = (await runSvc({ code: TODO, entrypoint: 'Other' })) as { stdout: string };
  t.equal(other.stdout.trim(), '["hi"]');
  const none = (await runSvc({ code: 'export const x = 1;' })) as { stdout: string; exit_code: number; error?: string };
  t.same([none.stdout, none.exit_code, none.error], ['', 0, undefined], 'no entry point: success, no output');
  const missing = (await runSvc({ code: TODO, entrypoint: 'Nope' })) as { exit_code: number; error: string };
  t.equal(missing.exit_code, 1);
  t.match(missing.error, /Nope/);
  const broken = (await runSvc({ code: 'export class {' })) as { exit_code: number; error: string };
  t.equal(broken.exit_code, 1);
  t.match(broken.error, /does not compile: main\.ts:1:/);
  await t.rejects(runSvc({ code: 'x'.repeat(101 * 1024) }), ToolInputError, 'over 100 KB refused');
  await t.rejects(runSvc({ code: TODO, timeout: 0 }), ToolInputError);
  await t.rejects(runSvc({ code: TODO, entrypoint: 'a; rm -rf /' }), ToolInputError);
});

t.test('reading outside its folder is denied', async (t) => {
  const r = (await runSvc({ code: `import { readFileSync } from 'node:fs'; console.log(readFileSync('/etc/hostname', 'utf8'));` })) as { exit_code: number; stderr: string; stdout: string };
  t.not(r.exit_code, 0);
  t.match(r.stderr, /ERR_ACCESS_DENIED/);
  t.equal(r.stdout, '');
  const env = (await runSvc({ code: `console.log(JSON.stringify(Object.keys(process.env)));` })) as { stdout: string };
  t.notMatch(env.stdout, /JWT_SECRET|SVC_MCP_TOKEN|npm_/, "the server's environment does not reach the run");
});

t.test('no network', { skip: netns ? false : 'no network namespace here (unshare -n not permitted)' }, async (t) => {
  const r = (await runSvc({
    code: `import { connect } from 'node:net';
const s = connect(80, '127.0.0.1');
s.on('connect', () => { console.log('connected'); process.exit(0); });
s.on('error', (e) => { console.log('refused', e.code); process.exit(3); });`,
  })) as { exit_code: number; stdout: string; warnings: string[] };
  t.equal(r.exit_code, 3);
  t.notMatch(r.stdout, /connected/);
  t.notOk(r.warnings.some((w) => /network/.test(w)));
});

t.test('processes: no fork bomb', async (t) => {
  const r = (await runSvc({ code: `import { spawn } from 'node:child_process'; const go = () => { spawn(process.execPath, ['-e', '1']); setImmediate(go); }; go();`, timeout: 5 })) as { exit_code: number; stderr: string };
  t.not(r.exit_code, 0);
  t.match(r.stderr, /ERR_ACCESS_DENIED/, 'starting a process is refused');
  const w = (await runSvc({ code: `import { Worker } from 'node:worker_threads'; new Worker('1', { eval: true });` })) as { stderr: string };
  t.match(w.stderr, /ERR_ACCESS_DENIED/, 'starting a thread is refused');
});

t.test('a memory hog is stopped', async (t) => {
  const r = (await runSvc({ code: `const keep = []; for (;;) keep.push(new Array(1e6).fill(7));`, timeout: 30 })) as { exit_code: number; error: string };
  t.not(r.exit_code, 0);
  t.match(r.error, /memory/);
});

t.test('cgroup limits where the machine has a writable cgroup', { skip: cgroup ? false : 'no writable cgroup here: the tool says so in warnings' }, async (t) => {
  const r = (await runSvc({ code: `console.log('ok');` })) as { warnings: string[] };
  t.same(r.warnings, [], 'no warning: network and cgroup isolation both in place');
});

t.test('output is capped, with a marker', async (t) => {
  const r = (await runSvc({ code: `for (let i = 0; i < 20000; i++) console.log('x'.repeat(99));` })) as { stdout: string };
  t.ok(Buffer.byteLength(r.stdout) < OUTPUT_LIMIT + 200);
  t.match(r.stdout, /…\[output truncated: \d+ more bytes\]$/);
});

t.test('killed at its timeout', async (t) => {
  const started = Date.now();
  const r = (await runSvc({ code: `for (;;) {}`, timeout: 1 })) as { exit_code: number; error: string };
  t.equal(r.exit_code, 124);
  t.match(r.error, /timed out after 1 s/);
  t.ok(Date.now() - started < 15_000, 'it did not run on');
});

t.test('nothing is read on its behalf while it is prepared', async (t) => {
  // Only transpiled in the server: an import of a file outside is resolved in the child, under its permissions.
  const text = (await runSvc({ code: `import s from '/etc/hostname' with { type: 'text' }; console.log('GOT', s);` })) as { stdout: string; exit_code: number };
  t.notMatch(text.stdout, /GOT/);
  t.not(text.exit_code, 0);
  const glob = (await runSvc({ code: 'const x = process.argv[9] ?? "*"; try { await import(`../${x}/main.mjs`); } catch (e) { console.log("refused", e.code); }' })) as { stdout: string };
  t.notMatch(glob.stdout, /svc-mcp-run-/, 'no other run listed');
});

t.test('it sees and signals no process of the host', { skip: netns ? false : 'no PID namespace here' }, async (t) => {
  const r = (await runSvc({ code: `for (const pid of [process.ppid, ${process.pid}]) { try { process.kill(pid, 'SIGKILL'); console.log('killed', pid); } catch (e) { console.log('refused', e.code); } }` })) as { stdout: string };
  t.notMatch(r.stdout, new RegExp(`killed ${process.pid}`), 'the server survives');
  t.pass(`this process (${process.pid}) is still here`);
});

t.test('runs as an unprivileged user, and unix sockets of others are closed to it', { skip: root ? false : 'the server is not root: the run is its own user' }, async (t) => {
  const who = (await runSvc({ code: 'console.log(process.getuid())' })) as { stdout: string };
  t.equal(who.stdout.trim(), '65534');
  const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-sock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'sock');
  const server = createServer((c) => c.end('secret'));
  await new Promise<void>((ok) => server.listen(path, ok));
  t.teardown(() => server.close());
  const r = (await runSvc({ code: `import { connect } from 'node:net'; const c = connect({ path: ${JSON.stringify(path)} }); c.on('data', (d) => console.log('GOT', String(d))); c.on('error', (e) => console.log('refused', e.code));` })) as { stdout: string };
  t.notMatch(r.stdout, /GOT/);
  t.match(r.stdout, /refused/);
});

t.test('a file larger than 64 MB is refused', async (t) => {
  const r = (await runSvc({ code: `import { writeFileSync } from 'node:fs'; writeFileSync('big', Buffer.alloc(100 * 1024 * 1024));` })) as { exit_code: number; error: string };
  t.not(r.exit_code, 0);
  t.match(r.error, /larger than 64 MB|EFBIG/);
});

t.test('graph_visualize does not trust a graph the module wrote', async (t) => {
  const forged = `import { writeFileSync } from 'node:fs';
const nodes = Array.from({ length: 2000 }, (_, i) => ({ id: 'n' + i, type: 'Fake' }));
writeFileSync('graph.json', JSON.stringify({ nodes, edges: [], truncated: false }));
process.exit(0);`;
  const limited = (await graphVisualize({ code: forged, format: 'json', node_limit: 5 })) as { graph: { nodes: unknown[]; truncated: boolean } };
  t.equal(limited.graph.nodes.length, 5, 'node_limit applied by the server');
  t.equal(limited.graph.truncated, true);
  const huge = (await graphVisualize({ code: `import { writeFileSync } from 'node:fs'; writeFileSync('graph.json', '[' + '0,'.repeat(5e6) + '0]'); process.exit(0);`, format: 'json' })) as { graph: { nodes: { type: string }[] }; error: string };
  t.match(huge.error, /larger than 8 MB/);
  t.same(huge.graph.nodes.map((n) => n.type), ['Root'], 'the root alone');
  const wrong = (await graphVisualize({ code: `import { writeFileSync } from 'node:fs'; writeFileSync('graph.json', '{"nodes": 1}'); process.exit(0);`, format: 'json' })) as { error: string };
  t.match(wrong.error, /not a graph/);
});

t.test('run_svc passes args to its entry point', async (t) => {
  const code = `import { Walker, Root, entry, fn, T } from 'svc';
export class Greet extends Walker { static has = T.Object({ name: T.String() }); declare name: string; @entry(Root) hi() { this.report('hi ' + this.name); } }
export const add = fn({ params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => a + b);`;
  t.equal(((await runSvc({ code, entrypoint: 'Greet', args: { name: 'ada' } })) as { stdout: string }).stdout.trim(), '["hi ada"]');
  t.equal(((await runSvc({ code, entrypoint: 'add', args: { a: 2, b: 3 } })) as { stdout: string }).stdout.trim(), '5');
  const missing = (await runSvc({ code, entrypoint: 'Greet' })) as { error: string };
  t.match(missing.error, /name/);
  await t.rejects(runSvc({ code, args: { name: 'x' } }), ToolInputError, 'args without an entrypoint');
  await t.rejects(runSvc({ code, entrypoint: 'Greet', args: [] as unknown as Record<string, unknown> }), ToolInputError);
  const seeded = (await graphVisualize({ code: TODO.replace('export class Main', 'export class Seed'), entrypoint: 'Seed', format: 'json' })) as { graph: { nodes: unknown[] } };
  t.equal(seeded.graph.nodes.length, 4, 'graph_visualize runs its entrypoint too');
});

t.test('graph_visualize', async (t) => {
  const dot = (await graphVisualize({ code: TODO })) as { graph: string; program_output: string };
  t.match(dot.graph, /^digraph svc \{/);
  t.equal((dot.graph.match(/ -> /g) ?? []).length, 3, 'three edges');
  t.match(dot.program_output, /made three/);
  const hasDot = spawnSync('dot', ['-V']).status === 0;
  t.test('graphviz renders the DOT', { skip: hasDot ? false : 'graphviz (dot) is not installed' }, async (t) => {
    const svg = spawnSync('dot', ['-Tsvg'], { input: dot.graph, encoding: 'utf8' });
    t.equal(svg.status, 0, svg.stderr);
    t.match(svg.stdout, /<svg/);
    t.match(svg.stdout, /b &quot;quoted&quot;|b \\?"quoted/, 'labels escaped and kept');
  });
  const json = (await graphVisualize({ code: TODO, format: 'json', depth: 1 })) as { graph: { nodes: { type: string }[]; edges: unknown[] } };
  t.same(
    json.graph.nodes.map((n) => n.type),
    ['Root', 'Todo', 'Todo'],
    'depth 1: the root and its two children',
  );
  const limited = (await graphVisualize({ code: TODO, format: 'json', node_limit: 2, edge_limit: 1 })) as { graph: { nodes: unknown[]; edges: unknown[]; truncated: boolean } };
  t.equal(limited.graph.nodes.length, 2);
  t.ok(limited.graph.edges.length <= 1);
  t.equal(limited.graph.truncated, true);
  const dfs = (await graphVisualize({ code: TODO, format: 'json', bfs: false })) as { graph: { nodes: { context?: { title?: string } }[] } };
  t.same(
    dfs.graph.nodes.map((n) => n.context?.title),
    [undefined, 'a', 'b "quoted"', 'c'],
    'depth-first: a child before its sibling',
  );
  const failed = (await graphVisualize({ code: 'throw new Error("boom")' })) as { graph: string; error: string };
  t.match(failed.graph, /Root/, 'always at least a root');
  t.match(failed.error, /boom/);
  await t.rejects(graphVisualize({ code: TODO, format: 'svg' as 'dot' }), ToolInputError);
});
