/**
 * What the container provider does on the host beside the engine: running
 * its CLI (and the firewall commands) with timeouts, the preview relays on
 * loopback, and the firewall rules that fence a sandbox's bridge (see the
 * decisions in container.ts).
 */
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { sandboxError } from './errors.ts';

/** How long one CLI call may take by default. */
export const CLI_TIMEOUT_MS = 30_000;
const SBIN = ['/usr/sbin', '/sbin', '/usr/bin', '/bin', '/usr/local/sbin'];

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export /** A relay of this process: 127.0.0.1:port → the container's address. */
interface Relay {
  server: Server;
  port: number;
  target: { host: string; port: number } | undefined;
  sockets: Set<Socket>;
}

/** Relays live as long as this process, whichever runner made them (a supervisor may build its own runner). */
export const relays = new Map<string, Promise<Relay>>();

export async function executable(path: string): Promise<boolean> {
  return access(path, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}

/** Run `cli args`; never rejects for an exit code. Rejects SANDBOX_UNAVAILABLE when it cannot run or does not answer in time. */
export function runCli(cli: readonly string[], args: readonly string[], timeoutMs = CLI_TIMEOUT_MS): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [command, ...rest] = [...cli, ...args] as [string, ...string[]];
    const child = spawn(command, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(sandboxError('SANDBOX_UNAVAILABLE', `${shown(cli, args)} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(sandboxError('SANDBOX_UNAVAILABLE', `${shown(cli, args)} cannot run: ${error.message}`, { cause: error }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0), stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/** A command as shown in an error (its first arguments: never a file's content). */
export function shown(cli: readonly string[], args: readonly string[]): string {
  return `${[...cli, ...args.slice(0, 2)].join(' ')}`;
}

/** A free port on 127.0.0.1 now (the kernel's choice). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether an HTTP GET on `url` answers (any status) within a second. */
export function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.destroy();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

export async function openRelay(wanted: number): Promise<Relay> {
  // Half-open both ways: a client that ends its request still reads the answer.
  const relay: Relay = { server: createServer({ allowHalfOpen: true }), port: 0, target: undefined, sockets: new Set() };
  relay.server.on('connection', (client) => {
    const target = relay.target;
    if (!target) return client.destroy();
    const upstream = connect({ port: target.port, host: target.host, allowHalfOpen: true });
    for (const socket of [client, upstream]) {
      relay.sockets.add(socket);
      socket.on('close', () => relay.sockets.delete(socket));
      socket.on('error', () => (client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      relay.server.once('error', reject);
      relay.server.listen(port, '127.0.0.1', () => (relay.server.off('error', reject), resolve()));
    });
  try {
    await listen(wanted);
  } catch (error) {
    // Its port was taken since (svc was down): another one, which the caller records.
    if (wanted === 0 || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw sandboxError('SANDBOX_FAILED', `the preview relay cannot listen: ${(error as Error).message}`, { cause: error });
    await listen(0);
  }
  relay.port = (relay.server.address() as { port: number }).port;
  return relay;
}

export async function closeRelay(id: string): Promise<void> {
  const made = relays.get(id);
  if (!made) return;
  relays.delete(id);
  const relay = await made.catch(() => undefined);
  if (!relay) return;
  for (const socket of relay.sockets) socket.destroy();
  await new Promise<void>((resolve) => relay.server.close(() => resolve()));
}

export type Family = 'iptables' | 'ip6tables';

/** The firewall commands to fence a bridge with (IPv6 too where the kernel has it). `required`: none is an error. */
export async function firewalls(required: boolean): Promise<Array<{ family: Family; path: string }>> {
  const found: Array<{ family: Family; path: string }> = [];
  const ipv6 = await access('/proc/sys/net/ipv6').then(
    () => true,
    () => false,
  );
  for (const family of ipv6 ? (['iptables', 'ip6tables'] as const) : (['iptables'] as const)) {
    let path: string | undefined;
    for (const dir of SBIN) if (!path && (await executable(join(dir, family)))) path = join(dir, family);
    if (path) found.push({ family, path });
    else if (required) throw sandboxError('SANDBOX_UNAVAILABLE', `network_isolation needs ${family} on this host to fence a sandbox's network`);
  }
  if (required && process.getuid?.() !== 0) throw sandboxError('SANDBOX_UNAVAILABLE', 'network_isolation needs svc to run as root: it fences each sandbox network with firewall rules');
  return process.getuid?.() === 0 ? found : [];
}

export async function iptables(fw: { family: Family; path: string }, args: string[]): Promise<string> {
  const r = await runCli([fw.path, '-w', '5'], args, 15_000);
  if (r.code !== 0) throw sandboxError('SANDBOX_FAILED', `${fw.family} ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Our rules in the mangle table, each with the arguments that delete it. */
export async function rulesOf(fw: { family: Family; path: string }): Promise<Array<{ id: string; line: string; argv: string[] }>> {
  const out: Array<{ id: string; line: string; argv: string[] }> = [];
  for (const line of (await iptables(fw, ['-t', 'mangle', '-S'])).split('\n')) {
    const id = /--comment "svc-sandbox ([^"\s]+)"/.exec(line)?.[1];
    if (!id || !line.startsWith('-A ')) continue;
    const argv = [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] as string)));
    argv[0] = '-D';
    out.push({ id, line: `${line} `, argv });
  }
  return out;
}
