/**
 * `run_svc` and `graph_visualize`: the user's module runs in a child process
 * of its own, in a folder of its own, on the in-memory store, and:
 * - its TypeScript is only transpiled here (esbuild's `transform`: no file is
 *   read on its behalf); `svc` resolves, in the child, to one prebuilt bundle
 *   of svc's public API and the runner;
 * - with no network: a network namespace of its own (`unshare -n`; Node 20's
 *   permission model has no network switch), and a PID namespace (it sees and
 *   signals no process of the host);
 * - as an unprivileged user (`nobody`, when the server is root), reading
 *   only its folder, svc's bundle and the installed packages, writing only
 *   its folder, starting no process and no thread (Node's permission model:
 *   `--experimental-permission`), with a capped heap and file size;
 * - processes and memory capped through a cgroup where one is writable
 *   (as root, `RLIMIT_NPROC` does not stop a fork bomb);
 * - its output capped, with a marker where it was cut; killed, with its
 *   whole process group, at the timeout, and when the server dies;
 * - at most {@link MAX_RUNS} at a time (others wait their turn).
 * What the machine cannot give (no `unshare`, no writable cgroup, not root)
 * is said in `warnings`, never silently skipped.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transform } from 'esbuild';
import { compileModule } from '../../transports/worker/index.ts';
import { checkSize, ToolInputError, type ToolResult } from '../types.ts';
import { RUN_FOLDER_PREFIX } from './command-policy.ts';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SANDBOX_ENTRY = join(PACKAGE_ROOT, 'mcp/sandbox-entry.ts');

/** Most bytes kept of stdout and of stderr each. */
export const OUTPUT_LIMIT = 64 * 1024;
/** Runs at a time; more wait. */
export const MAX_RUNS = 2;
/** The heap a run may use (MB), and the memory its cgroup allows (bytes). */
const HEAP_MB = 256;
const MEMORY_BYTES = 512 * 1024 * 1024;
/** Processes (threads included) its cgroup allows. */
const PIDS_MAX = 64;
/** Largest file a run may write. */
const FILE_BYTES = 64 * 1024 * 1024;
/** Largest graph a run may hand back. */
const GRAPH_BYTES = 8 * 1024 * 1024;
/** The user a root server runs code as. */
const NOBODY = 65534;

interface Isolation {
  /** The command prefix that gives the child network and PID namespaces of its own, if any works here. */
  namespaces: string[] | undefined;
  /** Root here: the run can be another user. */
  root: boolean;
  /** Where to make a run's cgroup, if a writable one exists. */
  cgroup: { version: 1; pids: string; memory: string } | { version: 2; base: string } | undefined;
}

let probed: Isolation | undefined;

/** What this machine offers (probed once). */
export function isolation(): Isolation {
  if (probed) return probed;
  let namespaces: string[] | undefined;
  for (const prefix of [['unshare', '-n', '-p', '-f', '--kill-child', '--'], ['unshare', '-rn', '-p', '-f', '--kill-child', '--']]) {
    if (spawnSync(prefix[0] as string, [...prefix.slice(1), 'true'], { stdio: 'ignore' }).status === 0) {
      namespaces = prefix;
      break;
    }
  }
  const root = process.getuid?.() === 0 && spawnSync('setpriv', ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', '--', 'true'], { stdio: 'ignore' }).status === 0;
  probed = { namespaces, root, cgroup: probeCgroup() };
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

/**
 * What the child may read: its own folder, the installed packages (svc's
 * bundle lives under their `.cache`), and svc's product code (some of its
 * modules read files beside them as they load) — not the rest of svc's
 * folder (a checkout's `.git`, the data folders of examples and tests).
 */
function readable(dir: string, bundle: string): string[] {
  const product = ['index.ts', 'package.json', 'kernel', 'actors', 'transports', 'stores', 'cluster', 'runtime', 'client', 'mcp'].map((p) => join(PACKAGE_ROOT, p)).filter((p) => existsSync(p));
  const out = [dir, bundle, join(PACKAGE_ROOT, 'node_modules'), ...product];
  if (basename(dirname(PACKAGE_ROOT)) === 'node_modules') out.push(dirname(PACKAGE_ROOT));
  return out;
}

interface Captured {
  chunks: Buffer[];
  size: number;
  dropped: number;
}

function capture(stream: NodeJS.ReadableStream | null, into: Captured): void {
  stream?.on('data', (chunk: Buffer) => {
    const room = OUTPUT_LIMIT - into.size;
    if (room >= chunk.length) {
      into.chunks.push(chunk);
      into.size += chunk.length;
    } else {
      if (room > 0) {
        into.chunks.push(chunk.subarray(0, room));
        into.size += room;
      }
      into.dropped += chunk.length - Math.max(0, room);
    }
  });
}

function capped(c: Captured): string {
  // Decoded once, whole: a character cut at the limit becomes one replacement mark, not two halves.
  const text = Buffer.concat(c.chunks).toString('utf8');
  return c.dropped > 0 ? `${text}\n…[output truncated: ${c.dropped} more bytes]` : text;
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

// Runs waiting for a turn, and the groups of those running (killed if the server goes).
let running = 0;
const waiting: (() => void)[] = [];
const live = new Set<number>();
process.once('exit', () => {
  for (const pid of live) killPid(pid);
});

async function turn(): Promise<() => void> {
  if (running >= MAX_RUNS) await new Promise<void>((go) => waiting.push(go));
  running++;
  return () => {
    running--;
    waiting.shift()?.();
  };
}

let bundlePath: Promise<string> | undefined;
/** svc's public API and the runner, as one file (built once per process). */
function sandboxBundle(): Promise<string> {
  bundlePath ??= compileModule(SANDBOX_ENTRY);
  bundlePath.catch(() => {
    bundlePath = undefined;
  });
  return bundlePath;
}

/** Remove a run's folder without holding the loop (a run may leave many files). */
export function removeRun(dir: string): void {
  void rm(dir, { recursive: true, force: true, maxRetries: 2 }).catch(() => {});
}

/** Run `code` in the sandbox; the caller removes `dir` ({@link removeRun}). */
async function sandboxed(code: string, request: { entrypoint?: string; args?: unknown; graph?: { depth: number; nodeLimit: number } }, timeoutS: number): Promise<Run> {
  checkSize(code);
  if (request.args !== undefined && (typeof request.args !== 'object' || request.args === null || Array.isArray(request.args))) throw new ToolInputError("args is an object: the entry point's fields or arguments");
  if (request.args !== undefined) checkSize(JSON.stringify(request.args), 'args');
  if (request.args !== undefined && request.entrypoint === undefined) throw new ToolInputError('args needs an entrypoint to give them to');
  if (!Number.isInteger(timeoutS) || timeoutS < 1 || timeoutS > 60) throw new ToolInputError('timeout is a whole number of seconds from 1 to 60');
  if (request.entrypoint !== undefined && !/^[A-Za-z_$][\w$]*$/.test(request.entrypoint)) throw new ToolInputError('entrypoint is the name of an exported walker or function');
  const dir = mkdtempSync(join(tmpdir(), RUN_FOLDER_PREFIX));
  const warnings: string[] = [];
  let js: string;
  try {
    // Transpiled only: nothing the module imports is read here (imports are resolved in the sandbox, under its permissions).
    js = (await transform(code, { loader: 'ts', format: 'esm', target: 'node20', keepNames: true, sourcefile: 'main.ts', sourcemap: 'inline' })).code;
  } catch (error) {
    const message = (error as { errors?: { text: string; location?: { line: number; column: number } | null }[] }).errors?.map((e) => (e.location ? `main.ts:${e.location.line}:${e.location.column + 1}: ${e.text}` : e.text)).join('\n') ?? String(error);
    return { stdout: '', stderr: message, exit_code: 1, error: `the module does not compile: ${message}`, warnings, dir };
  }
  const bundle = await sandboxBundle();
  const bundleUrl = pathToFileURL(bundle).href;
  const graphFile = join(dir, 'graph.json');
  writeFileSync(join(dir, 'main.mjs'), js);
  writeFileSync(join(dir, 'request.json'), JSON.stringify({ entrypoint: request.entrypoint, args: request.args, ...(request.graph ? { graphFile, depth: request.graph.depth, nodeLimit: request.graph.nodeLimit } : {}) }));
  // `import … from 'svc'` in the module: this folder's node_modules/svc, which is the bundle.
  mkdirSync(join(dir, 'node_modules/svc'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/svc/package.json'), JSON.stringify({ name: 'svc', type: 'module', exports: { '.': './index.mjs' } }));
  writeFileSync(join(dir, 'node_modules/svc/index.mjs'), `export * from ${JSON.stringify(bundleUrl)};\n`);
  writeFileSync(
    join(dir, 'run.mjs'),
    [
      `import { readFileSync } from 'node:fs';`,
      `import { runSandbox } from ${JSON.stringify(bundleUrl)};`,
      `import * as app from './main.mjs';`,
      `await runSandbox(app, JSON.parse(readFileSync(new URL('./request.json', import.meta.url), 'utf8')));`,
    ].join('\n'),
  );
  const { namespaces, root, cgroup } = isolation();
  if (!namespaces) warnings.push('no network or PID namespace here (unshare is not permitted): the run is not cut off from the network nor from other processes');
  if (!root) warnings.push('the server is not root: the run is its user, not a separate unprivileged one');
  const release = await turn();
  const group = cgroup ? makeCgroup(cgroup, `svc-mcp-${basename(dir)}`) : undefined;
  if (!group) warnings.push('no writable cgroup here: processes and memory are not capped by a cgroup (Node permissions still forbid starting processes and threads; the heap is capped)');
  if (root) chownTree(dir, NOBODY);
  const node = [
    process.execPath,
    '--experimental-permission',
    ...readable(dir, bundle).map((d) => `--allow-fs-read=${d}`),
    `--allow-fs-write=${dir}`,
    `--max-old-space-size=${HEAP_MB}`,
    '--no-warnings',
    '--enable-source-maps',
    join(dir, 'run.mjs'),
  ];
  const argv = [
    // The whole chain dies with the server (pdeathsig), and the run with the chain (unshare --kill-child).
    ...(root ? ['setpriv', '--pdeathsig', 'KILL', '--'] : []),
    ...(namespaces ?? []),
    ...(root ? ['setpriv', '--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', '--'] : []),
    'prlimit',
    `--fsize=${FILE_BYTES}`,
    '--',
    // `env -u`: a NODE_OPTIONS added on the way (a test runner's spawn hook, an APM agent) must not load code into the run.
    'env',
    '-u',
    'NODE_OPTIONS',
    ...node,
  ];
  const quoted = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  let child: ChildProcess;
  try {
    child = group
      ? spawn('/bin/sh', ['-c', `${group.enter} && exec ${quoted}`], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(dir) })
      : spawn(argv[0] as string, argv.slice(1), { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(dir) });
  } catch (error) {
    release();
    group?.remove();
    throw error;
  }
  if (child.pid !== undefined) live.add(child.pid);
  const out: Captured = { chunks: [], size: 0, dropped: 0 };
  const err: Captured = { chunks: [], size: 0, dropped: 0 };
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
  if (child.pid !== undefined) live.delete(child.pid);
  group?.remove();
  release();
  const stderr = capped(err);
  const exit = code_ ?? (signal === 'SIGKILL' ? 137 : 128 + 15);
  let error: string | undefined;
  if (timedOut) error = `timed out after ${timeoutS} s: the run was killed`;
  else if (/heap out of memory|Allocation failed|ERR_MEMORY_ALLOCATION_FAILED/.test(stderr) || (exit === 137 && group)) error = `the run ran out of memory (heap limit ${HEAP_MB} MB) and was stopped`;
  else if (/File size limit exceeded|EFBIG/.test(stderr) || signal === 'SIGXFSZ') error = `the run wrote a file larger than ${FILE_BYTES / 1024 / 1024} MB and was stopped`;
  else if (exit !== 0) error = firstErrorLine(stderr) ?? `exited with code ${exit}`;
  return { stdout: capped(out), stderr, exit_code: timedOut ? 124 : exit, ...(error ? { error } : {}), warnings, dir };
}

function chownTree(path: string, uid: number): void {
  chownSync(path, uid, uid);
  if (statSync(path).isDirectory()) for (const name of ['main.mjs', 'request.json', 'run.mjs', 'node_modules', 'node_modules/svc', 'node_modules/svc/package.json', 'node_modules/svc/index.mjs']) if (existsSync(join(path, name))) chownSync(join(path, name), uid, uid);
}

function childEnv(dir: string): NodeJS.ProcessEnv {
  // Nothing of the server's environment (its secrets) reaches the run.
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: dir, NODE_ENV: 'development' };
}

function killPid(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid !== undefined) killPid(child.pid);
}

function firstErrorLine(stderr: string): string | undefined {
  const line = stderr.split('\n').find((l) => /^\w*Error\b|^Error:|ERR_ACCESS_DENIED/.test(l.trim()));
  return line?.trim();
}

/**
 * Run an svc module in the sandbox.
 * @example await runSvc({ code, entrypoint: 'CreateTodo', timeout: 10 }) // { stdout: '[{…}]\n', stderr: '', exit_code: 0, warnings: [] }
 */
export async function runSvc(args: { code: string; entrypoint?: string; args?: Record<string, unknown>; timeout?: number }): Promise<ToolResult> {
  const run = await sandboxed(args.code, { entrypoint: args.entrypoint, args: args.args }, args.timeout ?? 10);
  removeRun(run.dir);
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
export async function graphVisualize(args: { code: string; format?: 'dot' | 'json'; depth?: number; bfs?: boolean; edge_limit?: number; node_limit?: number; entrypoint?: string; args?: Record<string, unknown>; timeout?: number }): Promise<ToolResult> {
  const format = args.format ?? 'dot';
  if (format !== 'dot' && format !== 'json') throw new ToolInputError('format is dot or json');
  const depth = args.depth ?? -1;
  const nodeLimit = args.node_limit ?? 512;
  const edgeLimit = args.edge_limit ?? 512;
  if (!Number.isInteger(depth) || depth < -1) throw new ToolInputError('depth is -1 (all) or a whole number ≥ 0');
  for (const [name, v] of [['node_limit', nodeLimit], ['edge_limit', edgeLimit]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 10_000) throw new ToolInputError(`${name} is a whole number from 1 to 10000`);
  }
  const run = await sandboxed(args.code, { entrypoint: args.entrypoint, args: args.args, graph: { depth, nodeLimit } }, args.timeout ?? 10);
  let nodes: GraphNode[] = [{ id: 'root', type: 'Root' }];
  let edges: GraphEdge[] = [];
  let truncated = false;
  let graphError: string | undefined;
  try {
    // Written by the runner in the child, but the module could have written it too: size, shape and limits are checked here.
    const file = join(run.dir, 'graph.json');
    if (existsSync(file)) {
      if (statSync(file).size > GRAPH_BYTES) throw new Error(`the graph the run handed back is larger than ${GRAPH_BYTES / 1024 / 1024} MB`);
      const traversal = JSON.parse(readFileSync(file, 'utf8')) as { nodes?: unknown; edges?: unknown; truncated?: unknown };
      const isNode = (n: unknown): n is GraphNode => typeof n === 'object' && n !== null && typeof (n as GraphNode).id === 'string' && typeof (n as GraphNode).type === 'string';
      if (!Array.isArray(traversal.nodes) || !Array.isArray(traversal.edges) || !traversal.nodes.every(isNode) || !traversal.edges.every((e) => isNode(e) && typeof (e as GraphEdge).source === 'string' && typeof (e as GraphEdge).target === 'string')) {
        throw new Error('the graph the run handed back is not a graph');
      }
      if (traversal.nodes.length > 0) nodes = traversal.nodes.slice(0, nodeLimit);
      const kept = new Set(nodes.map((n) => n.id));
      edges = (traversal.edges as GraphEdge[]).filter((e) => kept.has(e.source) && kept.has(e.target));
      truncated = traversal.truncated === true || traversal.nodes.length > nodeLimit || edges.length < traversal.edges.length;
    }
  } catch (error) {
    // The graph is its root alone, and the error says why.
    graphError = (error as Error).message;
  } finally {
    removeRun(run.dir);
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
    ...(run.error || graphError ? { error: run.error ?? graphError } : {}),
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
