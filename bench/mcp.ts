/**
 * The tool server's figures (issue 21):
 * - `run_svc` cold start: one run of a small module, start to answer (the
 *   bundle, the sandboxed child's start, the run), median of several;
 * - `validate_svc` on a 2,000-line module through the server (warm), p50/p99;
 * - tools per second over streamable HTTP, against `svc mcp` running as its
 *   own process: a tool answered in the server's thread (`explain_error`) and
 *   one answered on the compiler pool (`format_svc`), from 8 client sessions.
 *
 *   node --import tsx bench/mcp.ts        (npm run bench:mcp; --quick: fewer rounds)
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { runSvc } from '../transports/mcp/tools/run.ts';
import { machine, median, percentile, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const ROOT = new URL('..', import.meta.url).pathname;

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
  const proc = spawn(process.execPath, [join(ROOT, 'bin/svc.mjs'), 'mcp', '--transport', 'streamable-http', '--port', '0', '--host', '127.0.0.1'], { cwd, stdio: ['ignore', 'pipe', 'ignore'] });
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
    await c.connect(new StreamableHTTPClientTransport(new URL(url)));
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
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
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

await main();
