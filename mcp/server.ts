/**
 * The tool-protocol server (README "`svc mcp`"): one `McpServer` of the SDK per
 * connection, with the `svc://` resources, the 19 tools and the 9 prompts,
 * as the `[mcp]` settings allow. Compiler tools run on the killable pool;
 * `run_svc` and `graph_visualize` in a sandboxed child process; the rest in
 * this thread. Every tool answers one text item holding its result object as
 * JSON, and the same object as `structuredContent`.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { publicSpec } from './grammar/spec.ts';
import { grammarTokens } from './grammar/vocabulary.ts';
import type { ToolPool } from './pool.ts';
import { PROMPTS } from './prompts.ts';
import { createResources } from './resources.ts';
import { executeCommand, getCommand, listCommands } from './tools/commands.ts';
import { getExample, listExamples } from './tools/examples.ts';
import { explainError } from './tools/explain.ts';
import { getResource, searchDocs, understandSvc } from './tools/knowledge.ts';
import { graphVisualize, runSvc } from './tools/run.ts';
import { checkSize, ToolInputError, type ToolResult } from './types.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** The `[mcp]` settings the server reads (svc.toml's `[mcp]` section, runtime/config.ts). */
export interface McpSettings {
  exposeGrammar: boolean;
  exposeDocs: boolean;
  exposeExamples: boolean;
  exposePitfalls: boolean;
  enableValidate: boolean;
  enableFormat: boolean;
  enablePy2svc: boolean;
  enableAst: boolean;
  /** The folder `execute_command` runs in. */
  projectRoot: string;
}

/** The defaults of those settings (as runtime/config.ts has them). */
export const MCP_DEFAULTS: McpSettings = {
  exposeGrammar: true,
  exposeDocs: true,
  exposeExamples: true,
  exposePitfalls: true,
  enableValidate: true,
  enableFormat: true,
  enablePy2svc: true,
  enableAst: false,
  projectRoot: '.',
};

/** Where a tool runs. */
type Runner = { pool: string } | { local: (args: never, settings: McpSettings) => Promise<ToolResult> | ToolResult };

interface ToolDef {
  name: string;
  title: string;
  description: string;
  input: z.ZodRawShape;
  /** Whether the settings offer it. */
  offered(s: McpSettings): boolean;
  run: Runner;
  /** A result with an `error` key is a failed call (`isError`): not found, refused. False where `error` reports what the code did (run_svc). */
  failsWithError?: boolean;
}

const code = z.string().describe('TypeScript source of an svc module (at most 100 KB)');
const always = () => true;

/** Every tool, in the order a client lists them (test/mcp/inspect.golden.txt). */
export const TOOLS: readonly ToolDef[] = [
  {
    name: 'validate_svc',
    title: 'Validate an svc module',
    description: 'Type-check an svc module (TypeScript) against the public svc API, plus svc checks (walkers without an entry ability, undeclared fields, unknown node types in @entry, access levels). Returns valid, errors [{line, col, message}], warnings.',
    input: { code, filename: z.string().default('snippet.ts').describe('File name the diagnostics mention') },
    offered: (s) => s.enableValidate,
    run: { pool: 'validate_svc' },
  },
  {
    name: 'check_syntax',
    title: 'Check syntax',
    description: 'Parse-only check of an svc module (no type checking). Returns valid, errors.',
    input: { code },
    offered: (s) => s.enableValidate,
    run: { pool: 'check_syntax' },
  },
  {
    name: 'lint_svc',
    title: 'Lint an svc module',
    description: 'Lint rules plus svc rules. Returns violations [{line, col, message, rule, severity only for compiler errors}], fixed_code, changed; auto_fix applies the safe fixes.',
    input: { code, auto_fix: z.boolean().default(false).describe('Apply the safe fixes') },
    offered: always,
    run: { pool: 'lint_svc' },
  },
  {
    name: 'format_svc',
    title: 'Format an svc module',
    description: 'Format with prettier (fixed settings; idempotent). Returns formatted, changed.',
    input: { code },
    offered: (s) => s.enableFormat,
    run: { pool: 'format_svc' },
  },
  {
    name: 'py_to_svc',
    title: 'Python declarations to svc',
    description: 'Best-effort translation of Python declarations (classes with typed fields, functions) to svc nodes, edges, walkers and functions with TypeBox schemas. Bodies become marked stubs, each listed in warnings.',
    input: { python_code: z.string().describe('Python source (at most 100 KB)') },
    offered: (s) => s.enablePy2svc,
    run: { pool: 'py_to_svc' },
  },
  {
    name: 'svc_to_py',
    title: 'svc declarations to Python',
    description: 'Best-effort translation of an svc module\'s declarations to Python classes and function stubs. Bodies become marked stubs; errors and stubs are listed in warnings.',
    input: { code },
    offered: (s) => s.enablePy2svc,
    run: { pool: 'svc_to_py' },
  },
  {
    name: 'svc_to_js',
    title: 'svc module to JavaScript',
    description: 'Transpile an svc module to JavaScript (esbuild). Returns js_code (empty on failure) and warnings (errors included).',
    input: { code },
    offered: always,
    run: { pool: 'svc_to_js' },
  },
  {
    name: 'explain_error',
    title: 'Explain an error',
    description: 'Explain a TypeScript diagnostic, an svc error code (docs/errors.md) or a runtime message. Returns title, explanation, suggestion, example, docs_uri.',
    input: { error_message: z.string().describe('The error as printed') },
    offered: always,
    run: { local: (args: { error_message: string }) => (checkSize(args.error_message, 'error_message'), explainError(args)) },
  },
  {
    name: 'list_examples',
    title: 'List examples',
    description: 'The example apps and snippets, by category (optionally one category).',
    input: { category: z.string().optional().describe('Only this category') },
    offered: always,
    run: { local: (args: { category?: string }) => listExamples(args) },
  },
  {
    name: 'get_example',
    title: 'Get an example',
    description: 'The files of one example.',
    input: { name: z.string().describe('The example\'s name (see list_examples)') },
    offered: always,
    run: { local: (args: { name: string }) => getExample(args) },
  },
  {
    name: 'search_docs',
    title: 'Search the docs',
    description: 'Ranked search over the svc:// documentation. Returns results [{uri, title, description, snippet, score}].',
    input: { query: z.string().describe('Words to look for'), limit: z.number().int().min(1).max(50).default(5).describe('How many results') },
    offered: always,
    run: { local: (args: { query: string; limit: number }, s) => searchDocs(resourcesFor(s), args) },
  },
  {
    name: 'get_ast',
    title: 'Syntax tree',
    description: 'The TypeScript syntax tree of a module, as an indented tree or JSON.',
    input: { code, format: z.enum(['tree', 'json']).default('tree') },
    offered: (s) => s.enableAst,
    run: { pool: 'get_ast' },
  },
  {
    name: 'run_svc',
    title: 'Run an svc module',
    description: 'Run a module in a sandboxed child process (no network, its own folder, capped output, killed on timeout) on the in-memory store; with entrypoint, spawn that walker at the root (or call that function). Returns stdout, stderr, exit_code, and error when it failed.',
    input: {
      code,
      entrypoint: z.string().optional().describe('A walker (spawned at the root) or function (called) to run; default: an export named Main or main'),
      args: z.record(z.string(), z.unknown()).optional().describe("The entry point's fields (a walker) or arguments (a function)"),
      timeout: z.number().int().min(1).max(60).default(10).describe('Seconds before it is killed'),
    },
    offered: always,
    run: { local: (args: { code: string; entrypoint?: string; args?: Record<string, unknown>; timeout: number }) => runSvc(args) },
    failsWithError: false,
  },
  {
    name: 'graph_visualize',
    title: 'Draw the graph',
    description: 'Run a module like run_svc, then draw the graph reachable from the root as DOT or JSON (always at least the root).',
    input: {
      code,
      format: z.enum(['dot', 'json']).default('dot'),
      depth: z.number().int().min(-1).default(-1).describe('Levels from the root (-1: all)'),
      bfs: z.boolean().default(true).describe('Breadth-first (else depth-first)'),
      edge_limit: z.number().int().min(1).max(10_000).default(512),
      node_limit: z.number().int().min(1).max(10_000).default(512),
      entrypoint: z.string().optional().describe('A walker or function to run first (as run_svc)'),
      args: z.record(z.string(), z.unknown()).optional().describe("The entry point's fields or arguments"),
      timeout: z.number().int().min(1).max(60).default(10).describe('Seconds before it is killed'),
    },
    offered: always,
    run: {
      local: (args: { code: string; format: 'dot' | 'json'; depth: number; bfs: boolean; edge_limit: number; node_limit: number; entrypoint?: string; args?: Record<string, unknown>; timeout: number }) => graphVisualize(args),
    },
    failsWithError: false,
  },
  {
    name: 'understand_svc',
    title: 'Understand svc',
    description: 'A map of svc\'s concepts and where to read about each (markdown).',
    input: {},
    offered: always,
    run: { local: (_args: Record<string, never>, s) => understandSvc(resourcesFor(s)) },
  },
  {
    name: 'get_resource',
    title: 'Read a resource',
    description: 'The content of an svc:// resource (markdown).',
    input: { uri: z.string().describe('e.g. svc://docs/first-app') },
    offered: always,
    run: { local: (args: { uri: string }, s) => getResource(resourcesFor(s), args) },
  },
  {
    name: 'list_commands',
    title: 'List svc commands',
    description: 'The svc CLI commands, by group.',
    input: {},
    offered: always,
    run: { local: () => listCommands() },
  },
  {
    name: 'get_command',
    title: 'Describe an svc command',
    description: 'One svc CLI command: help, group and arguments.',
    input: { name: z.string() },
    offered: always,
    run: { local: (args: { name: string }) => getCommand(args) },
  },
  {
    name: 'execute_command',
    title: 'Run an svc command',
    description: 'Run an svc CLI subcommand in the project folder, judged as svc parses it: --help of any command (help only), start --faux, init (never --force), db stats|inspect|quarantine list|show, bench compare a.json b.json; no "--"; paths must resolve inside the project; the command gets no secret of the server (not token, mcp, a server, load runs or store changes). Returns success, exit_code (0 ok, 1 failure, 2 usage error or refused), stdout, stderr, command.',
    input: {
      command: z.string(),
      args: z.array(z.string()).default([]),
      timeout: z.number().int().min(1).max(600).default(30).describe('Seconds before it is killed'),
    },
    offered: always,
    // Judged (parsed with the CLI's own table, paths inside the project) and run with no secret of the server: tools/command-policy.ts.
    run: { local: (args: { command: string; args: string[]; timeout: number }, s) => executeCommand({ ...args, projectRoot: s.projectRoot }) },
    failsWithError: false,
  },
];

// The resources of each exposure (search and get_resource read the same set the client lists).
const resourceSets = new Map<string, ReturnType<typeof createResources>>();
function resourcesFor(s: McpSettings): ReturnType<typeof createResources> {
  const key = `${s.exposeGrammar}${s.exposeDocs}${s.exposeExamples}${s.exposePitfalls}`;
  let set = resourceSets.get(key);
  if (!set) {
    set = createResources({
      grammar: { spec: publicSpec, tokens: grammarTokens },
      expose: { grammar: s.exposeGrammar, docs: s.exposeDocs, examples: s.exposeExamples, pitfalls: s.exposePitfalls },
    });
    resourceSets.set(key, set);
  }
  return set;
}

/** What a client of these settings sees (also `svc mcp --inspect`). */
export function describeMcp(settings: McpSettings = MCP_DEFAULTS): {
  resources: { uri: string; name: string; description: string }[];
  tools: { name: string; description: string; parameters: string[] }[];
  prompts: { name: string; description: string; arguments: { name: string; required: boolean }[] }[];
} {
  return {
    resources: resourcesFor(settings)
      .list()
      .map((r) => ({ uri: r.uri, name: r.name, description: r.description })),
    tools: TOOLS.filter((t) => t.offered(settings)).map((t) => ({ name: t.name, description: t.description, parameters: Object.keys(t.input) })),
    prompts: PROMPTS.map((p) => ({ name: p.name, description: p.description, arguments: p.arguments.map((a) => ({ name: a.name, required: a.required })) })),
  };
}

function answer(result: ToolResult, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result, ...(isError ? { isError: true } : {}) };
}

/**
 * A server for one connection (the SDK binds a server to one transport).
 * @example
 * const server = createMcpServer(MCP_DEFAULTS, pool);
 * await server.connect(new StdioServerTransport());
 */
export function createMcpServer(settings: McpSettings, pool: ToolPool, log: (line: string) => void = () => {}): McpServer {
  const server = new McpServer({ name: 'svc', version }, { capabilities: { logging: {} }, instructions: 'Tools, docs and prompts for writing svc apps (TypeScript walker services). Read svc://grammar/spec for the API; validate code with validate_svc.' });
  for (const tool of TOOLS) {
    if (!tool.offered(settings)) continue;
    // Strict: an argument the tool does not take is an error, not silently dropped (a misspelt option would look applied).
    server.registerTool(tool.name, { title: tool.title, description: tool.description, inputSchema: z.object(tool.input).strict() }, async (args: Record<string, unknown>) => {
      const started = performance.now();
      try {
        const result = 'pool' in tool.run ? await pool.run(tool.run.pool, args) : await tool.run.local(args as never, settings);
        return answer(result, tool.failsWithError !== false && typeof result.error === 'string');
      } catch (error) {
        // Refused input, a timeout or a failure: an error result, never a dropped connection.
        const message = error instanceof Error ? error.message : String(error);
        if (!(error instanceof ToolInputError)) log(`svc mcp: ${tool.name} failed: ${message}`);
        return answer({ error: message }, true);
      } finally {
        log(`svc mcp: ${tool.name} ${Math.round(performance.now() - started)} ms`);
      }
    });
  }
  const resources = resourcesFor(settings);
  for (const r of resources.list()) {
    server.registerResource(r.name, r.uri, { title: r.title, description: r.description, mimeType: r.mimeType }, async (uri) => {
      const got = await resources.read(uri.href);
      return { contents: [{ uri: got.uri, mimeType: got.mimeType, text: got.text }] };
    });
  }
  for (const p of PROMPTS) {
    const shape: Record<string, z.ZodType<string | undefined>> = {};
    for (const a of p.arguments) shape[a.name] = a.required ? z.string().describe(a.description) : z.string().optional().describe(a.description);
    server.registerPrompt(p.name, { title: p.title, description: p.description, argsSchema: shape as z.ZodRawShape as Record<string, z.ZodString> }, (args: Record<string, string | undefined>) => {
      const given: Record<string, string> = {};
      for (const [k, v] of Object.entries(args)) if (v !== undefined) given[k] = v;
      return { messages: [{ role: 'user', content: { type: 'text', text: p.render(given) } }] };
    });
  }
  return server;
}
