/**
 * The tool server's figures (issue 21):
 * - `run_svc` cold start: one run of a small module, start to answer (the
 *   bundle, the sandboxed child's start, the run), median of several;
 * - `validate_svc` on a 2,000-line module through the server (warm), p50/p99;
 * - tools per second over streamable HTTP, against `svc mcp` running as its
 *   own process: a tool answered in the server's thread (`explain_error`) and
 *   one answered on the compiler pool (`format_svc`), from 8 client sessions.
 *
 * `--loaded` (issue 35): `validate_svc` of a ~150-line app through `svc mcp`
 * over streamable HTTP, one call after another, first on the machine as it is,
 * then with every core kept busy (one busy-loop process per core for the
 * whole measurement): the first call after start, p50, p99, max, and how many
 * calls failed (a deadline missed). Written as `mcp-loaded-<time>.json`.
 *
 *   node --import tsx bench/mcp.ts        (npm run bench:mcp; --quick: fewer rounds; --loaded: see above)
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { runSvc } from '../mcp/tools/run.ts';
import { machine, median, percentile, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const loaded = process.argv.includes('--loaded');
const ROOT = new URL('..', import.meta.url).pathname;
/** `svc mcp` over HTTP needs a bearer token (loopback included): one for the run. */
const TOKEN = randomBytes(24).toString('base64url');
const AUTH = { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } };

const SMALL = `import { Node, Walker, Root, entry, T } from 'svc';
export class Todo extends Node { static has = T.Object({ title: T.String() }); declare title: string; }
export class Main extends Walker {
  @entry(Root) async make(here: Root) { this.report(await here.connect(new Todo({ title: 'a' }))); }
}`;

/** A 2,000-line module: 100 node classes and 100 walkers over them. */
function bigModule(): string {
  const lines = [`import { Node, Walker, Root, entry, T } from 'svc';`];
  for (let i = 0; lines.length < 2000; i++) {
    lines.push(
      `export class Item${i} extends Node {`,
      `  static has = T.Object({ name: T.String(), count: T.Integer({ default: 0 }), tags: T.Array(T.String(), { default: [] }) });`,
      `  declare name: string;`,
      `  declare count: number;`,
      `  declare tags: string[];`,
      `}`,
      `export class Make${i} extends Walker {`,
      `  static has = T.Object({ name: T.String() });`,
      `  declare name: string;`,
      `  @entry(Root) async make(here: Root) {`,
      `    const made = await here.connect(new Item${i}({ name: this.name }));`,
      `    made.count += 1;`,
      `    this.report(made);`,
      `  }`,
      `}`,
      ``,
    );
  }
  return lines.slice(0, 2000).join('\n');
}

async function serveMcp(): Promise<{ url: string; stop(): void }> {
  const cwd = mkdtempSync(join(tmpdir(), 'svc-bench-mcp-'));
  const proc = spawn(process.execPath, [join(ROOT, 'bin/svc.mjs'), 'mcp', '--transport', 'streamable-http', '--port', '0', '--host', '127.0.0.1'], { cwd, env: { ...process.env, SVC_MCP_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const m = /serving \S+ at (\S+)/.exec(line);
      if (m) resolve(m[1] as string);
    });
    proc.once('exit', (code) => reject(new Error(`svc mcp exited (${code})`)));
  });
  return {
    url,
    stop: () => {
      proc.kill('SIGTERM');
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}

async function toolsPerSecond(url: string, tool: string, args: Record<string, unknown>, seconds: number): Promise<{ tools_per_s: number; p50_ms: number; p99_ms: number }> {
  const clients: Client[] = [];
  for (let i = 0; i < 8; i++) {
    const c = new Client({ name: `bench-${i}`, version: '1' });
    await c.connect(new StreamableHTTPClientTransport(new URL(url), AUTH));
    clients.push(c);
  }
  const lat: number[] = [];
  for (const c of clients) await c.callTool({ name: tool, arguments: args }); // warm
  const until = performance.now() + seconds * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        const r = await c.callTool({ name: tool, arguments: args });
        if (r.isError) throw new Error(`${tool} failed: ${JSON.stringify(r.content)}`);
        lat.push(performance.now() - t0);
        done++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  for (const c of clients) await c.close();
  const sorted = lat.sort((a, b) => a - b);
  return { tools_per_s: Math.round(done / elapsed), p50_ms: round(percentile(sorted, 50), 2), p99_ms: round(percentile(sorted, 99), 2) };
}

/** The todo example grown to about 150 lines: a second node type, an edge, walkers over both. */
function app150(): string {
  const todo = readFileSync(join(ROOT, 'examples/todo/app.ts'), 'utf8').replace("import { APIProtocol, entry, fn, HTTPMethod, Node, restspec, Root, T, Walker } from 'svc';", "import { APIProtocol, Edge, entry, fn, HTTPMethod, Node, restspec, Root, T, Walker } from 'svc';");
  const more = `
export class Tagged extends Edge {}

export class Tag extends Node {
  static has = T.Object({ name: T.String({ minLength: 1, maxLength: 40 }), color: T.String({ default: 'grey' }) });
  declare name: string;
  declare color: string;
}

export class TagTodo extends Walker {
  static has = T.Object({ id: T.String(), tag: T.String({ minLength: 1, maxLength: 40 }) });
  declare id: string;
  declare tag: string;

  @entry(Root) async tagIt(here: Root) {
    const [todo] = await here.out(Todo, (t) => t.id === this.id);
    if (!todo) return;
    const [existing] = await here.out(Tag, (t) => t.name === this.tag);
    const tag = existing ?? (await here.connect(new Tag({ name: this.tag })));
    await todo.connect(tag, new Tagged());
    this.report({ todo: todo.id, tag: tag.name });
  }
}

export class TodosByTag extends Walker {
  static has = T.Object({ tag: T.String() });
  declare tag: string;

  @entry(Root) async start(here: Root) {
    this.visit(await here.out(Tag, (t) => t.name === this.tag));
  }

  @entry(Tag) async each(here: Tag) {
    for (const todo of await here.in(Todo)) this.report({ title: todo.title, done: todo.done });
  }
}

export class UntagTodo extends Walker {
  static has = T.Object({ id: T.String(), tag: T.String() });
  declare id: string;
  declare tag: string;

  @entry(Root) async untag(here: Root) {
    const [todo] = await here.out(Todo, (t) => t.id === this.id);
    if (!todo) return;
    for (const tag of await todo.out(Tag, (t) => t.name === this.tag)) await todo.disconnect(tag);
    this.report({ todo: todo.id, untagged: this.tag });
  }
}

export const tagCounts = fn({}, async (_args, ctx) => {
  const tags = await ctx.root.out(Tag);
  const counts: Record<string, number> = {};
  for (const tag of tags) counts[tag.name] = (await tag.in(Todo)).length;
  return counts;
});
`;
  return `${todo}${more}`;
}

/** One busy-loop process per core, until stopped. */
function burnCores(): { count: number; stop(): void } {
  const count = availableParallelism();
  const procs: ChildProcess[] = [];
  for (let i = 0; i < count; i++) procs.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  return { count, stop: () => procs.forEach((p) => p.kill('SIGKILL')) };
}

/** validate_svc of the ~150-line app through a fresh `svc mcp`, `rounds` calls one after another (each an edit). */
async function validate150(rounds: number): Promise<Record<string, unknown>> {
  const started = performance.now();
  const server = await serveMcp();
  try {
    const client = new Client({ name: 'bench-validate-150', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), AUTH));
    const code = app150();
    const lat: number[] = [];
    const errors: string[] = [];
    let firstMs = 0;
    let startToFirst = 0;
    let valid: boolean | undefined;
    for (let i = 0; i <= rounds; i++) {
      const edited = code.replace("color: T.String({ default: 'grey' })", `color: T.String({ default: 'grey${i}' })`);
      const t0 = performance.now();
      const r = await client.callTool({ name: 'validate_svc', arguments: { code: edited } }, undefined, { timeout: 120_000 });
      const ms = performance.now() - t0;
      if (r.isError) errors.push(JSON.stringify(r.content).slice(0, 200));
      else valid ??= (r.structuredContent as { valid: boolean }).valid;
      if (i === 0) {
        firstMs = ms;
        startToFirst = performance.now() - started;
      } else lat.push(ms);
    }
    await client.close();
    const sorted = lat.sort((a, b) => a - b);
    return {
      lines: code.split('\n').length,
      valid,
      server_start_to_first_answer_ms: round(startToFirst, 1),
      first_call_ms: round(firstMs, 1),
      calls: sorted.length,
      p50_ms: round(percentile(sorted, 50), 1),
      p99_ms: round(percentile(sorted, 99), 1),
      max_ms: round(sorted.at(-1) ?? NaN, 1),
      failed: errors.length,
      failures: errors.slice(0, 3),
    };
  } finally {
    server.stop();
  }
}

async function mainLoaded(): Promise<void> {
  const rounds = quick ? 20 : 60;
  const results: Record<string, unknown> = { load_average_before: loadavg().map((x) => round(x, 2)) };
  results.validate_150_as_is = await validate150(rounds);
  process.stderr.write(`bench: validate_svc ~150 lines, machine as it is: ${JSON.stringify(results.validate_150_as_is)}\n`);
  const burn = burnCores();
  try {
    results.validate_150_all_cores_busy = { busy_processes: burn.count, ...(await validate150(rounds)) };
  } finally {
    burn.stop();
  }
  process.stderr.write(`bench: validate_svc ~150 lines, every core busy: ${JSON.stringify(results.validate_150_all_cores_busy)}\n`);
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const tools = Object.fromEntries(['typescript', 'piscina', '@modelcontextprotocol/sdk'].map((n) => [n, lock.packages[`node_modules/${n}`]?.version]));
  const file = save('mcp-loaded', { bench: 'mcp --loaded', at: new Date().toISOString(), quick, machine: { ...machine(), tool_versions: tools }, results });
  console.log(JSON.stringify(results, null, 2));
  process.stderr.write(`bench: wrote ${file}\n`);
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = {};
  // run_svc cold start: each run is a new bundle and a new child.
  const cold: number[] = [];
  for (let i = 0; i < (quick ? 3 : 7); i++) {
    const t0 = performance.now();
    const r = (await runSvc({ code: SMALL })) as { exit_code: number };
    if (r.exit_code !== 0) throw new Error('run_svc failed');
    cold.push(performance.now() - t0);
  }
  results.run_svc_cold_start_ms = { median: round(median(cold), 1), runs: cold.map((x) => round(x, 1)) };
  process.stderr.write(`bench: run_svc cold start median ${round(median(cold), 1)} ms\n`);

  const server = await serveMcp();
  try {
    const client = new Client({ name: 'bench-validate', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), AUTH));
    const code = bigModule();
    const first = performance.now();
    const v = await client.callTool({ name: 'validate_svc', arguments: { code } });
    const firstMs = performance.now() - first;
    if (v.isError) throw new Error(`validate_svc failed: ${JSON.stringify(v.content)}`);
    const lat: number[] = [];
    for (let i = 0; i < (quick ? 10 : 40); i++) {
      // A different module each time (an edit), as an editor would send.
      const edited = code.replace('made.count += 1;', `made.count += ${i + 2};`);
      const t0 = performance.now();
      await client.callTool({ name: 'validate_svc', arguments: { code: edited } });
      lat.push(performance.now() - t0);
    }
    await client.close();
    const sorted = lat.sort((a, b) => a - b);
    results.validate_2000_lines = { lines: code.split('\n').length, bytes: Buffer.byteLength(code), first_ms: round(firstMs, 1), warm_p50_ms: round(percentile(sorted, 50), 1), warm_p99_ms: round(percentile(sorted, 99), 1), valid: (v.structuredContent as { valid: boolean }).valid };
    process.stderr.write(`bench: validate_svc 2,000 lines first ${round(firstMs, 0)} ms, warm p50 ${round(percentile(sorted, 50), 1)} ms p99 ${round(percentile(sorted, 99), 1)} ms\n`);
    const seconds = quick ? 2 : 5;
    results.streamable_http_explain_error = await toolsPerSecond(server.url, 'explain_error', { error_message: 'TS2339: Property nope does not exist' }, seconds);
    results.streamable_http_format_svc = await toolsPerSecond(server.url, 'format_svc', { code: SMALL }, seconds);
    process.stderr.write(`bench: tools/s over streamable HTTP: explain_error ${JSON.stringify(results.streamable_http_explain_error)}, format_svc ${JSON.stringify(results.streamable_http_format_svc)}\n`);
  } finally {
    server.stop();
  }
  const file = save('mcp', { bench: 'mcp', at: new Date().toISOString(), quick, machine: machine(), results });
  console.log(JSON.stringify(results, null, 2));
  process.stderr.write(`bench: wrote ${file}\n`);
}

await (loaded ? mainLoaded() : main());
