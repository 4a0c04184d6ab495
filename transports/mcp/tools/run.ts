/**
 * `run_svc` and `graph_visualize`: the user's module runs in a child process
 * of its own, in a folder of its own, on the in-memory store, and:
 * - with no network: a network namespace of its own (`unshare -n`; Node 20's
 *   permission model has no network switch);
 * - reading only its folder and svc's own package, writing only its folder,
 *   starting no process and no thread (Node's permission model:
 *   `--experimental-permission`), with a capped heap;
 * - processes and memory capped through a cgroup where one is writable
 *   (as root, `RLIMIT_NPROC` does not stop a fork bomb);
 * - its output capped, with a marker where it was cut; killed, with its
 *   whole process group, at the timeout.
 * What the machine cannot give (no `unshare`, no writable cgroup) is said in
 * `warnings`, never silently skipped.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileScript } from '../../worker/index.ts';
import { checkSize, ToolInputError, type ToolResult } from '../types.ts';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SANDBOX_MAIN = join(PACKAGE_ROOT, 'transports/mcp/sandbox-main.ts');

/** Most bytes kept of stdout and of stderr each. */
export const OUTPUT_LIMIT = 64 * 1024;
/** The heap a run may use (MB), and the memory its cgroup allows (bytes). */
const HEAP_MB = 256;
const MEMORY_BYTES = 512 * 1024 * 1024;
/** Processes (threads included) its cgroup allows. */
const PIDS_MAX = 64;

interface Isolation {
  /** The command prefix that gives the child a network namespace of its own, if any works here. */
  netns: string[] | undefined;
  /** Where to make a run's cgroup, if a writable one exists. */
  cgroup: { version: 1; pids: string; memory: string } | { version: 2; base: string } | undefined;
}

let probed: Isolation | undefined;

/** What this machine offers (probed once). */
export function isolation(): Isolation {
  if (probed) return probed;
  let netns: string[] | undefined;
  for (const prefix of [['unshare', '-n', '--'], ['unshare', '-rn', '--']]) {
    if (spawnSync(prefix[0] as string, [...prefix.slice(1), 'true'], { stdio: 'ignore' }).status === 0) {
      netns = prefix;
      break;
    }
  }
  probed = { netns, cgroup: probeCgroup() };
  return probed;
}

function writable(dir: string): boolean {
  const probe = join(dir, `svc-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

function probeCgroup(): Isolation['cgroup'] {
  const root = '/sys/fs/cgroup';
  if (existsSync(join(root, 'cgroup.controllers'))) {
    const controllers = readFileSync(join(root, 'cgroup.subtree_control'), 'utf8');
    if (controllers.includes('pids') && controllers.includes('memory') && writable(root)) return { version: 2, base: root };
    return undefined;
  }
  const pids = join(root, 'pids');
  const memory = join(root, 'memory');
  if (existsSync(pids) && existsSync(memory) && writable(pids) && writable(memory)) return { version: 1, pids, memory };
  return undefined;
}

/** A run's cgroup: the shell line that enters it, and how to remove it. */
function makeCgroup(cg: NonNullable<Isolation['cgroup']>, name: string): { enter: string; remove(): void } | undefined {
  try {
    if (cg.version === 2) {
      const dir = join(cg.base, name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'pids.max'), String(PIDS_MAX));
      writeFileSync(join(dir, 'memory.max'), String(MEMORY_BYTES));
      writeFileSync(join(dir, 'memory.swap.max'), '0');
      return { enter: `echo $$ > ${dir}/cgroup.procs`, remove: () => rmdirQuietly(dir) };
    }
    const pids = join(cg.pids, name);
    const memory = join(cg.memory, name);
    mkdirSync(pids);
    mkdirSync(memory);
    writeFileSync(join(pids, 'pids.max'), String(PIDS_MAX));
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(MEMORY_BYTES));
    return {
      enter: `echo $$ > ${pids}/cgroup.procs && echo $$ > ${memory}/cgroup.procs`,
      remove: () => {
        rmdirQuietly(pids);
        rmdirQuietly(memory);
      },
    };
  } catch {
    return undefined;
  }
}

function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Still has a process in it (being reaped): the kernel frees it when it is empty; nothing else to do.
  }
}

/** Folders the child may read: its own and svc's package (with the node_modules its dependencies are in). */
function readable(dir: string): string[] {
  const out = [dir, PACKAGE_ROOT];
  if (basename(dirname(PACKAGE_ROOT)) === 'node_modules') out.push(dirname(PACKAGE_ROOT));
  return out;
}

interface Captured {
  text: string;
  dropped: number;
}

function capture(stream: NodeJS.ReadableStream | null, into: Captured): void {
  stream?.on('data', (chunk: Buffer) => {
    const room = OUTPUT_LIMIT - Buffer.byteLength(into.text);
    if (room >= chunk.length) into.text += chunk.toString('utf8');
    else {
      if (room > 0) into.text += chunk.subarray(0, room).toString('utf8');
      into.dropped += chunk.length - Math.max(0, room);
    }
  });
}

function capped(c: Captured): string {
  return c.dropped > 0 ? `${c.text}\n…[output truncated: ${c.dropped} more bytes]` : c.text;
}

interface Run {
  stdout: string;
  stderr: string;
  exit_code: number;
  error?: string;
  warnings: string[];
  /** The folder of the run (removed by the caller). */
  dir: string;
}

/** Run `code` in the sandbox; the caller removes `dir`. */
async function sandboxed(code: string, request: { entrypoint?: string; graph?: { depth: number; nodeLimit: number } }, timeoutS: number): Promise<Run> {
  checkSize(code);
  if (!Number.isInteger(timeoutS) || timeoutS < 1 || timeoutS > 60) throw new ToolInputError('timeout is a whole number of seconds from 1 to 60');
  if (request.entrypoint !== undefined && !/^[A-Za-z_$][\w$]*$/.test(request.entrypoint)) throw new ToolInputError('entrypoint is the name of an exported walker or function');
  const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-run-'));
  const warnings: string[] = [];
  writeFileSync(join(dir, 'main.ts'), code);
  const graphFile = join(dir, 'graph.json');
  const sandboxRequest = { entrypoint: request.entrypoint, ...(request.graph ? { graphFile, depth: request.graph.depth, nodeLimit: request.graph.nodeLimit } : {}) };
  let bundle: string;
  try {
    bundle = await compileScript(
      [`import * as app from ${JSON.stringify(join(dir, 'main.ts'))};`, `import { runSandbox } from ${JSON.stringify(SANDBOX_MAIN)};`, `await runSandbox(app, JSON.parse(process.env.SVC_SANDBOX_REQUEST ?? '{}'));`].join('\n'),
      dir,
    );
  } catch (error) {
    const message = (error as { errors?: { text: string; location?: { line: number; column: number } | null }[] }).errors?.map((e) => (e.location ? `main.ts:${e.location.line}:${e.location.column + 1}: ${e.text}` : e.text)).join('\n') ?? String(error);
    return { stdout: '', stderr: message, exit_code: 1, error: `the module does not compile: ${message}`, warnings, dir };
  }
  const { netns, cgroup } = isolation();
  if (!netns) warnings.push('no network namespace here (unshare -n is not permitted): the run is not cut off from the network');
  const group = cgroup ? makeCgroup(cgroup, `svc-mcp-${basename(dir)}`) : undefined;
  if (!group) warnings.push('no writable cgroup here: processes and memory are not capped by a cgroup (Node permissions still forbid starting processes and threads; the heap is capped)');
  const node = [
    process.execPath,
    '--experimental-permission',
    ...readable(dir).map((d) => `--allow-fs-read=${d}`),
    `--allow-fs-write=${dir}`,
    `--max-old-space-size=${HEAP_MB}`,
    '--no-warnings',
    '--enable-source-maps',
    bundle,
  ];
  // `env -u`: a NODE_OPTIONS added on the way (a test runner's spawn hook, an APM agent) must not load code into the run.
  const argv = ['env', '-u', 'NODE_OPTIONS', ...(netns ?? []), ...node];
  const quoted = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  const child: ChildProcess = group
    ? spawn('/bin/sh', ['-c', `${group.enter} && exec ${quoted}`], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(dir, sandboxRequest) })
    : spawn(argv[0] as string, argv.slice(1), { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(dir, sandboxRequest) });
  const out: Captured = { text: '', dropped: 0 };
  const err: Captured = { text: '', dropped: 0 };
  capture(child.stdout, out);
  capture(child.stderr, err);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child);
  }, timeoutS * 1000);
  const [code_, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => {
    child.once('error', () => done([127, null]));
    child.once('close', (c, s) => done([c, s]));
  });
  clearTimeout(timer);
  // Whatever it left behind in its group goes too.
  killGroup(child);
  group?.remove();
  const stderr = capped(err);
  const exit = code_ ?? (signal ? 128 + (signal === 'SIGKILL' ? 9 : 15) : 1);
  let error: string | undefined;
  if (timedOut) error = `timed out after ${timeoutS} s: the run was killed`;
  else if (/heap out of memory|Allocation failed|ERR_MEMORY_ALLOCATION_FAILED/.test(stderr) || (signal === 'SIGKILL' && group)) error = `the run ran out of memory (heap limit ${HEAP_MB} MB) and was stopped`;
  else if (exit !== 0) error = firstErrorLine(stderr) ?? `exited with code ${exit}`;
  return { stdout: capped(out), stderr, exit_code: timedOut ? 124 : exit, ...(error ? { error } : {}), warnings, dir };
}

function childEnv(dir: string, request: unknown): NodeJS.ProcessEnv {
  // Nothing of the server's environment (its secrets) reaches the run.
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: dir, NODE_ENV: 'development', SVC_SANDBOX_REQUEST: JSON.stringify(request) };
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function firstErrorLine(stderr: string): string | undefined {
  const line = stderr.split('\n').find((l) => /^\w*Error\b|^Error:|ERR_ACCESS_DENIED/.test(l.trim()));
  return line?.trim();
}

/**
 * Run an svc module in the sandbox.
 * @example await runSvc({ code, entrypoint: 'CreateTodo', timeout: 10 }) // { stdout: '[{…}]\n', stderr: '', exit_code: 0, warnings: [] }
 */
export async function runSvc(args: { code: string; entrypoint?: string; timeout?: number }): Promise<ToolResult> {
  const run = await sandboxed(args.code, { entrypoint: args.entrypoint }, args.timeout ?? 10);
  rmSync(run.dir, { recursive: true, force: true });
  const { dir: _dir, ...result } = run;
  return result;
}

interface GraphNode {
  id: string;
  type: string;
  context?: Record<string, unknown>;
}
interface GraphEdge extends GraphNode {
  source: string;
  target: string;
}

/**
 * Run an svc module in the sandbox, then draw the graph reachable from the root.
 * @example await graphVisualize({ code, format: 'dot' }) // { graph: 'digraph svc {…}', program_output: '' }
 */
export async function graphVisualize(args: { code: string; format?: 'dot' | 'json'; depth?: number; bfs?: boolean; edge_limit?: number; node_limit?: number; entrypoint?: string; timeout?: number }): Promise<ToolResult> {
  const format = args.format ?? 'dot';
  if (format !== 'dot' && format !== 'json') throw new ToolInputError('format is dot or json');
  const depth = args.depth ?? -1;
  const nodeLimit = args.node_limit ?? 512;
  const edgeLimit = args.edge_limit ?? 512;
  if (!Number.isInteger(depth) || depth < -1) throw new ToolInputError('depth is -1 (all) or a whole number ≥ 0');
  for (const [name, v] of [['node_limit', nodeLimit], ['edge_limit', edgeLimit]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 10_000) throw new ToolInputError(`${name} is a whole number from 1 to 10000`);
  }
  const run = await sandboxed(args.code, { entrypoint: args.entrypoint, graph: { depth, nodeLimit } }, args.timeout ?? 10);
  let nodes: GraphNode[] = [{ id: 'root', type: 'Root' }];
  let edges: GraphEdge[] = [];
  let truncated = false;
  try {
    const traversal = JSON.parse(readFileSync(join(run.dir, 'graph.json'), 'utf8')) as { nodes: GraphNode[]; edges: GraphEdge[]; truncated: boolean };
    if (traversal.nodes.length > 0) nodes = traversal.nodes;
    edges = traversal.edges;
    truncated = traversal.truncated;
  } catch {
    // The run failed before the walk: the graph is its root alone (and the error says why).
  } finally {
    rmSync(run.dir, { recursive: true, force: true });
  }
  if (!(args.bfs ?? true)) nodes = depthFirst(nodes, edges);
  if (edges.length > edgeLimit) {
    edges = edges.slice(0, edgeLimit);
    truncated = true;
  }
  const graph = format === 'json' ? { nodes, edges, truncated } : toDot(nodes, edges);
  return {
    graph,
    program_output: run.stdout + (run.stderr ? (run.stdout ? '\n' : '') + run.stderr : ''),
    ...(run.error ? { error: run.error } : {}),
    warnings: run.warnings,
  };
}

/** The same nodes in depth-first order from the first (the root). */
function depthFirst(nodes: GraphNode[], edges: GraphEdge[]): GraphNode[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const out = new Map<string, GraphNode[]>();
  for (const e of edges) (out.get(e.source) ?? out.set(e.source, []).get(e.source))?.push(byId.get(e.target) as GraphNode);
  const seen = new Set<string>();
  const order: GraphNode[] = [];
  const stack = nodes.length > 0 ? [nodes[0] as GraphNode] : [];
  while (stack.length > 0) {
    const n = stack.pop() as GraphNode;
    if (!n || seen.has(n.id)) continue;
    seen.add(n.id);
    order.push(n);
    const next = out.get(n.id) ?? [];
    for (let i = next.length - 1; i >= 0; i--) stack.push(next[i] as GraphNode);
  }
  for (const n of nodes) if (!seen.has(n.id)) order.push(n);
  return order;
}

const quote = (s: string): string => `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`;

function label(n: GraphNode): string {
  const fields = Object.entries(n.context ?? {})
    .slice(0, 4)
    .map(([k, v]) => `${k}: ${(typeof v === 'string' ? v : (JSON.stringify(v) ?? '')).slice(0, 40)}`);
  return [n.type, ...fields].join('\n');
}

/** Graphviz DOT: one statement per node and per edge (ids quoted, labels escaped). */
function toDot(nodes: GraphNode[], edges: GraphEdge[]): string {
  const lines = ['digraph svc {', '  node [shape=box, fontname="Helvetica"];'];
  for (const n of nodes) lines.push(`  ${quote(n.id)} [label=${quote(label(n))}${n.type === 'Root' ? ', shape=doublecircle' : ''}];`);
  for (const e of edges) lines.push(`  ${quote(e.source)} -> ${quote(e.target)} [label=${quote(e.type)}];`);
  lines.push('}');
  return lines.join('\n');
}
