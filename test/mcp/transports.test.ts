// `svc mcp` as a client sees it: the real command over stdio, SSE and streamable HTTP, an SDK Client on each.
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

// Each case starts `svc mcp` (seven in all), whose compiler pool warms a TypeScript program: slow on a busy machine.
t.setTimeout(300_000);

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/svc.mjs');
// A project folder of its own: no svc.toml of the repository's applies.
const project = mkdtempSync(join(tmpdir(), 'svc-mcp-test-'));
t.teardown(() => rmSync(project, { recursive: true, force: true }));

/**
 * Start `svc mcp` over HTTP; resolves once it prints where it serves, with the bearer token it requires (with no
 * [mcp] token on loopback: the one it keeps in the project's .svc/mcp_token).
 */
async function serveHttp(t: Test, transport: 'sse' | 'streamable-http', env: Record<string, string> = {}): Promise<{ url: string; proc: ChildProcess; token: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'mcp', '--transport', transport, '--port', '0', '--host', '127.0.0.1'], { cwd: project, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const token = env.SVC_MCP_TOKEN ?? readFileSync(join(project, '.svc/mcp_token'), 'utf8').trim();
  return { url, proc, token, stderr: () => stderr };
}

async function connect(t: Test, transport: Transport): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  return client;
}

type Kind = 'stdio' | 'sse' | 'streamable-http';
async function clientOver(t: Test, kind: Kind, env: Record<string, string> = {}): Promise<Client> {
  if (kind === 'stdio') {
    return connect(t, new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], cwd: project, env: { ...(process.env as Record<string, string>), ...env }, stderr: 'ignore' }));
  }
  const { url, token } = await serveHttp(t, kind, env);
  const requestInit = { headers: { authorization: `Bearer ${token}` } };
  return connect(t, kind === 'sse' ? new SSEClientTransport(new URL(url), { requestInit }) : new StreamableHTTPClientTransport(new URL(url), { requestInit }));
}

const text = (r: Record<string, unknown>): Record<string, unknown> => JSON.parse(((r.content as { type: string; text: string }[])[0] as { text: string }).text);

const seen: Record<string, { tools: string[]; prompts: string[]; resources: string[]; format: unknown; explain: unknown }> = {};

for (const kind of ['stdio', 'sse', 'streamable-http'] as const) {
  t.test(`${kind}: lists, and the same answers`, async (t) => {
    const client = await clientOver(t, kind);
    const tools = (await client.listTools()).tools.map((x) => x.name).sort();
    t.equal(tools.length, 18, '18 tools without enable_ast');
    t.notOk(tools.includes('get_ast'), 'get_ast is off by default');
    for (const name of ['validate_svc', 'run_svc', 'execute_command', 'graph_visualize', 'understand_svc']) t.ok(tools.includes(name), name);
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();
    t.equal(prompts.length, 9, '9 prompts');
    const resources = (await client.listResources()).resources.map((r) => r.uri).sort();
    t.ok(resources.includes('svc://grammar/spec') && resources.includes('svc://guide/pitfalls'), 'resources listed');
    // A tool: one text item holding the JSON, and the same object as structuredContent.
    const formatted = await client.callTool({ name: 'format_svc', arguments: { code: 'const   a=1' } });
    t.same(text(formatted), formatted.structuredContent, 'text and structuredContent agree');
    t.equal((formatted.structuredContent as { formatted: string }).formatted, 'const a = 1;\n');
    const explained = await client.callTool({ name: 'explain_error', arguments: { error_message: 'UNAUTHORIZED: a token is required' } });
    // Bad input: an error result, not a dropped connection.
    const wrong = await client.callTool({ name: 'format_svc', arguments: { code: 42 } });
    t.ok(wrong.isError, 'a wrong type is an error result');
    const huge = await client.callTool({ name: 'format_svc', arguments: { code: 'x'.repeat(101 * 1024) } });
    t.ok(huge.isError, 'over 100 KB is refused');
    t.match(JSON.stringify(huge.content), /100 KB/);
    const prompt = await client.getPrompt({ name: 'write_walker', arguments: { name: 'Count', purpose: 'count todos', node_types: 'Todo' } });
    t.match(JSON.stringify(prompt.messages), /validate_svc/, 'prompts end asking to validate');
    const commands = await client.callTool({ name: 'list_commands', arguments: {} });
    t.notOk(commands.isError, 'the CLI table reached the tool server');
    t.ok((commands.structuredContent as { commands: { name: string }[] }).commands.some((c) => c.name === 'start'));
    const refused = await client.callTool({ name: 'execute_command', arguments: { command: 'mcp' } });
    t.equal((refused.structuredContent as { exit_code: number }).exit_code, 2, 'execute_command refuses mcp');
    const spec = await client.readResource({ uri: 'svc://grammar/spec' });
    t.match(JSON.stringify(spec.contents), /Walker/, 'the generated API reference');
    seen[kind] = { tools, prompts, resources, format: formatted.structuredContent, explain: explained.structuredContent };
  });
}

t.test('every transport sees the same lists and results', async (t) => {
  const kinds = Object.keys(seen);
  t.equal(kinds.length, 3);
  for (const k of kinds.slice(1)) t.same(seen[k], seen[kinds[0] as string], `${k} = ${kinds[0]}`);
});

t.test('HTTP on loopback with no [mcp] token: one is made, kept 0600 in .svc/mcp_token, its path logged, and required', async (t) => {
  const { url, token, stderr } = await serveHttp(t, 'streamable-http');
  const file = join(project, '.svc/mcp_token');
  t.ok(token.length >= 32, 'a long random token');
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only');
  t.match(stderr(), file, 'where it is kept is logged');
  t.notOk(stderr().includes(token), 'its value is not');
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const post = (headers: Record<string, string>) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
  const without = await post({});
  t.equal(without.status, 401, 'a client without it (any local user) is refused');
  await without.body?.cancel();
  const withIt = await post({ authorization: `Bearer ${token}` });
  t.equal(withIt.status, 200, 'with it: served');
  await withIt.body?.cancel();
  // A second start keeps the same token (a client's configuration stays valid).
  const again = await serveHttp(t, 'sse');
  t.equal(again.token, token);
});

t.test('enable_ast offers get_ast: 19 tools', async (t) => {
  const client = await clientOver(t, 'stdio', { SVC_MCP_ENABLE_AST: 'true' });
  const tools = (await client.listTools()).tools.map((x) => x.name);
  t.equal(tools.length, 19);
  const ast = await client.callTool({ name: 'get_ast', arguments: { code: 'const a = 1;' } });
  t.notOk(ast.isError);
});

t.test('stdio: nothing but protocol messages on stdout', async (t) => {
  const proc = spawn(process.execPath, [BIN, 'mcp'], { cwd: project, stdio: ['pipe', 'pipe', 'pipe'] });
  t.teardown(() => proc.kill('SIGKILL'));
  const lines: string[] = [];
  const rl = createInterface({ input: proc.stdout });
  const answered = new Promise<void>((resolve) =>
    rl.on('line', (line) => {
      lines.push(line);
      if (lines.length === 2) resolve();
    }),
  );
  const send = (msg: unknown) => proc.stdin.write(`${JSON.stringify(msg)}\n`);
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  // A tool that runs code and logs (its output must not reach the protocol stream).
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'lint_svc', arguments: { code: 'var a = 1; console.log(a);' } } });
  await answered;
  for (const line of lines) {
    const msg = JSON.parse(line) as { jsonrpc: string };
    t.equal(msg.jsonrpc, '2.0', 'a JSON-RPC message');
  }
});

t.test('--inspect prints resources, tools and prompts (golden)', async (t) => {
  const out = spawnSync(process.execPath, [BIN, 'mcp', '--inspect'], { cwd: project, encoding: 'utf8' });
  t.equal(out.status, 0, out.stderr);
  const golden = readFileSync(new URL('./inspect.golden.txt', import.meta.url), 'utf8');
  t.equal(out.stdout, golden, 'matches test/mcp/inspect.golden.txt');
});

t.test('usage errors exit 2', async (t) => {
  const bad = spawnSync(process.execPath, [BIN, 'mcp', '--transport', 'carrier-pigeon'], { cwd: project, encoding: 'utf8' });
  t.equal(bad.status, 2);
  t.match(bad.stderr, /--transport is one of stdio, sse, streamable-http/);
  // Beyond loopback without a token: refused before listening (nothing is bound).
  const open = spawnSync(process.execPath, [BIN, 'mcp', '--transport', 'streamable-http', '--host', '0.0.0.0', '--port', '0'], { cwd: project, encoding: 'utf8', env: { ...process.env, SVC_MCP_TOKEN: '' } });
  t.equal(open.status, 2);
  t.match(open.stderr, /no token/);
});
