// The HTTP transports' gate: Host and Origin (DNS rebinding), the bearer token, bodies, routes.
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'node:http';
import { commandTable } from '../../cli/table.ts';
import { createMcpServer, isLoopback, listenMcpHttp, MCP_DEFAULTS, McpConfigError, ToolPool, useCommandTable } from '../../mcp/index.ts';

const TOKEN = 'mcp-test-token-0123456789abcdef';
useCommandTable(commandTable());
const pool = await ToolPool.start();
t.teardown(() => pool.close());

/** One raw request (node:http lets a test send any Host). */
function raw(port: number, path: string, options: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'POST', headers: options.headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
const jsonHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

t.test('streamable HTTP with a token', async (t) => {
  const http = await listenMcpHttp({ transport: 'streamable-http', host: '127.0.0.1', port: 0, token: TOKEN, newServer: () => createMcpServer(MCP_DEFAULTS, pool) });
  t.teardown(() => http.close());
  const host = `127.0.0.1:${http.port}`;
  const without = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, host }, body: init });
  t.equal(without.status, 401, 'no token: 401');
  t.match(without.headers['www-authenticate'], /Bearer/);
  const forged = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, host, authorization: `Bearer ${TOKEN.slice(0, -1)}x` }, body: init });
  t.equal(forged.status, 401, 'a forged token: 401');
  const notBearer = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, host, authorization: `Basic ${TOKEN}` }, body: init });
  t.equal(notBearer.status, 401, 'another scheme: 401');
  const auth = { authorization: `Bearer ${TOKEN}` };
  const rebound = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host: `evil.example:${http.port}` }, body: init });
  t.equal(rebound.status, 403, 'a foreign Host: 403');
  t.match(JSON.parse(rebound.body), { jsonrpc: '2.0', error: { message: /Host/ } });
  const origin = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host, origin: 'http://evil.example' }, body: init });
  t.equal(origin.status, 403, 'a foreign Origin: 403');
  const own = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host: `localhost:${http.port}`, origin: `http://localhost:${http.port}` }, body: init });
  t.equal(own.status, 200, 'its own Host and Origin: served');
  t.ok(own.headers['mcp-session-id'], 'a session began');
  const notJson = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host }, body: '{"jsonrpc":' });
  t.equal(notJson.status, 400, 'malformed JSON: 400');
  const big = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host }, body: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) }) });
  t.equal(big.status, 413, 'over 1 MB: 413');
  const unknown = await raw(http.port, '/nope', { headers: { ...auth, host }, method: 'GET' });
  t.equal(unknown.status, 404, 'unknown route: 404');
  const noSession = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host, 'mcp-session-id': 'not-a-session' }, body: init });
  t.equal(noSession.status, 404, 'an unknown session: 404');
  const first = await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  t.equal(first.status, 400, 'a session starts with initialize');

  // A real client, with the token.
  const client = new Client({ name: 't', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: auth } }));
  t.teardown(() => client.close());
  const r = await client.callTool({ name: 'search_docs', arguments: { query: 'walker spawn at a node', limit: 3 } });
  t.notOk(r.isError);
  t.ok(((r.structuredContent as { results: unknown[] }).results ?? []).length > 0, 'search answers');
});

t.test('SSE', async (t) => {
  const http = await listenMcpHttp({ transport: 'sse', host: '127.0.0.1', port: 0, token: TOKEN, newServer: () => createMcpServer(MCP_DEFAULTS, pool) });
  t.teardown(() => http.close());
  const wrongHost = await raw(http.port, '/sse', { method: 'GET', headers: { host: 'attacker.example' } });
  t.equal(wrongHost.status, 403);
  const noToken = await raw(http.port, '/sse', { method: 'GET', headers: { host: `127.0.0.1:${http.port}` } });
  t.equal(noToken.status, 401, 'the event stream needs the token too');
  const noSession = await raw(http.port, '/messages/?sessionId=nope', { headers: { 'content-type': 'application/json', host: `127.0.0.1:${http.port}`, authorization: `Bearer ${TOKEN}` }, body: init });
  t.equal(noSession.status, 404);
  const client = new Client({ name: 't', version: '1' });
  await client.connect(new SSEClientTransport(new URL(http.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  t.teardown(() => client.close());
  t.equal((await client.listPrompts()).prompts.length, 9);
});

t.test('bound to another loopback address (127.0.0.2), that address is a Host and an Origin of the server', { skip: process.platform === 'linux' ? false : 'binds 127.0.0.2 (all of 127/8 is loopback on Linux)' }, async (t) => {
  const http = await listenMcpHttp({ transport: 'streamable-http', host: '127.0.0.2', port: 0, token: TOKEN, newServer: () => createMcpServer(MCP_DEFAULTS, pool) });
  t.teardown(() => http.close());
  t.equal(http.url, `http://127.0.0.2:${http.port}/mcp`);
  const send = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.2', port: http.port, path: '/mcp', method: 'POST', headers: { ...jsonHeaders, authorization: `Bearer ${TOKEN}`, ...headers } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(init);
    });
  t.equal(await send({ host: `127.0.0.2:${http.port}` }), 200, 'its own address: served');
  t.equal(await send({ host: `127.0.0.2:${http.port}`, origin: `http://127.0.0.2:${http.port}` }), 200, 'and as an Origin');
  t.equal(await send({ host: `localhost:${http.port}` }), 200, 'localhost still');
  t.equal(await send({ host: `127.0.0.3:${http.port}` }), 403, 'another address: 403');
  t.equal(await send({ host: `evil.example:${http.port}` }), 403, 'a foreign name: 403');
  // And a real client, at the URL the server gives.
  const client = new Client({ name: 't', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  t.teardown(() => client.close());
  const r = await client.callTool({ name: 'get_resource', arguments: { uri: 'SVC://DOCS/osp' } });
  t.notOk(r.isError, 'SVC://DOCS/osp: scheme and authority of any case');
  t.equal((r.structuredContent as { uri: string }).uri, 'svc://docs/osp');
});

t.test('a token is required, on loopback too', async (t) => {
  t.ok(isLoopback('127.0.0.1') && isLoopback('localhost') && isLoopback('::1') && isLoopback('[::1]'));
  t.notOk(isLoopback('0.0.0.0') || isLoopback('10.0.0.1') || isLoopback('::'));
  // Refused before binding anything.
  await t.rejects(listenMcpHttp({ transport: 'sse', host: '0.0.0.0', port: 0, newServer: () => createMcpServer(MCP_DEFAULTS, pool) }), { name: 'McpConfigError', message: /beyond this machine/ });
  // Any user of the machine reaches a loopback port, and three tools run code.
  await t.rejects(listenMcpHttp({ transport: 'streamable-http', host: '127.0.0.1', port: 0, newServer: () => createMcpServer(MCP_DEFAULTS, pool) }), { name: 'McpConfigError', message: /even on loopback/ });
  await t.rejects(listenMcpHttp({ transport: 'sse', host: '127.0.0.1', port: 0, token: 'short', newServer: () => createMcpServer(MCP_DEFAULTS, pool) }), McpConfigError);
});

t.test('sessions: idle ones close, and there is a ceiling', async (t) => {
  const http = await listenMcpHttp({ transport: 'streamable-http', host: '127.0.0.1', port: 0, token: TOKEN, sessionIdleMs: 200, maxSessions: 2, newServer: () => createMcpServer(MCP_DEFAULTS, pool) });
  t.teardown(() => http.close());
  const host = `127.0.0.1:${http.port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const open = async () => raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host }, body: init });
  const a = await open();
  const b = await open();
  t.equal(a.status, 200);
  t.equal(b.status, 200);
  const c = await open();
  t.equal(c.status, 503, 'a third session over the ceiling: 503');
  t.equal(c.headers['retry-after'], '5');
  // Left idle, sessions are closed: polled by asking for a new one (which touches neither), until there is room.
  const sid = a.headers['mcp-session-id'] as string;
  let status = 503;
  for (let i = 0; i < 400 && status === 503; i++) {
    await new Promise((r) => setTimeout(r, 25));
    status = (await open()).status;
  }
  t.equal(status, 200, 'room again: the idle sessions were closed');
  const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  t.equal((await raw(http.port, '/mcp', { headers: { ...jsonHeaders, ...auth, host, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, body: list })).status, 404, 'an expired id answers 404');
});

t.test('tool calls: unknown arguments, lookups, and what execute_command may run', async (t) => {
  const http = await listenMcpHttp({ transport: 'streamable-http', host: '127.0.0.1', port: 0, token: TOKEN, newServer: () => createMcpServer(MCP_DEFAULTS, pool) });
  t.teardown(() => http.close());
  const client = new Client({ name: 't', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  t.teardown(() => client.close());
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
  const unknown = await call('run_svc', { code: 'export const a = 1;', argz: { x: 1 } });
  t.ok(unknown.isError, 'a misspelt argument is an error, not silently dropped');
  t.match(JSON.stringify(unknown.content), /argz/);
  t.ok((await call('get_resource', { uri: 'svc://docs/nope' })).isError, 'an unknown resource: isError');
  t.ok((await call('get_example', { name: 'nope' })).isError, 'an unknown example: isError');
  const ran = await call('run_svc', { code: 'throw new Error("boom")' });
  t.notOk(ran.isError, "run_svc's own failure is its result, not a failed call");
  t.match((ran.structuredContent as { error: string }).error, /boom/);
  const refusals: [string, string[]][] = [
    ['token', ['alice', '--create', '--role', 'admin']],
    ['start', ['app.ts']],
    ['start', ['--faux', '/tmp/evil.mjs']],
    ['start', ['--faux', '../outside/app.ts']],
    ['init', ['x', '--force']],
    ['db', ['copy', '--to', 'postgres://h/db']],
    ['bench', ['http://127.0.0.1:1']],
    ['mcp', []],
  ];
  for (const [command, args] of refusals) {
    const r = (await call('execute_command', { command, args })).structuredContent as { exit_code: number; stdout: string };
    t.equal(r.exit_code, 2, `svc ${command} ${args.join(' ')}: refused`);
    t.equal(r.stdout, '', 'nothing ran');
  }
  const help = (await call('execute_command', { command: 'start', args: ['--help'] })).structuredContent as { exit_code: number; stdout: string };
  t.equal(help.exit_code, 0);
  t.match(help.stdout, /--port/);
});
