/**
 * `svc mcp`: the tool-protocol server for AI clients. Flags win over the
 * `[mcp]` section of svc.toml, which wins over the built-in defaults. With
 * stdio nothing but protocol messages goes to stdout: logs go to stderr.
 *
 * Over HTTP every request carries a bearer token, loopback included (any
 * user of the machine can reach a loopback port, and three tools run code).
 * With no `[mcp] token` on loopback, one is made once and kept in
 * `<project_root>/.svc/mcp_token` (mode 0600): its path is printed, never
 * its value. Beyond loopback the token must be configured.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../../runtime/index.ts';
import { type CommandTable, createMcpServer, formatInspection, isLoopback, listenMcpHttp, McpConfigError, type McpSettings, ToolPool, useCommandTable } from '../../mcp/index.ts';

/**
 * The token of an HTTP server on loopback with none configured: the one kept
 * in `<projectRoot>/.svc/mcp_token`, made (32 random bytes) when there is none.
 */
function loopbackToken(projectRoot: string): { token: string; file: string; made: boolean } {
  const dir = join(projectRoot, '.svc');
  const file = join(dir, 'mcp_token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (token.length >= 16) {
      // Readable by others: narrowed to the owner (a token anyone on the machine reads is no gate).
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
      return { token, file, made: false };
    }
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, file, made: true };
}

const TRANSPORTS = ['stdio', 'sse', 'streamable-http'] as const;

function usage(message: string): never {
  process.stderr.write(`svc mcp: ${message}\n`);
  process.exit(2);
}

/**
 * Run `svc mcp` with its flags and the CLI's command table (cli/table.ts
 * `commandTable()`), which the tool server's command tools read.
 *
 * @example
 * await mcp({ transport: 'stdio' }, commandTable());
 */
export async function mcp(flags: Record<string, unknown>, commands: CommandTable): Promise<void> {
  const given: Record<string, unknown> = {};
  if (flags.transport !== undefined) {
    if (!TRANSPORTS.includes(String(flags.transport) as (typeof TRANSPORTS)[number])) usage(`--transport is one of ${TRANSPORTS.join(', ')}, got ${String(flags.transport)}`);
    given['mcp.transport'] = String(flags.transport);
  }
  if (flags.port !== undefined) {
    const port = Number(flags.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) usage(`--port is a port number, got ${String(flags.port)}`);
    given['mcp.port'] = port;
  }
  if (flags.host !== undefined) {
    if (typeof flags.host !== 'string' || flags.host === '') usage('--host needs an address');
    given['mcp.host'] = flags.host;
  }
  let config;
  try {
    ({ config } = loadConfig({ dir: process.cwd(), profile: flags.profile as string | undefined, env: process.env, flags: given }));
  } catch (error) {
    if (error instanceof ConfigError) usage(error.message);
    throw error;
  }
  const m = config.mcp;
  const settings: McpSettings = {
    exposeGrammar: m.expose_grammar,
    exposeDocs: m.expose_docs,
    exposeExamples: m.expose_examples,
    exposePitfalls: m.expose_pitfalls,
    enableValidate: m.enable_validate,
    enableFormat: m.enable_format,
    enablePy2svc: m.enable_py2svc,
    enableAst: m.enable_ast,
    projectRoot: resolve(m.project_root),
  };
  if (flags.inspect) {
    process.stdout.write(formatInspection(settings));
    return;
  }
  // The CLI's own table (list_commands, get_command, execute_command read it): cli/ hands it over, the tool server does not reach into cli/.
  useCommandTable(commands);
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  // Whatever a dependency prints goes to stderr: on stdio, stdout is the protocol's alone.
  console.log = console.error;
  console.info = console.error;
  const pool = await ToolPool.start();
  if (m.transport === 'stdio') {
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
    const server = createMcpServer(settings, pool, log);
    const transport = new StdioServerTransport();
    let stopping = false;
    const stop = async (): Promise<void> => {
      // Closing the server closes the transport, whose onclose comes back here: once is enough.
      if (stopping) return;
      stopping = true;
      await server.close().catch(() => {});
      await pool.close();
      process.exit(0);
    };
    transport.onclose = () => void stop();
    process.stdin.once('end', () => void stop());
    process.once('SIGINT', () => void stop());
    process.once('SIGTERM', () => void stop());
    await server.connect(transport);
    log('svc mcp: serving on stdio');
    return;
  }
  try {
    let token = m.token;
    if (token === '' && isLoopback(m.host)) {
      let kept: ReturnType<typeof loopbackToken>;
      try {
        kept = loopbackToken(settings.projectRoot);
      } catch (error) {
        // Not the listen error below (EACCES there means the port): say which file, and the way around it.
        throw new McpConfigError(`cannot keep a token in ${join(settings.projectRoot, '.svc', 'mcp_token')} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): set [mcp] token (SVC_MCP_TOKEN), or make the folder writable`);
      }
      token = kept.token;
      log(`svc mcp: every request needs "Authorization: Bearer <token>": the token is in ${kept.file}${kept.made ? ' (made now)' : ''}; set [mcp] token (SVC_MCP_TOKEN) to choose it`);
    }
    const http = await listenMcpHttp({
      transport: m.transport as 'sse' | 'streamable-http',
      host: m.host,
      port: m.port,
      token,
      allowedOrigins: m.allowed_origins,
      newServer: () => createMcpServer(settings, pool, log),
      log,
    });
    process.stdout.write(`svc mcp: serving ${m.transport} at ${http.url}\n`);
    const stop = async (): Promise<void> => {
      await http.close();
      await pool.close();
      process.exit(0);
    };
    process.once('SIGINT', () => void stop());
    process.once('SIGTERM', () => void stop());
  } catch (error) {
    await pool.close();
    if (error instanceof McpConfigError) usage(error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      process.stderr.write(`svc mcp: cannot listen on ${m.host}:${m.port} (${code})\n`);
      process.exit(1);
    }
    throw error;
  }
}
