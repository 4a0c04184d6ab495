/**
 * The manifest of the tool server's documentation: every `svc://docs/<topic>`
 * a client may ask for (a fixed list of topics, which
 * test/mcp/resources.test.ts holds the manifest to), each either a page
 * shipped in this package or absent with the reason, plus the
 * `svc://guide/*` pages. Files
 * are named relative to the package's folder and found from this module's
 * own URL, so they resolve wherever the package is installed.
 *
 * @example
 * const page = DOCS.osp;                     // { uri: 'svc://docs/osp', title, description, file, section }
 * if (page && !isAbsent(page)) readFileSync(fileOf(page), 'utf8');
 */
import { fileURLToPath } from 'node:url';

/**
 * A page that exists. `file` is relative to the package's folder.
 * @example const osp: DocPage = { uri: 'svc://docs/osp', title: '…', description: '…', file: 'docs/concepts/osp.md', section: 'reference' };
 */
export type DocPage = {
  uri: string;
  title: string;
  description: string;
  file: string;
  /** Where the page sits in the knowledge map. */
  section: Section;
};

/**
 * A topic of the list that has no meaning for svc: no page, only the reason.
 * @example const k8s: AbsentTopic = { absent: 'svc start --scale is not built yet' };
 */
export type AbsentTopic = { absent: string };

/**
 * One topic of the manifest.
 * @example const entry: DocEntry = DOCS.welcome as DocEntry;
 */
export type DocEntry = DocPage | AbsentTopic;

/**
 * The groups of the knowledge map, in reading order.
 * @example SECTIONS.reference // 'The programming model (reference)'
 */
export const SECTIONS = {
  start: 'Getting started',
  reference: 'The programming model (reference)',
  tutorial: 'Tutorials',
  service: 'The service around your code',
  workflow: 'Developer workflow',
  interop: 'Python and library use',
  quick: 'Quick reference',
} as const;
/**
 * A group of the knowledge map.
 * @example const s: Section = 'tutorial';
 */
export type Section = keyof typeof SECTIONS;

/**
 * The package's folder (this file is `mcp/catalog.ts`).
 * @example new URL('docs/errors.md', PACKAGE_ROOT)
 */
export const PACKAGE_ROOT = new URL('../', import.meta.url);

/**
 * Where a topic's page is in the documentation site's folders (`docs/`, the
 * one source of the site, the README's links and these resources).
 * @example docFile('osp') // 'docs/concepts/osp.md'
 */
function docFile(topic: string): string {
  const folder = SITE_FOLDERS[topic];
  return folder === undefined ? `docs/${topic}.md` : `docs/${folder}/${topic}.md`;
}

const SITE_FOLDERS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries({
    tutorial: ['bookmarks', 'first-app', 'tutorial-coding-primer', 'tutorial-basics', 'tutorial-osp', 'tutorial-fullstack-backend', 'tutorial-fullstack-auth', 'tutorial-production-local', 'tutorial-production-k8s'],
    concepts: ['model', 'architecture', 'core-concepts', 'osp', 'concurrency', 'walker-responses', 'foundation', 'primitives', 'functions-objects'],
    guides: ['auth', 'sso', 'webhooks', 'websockets', 'events', 'data-storage', 'service-calls', 'clusters', 'deployment', 'sandboxes', 'metrics', 'graph-visualizer', 'svc-db', 'benchmarking', 'install', 'advanced', 'client', 'scale', 'code-organization', 'testing', 'debugging', 'mcp', 'python-integration', 'library-mode', 'patterns', 'pitfalls', 'faq', 'cheatsheet'],
    reference: ['cli', 'config', 'appendices', 'settings', 'http-api'],
  }).flatMap(([folder, topics]) => topics.map((topic) => [topic, folder])),
);

const page = (topic: string, section: Section, title: string, description: string, file = docFile(topic)): DocPage => ({
  uri: `svc://docs/${topic}`,
  title,
  description,
  file,
  section,
});

const NO_AI = 'svc has no AI or LLM features of its own (no `by llm`, no model calls in the runtime); calling a model is ordinary TypeScript inside a walker or function — see svc://docs/functions-objects';
const NO_CLIENT = 'svc has no client-side framework or bundling (`--client` is out of scope: components, state and routing are your front-end framework\'s business); svc serves static files from public/ — see svc://docs/tutorial-fullstack-backend';

/**
 * Every `svc://docs/<topic>` of the list, in its order, plus `errors` (the
 * error-code catalogue, the repository's own `docs/errors.md`).
 *
 * @example
 * Object.keys(DOCS).length;                  // every topic of the list, plus errors
 * isAbsent(DOCS['tutorial-ai-agentic']!);    // true
 */
export const DOCS: Readonly<Record<string, DocEntry>> = {
  welcome: page('welcome', 'start', 'Welcome to svc', 'What svc is, what it gives you, and where to read next.'),
  install: page('install', 'start', 'Installing svc', 'Node 20, a checkout of svc, npm install, svc init for a new project; why never `npx svc` outside a project.'),
  'core-concepts': page('core-concepts', 'start', 'Core concepts', 'Nodes, edges, walkers and functions; per-user graphs, access levels, runs as transactions, the response envelope.'),
  'first-app': page('first-app', 'start', 'Your first app', 'From `svc init` to a served notes app: a node type, two walkers, curl with and without a token.'),
  cheatsheet: page('cheatsheet', 'start', 'Cheatsheet', 'The whole public API on one page: imports, node/edge/walker/function declarations, graph operations, endpoints, CLI.'),
  faq: page('faq', 'start', 'Frequently asked questions', 'Short answers to common questions: persistence, tokens, coercion, decorators, scaling, what is not built.'),

  foundation: page('foundation', 'reference', 'Reference: module foundation', 'The entry module: exports become endpoints, imports from svc, TypeScript settings, standard decorators, naming rules.'),
  primitives: page('primitives', 'reference', 'Reference: field types and values', 'TypeBox field schemas (T.String, T.Integer, T.Array, T.Optional, defaults, T.Upload), validation without coercion, what a field may hold.'),
  'functions-objects': page('functions-objects', 'reference', 'Reference: functions and classes', 'fn() endpoints and FnContext, Node/Edge/Walker classes, declare fields, constructors, SvcError.'),
  osp: page('osp', 'reference', 'Reference: nodes, edges and walkers', 'The graph model: connect, out/in with types and filters, typed edges, visit/report/skip/disengage, entry and exit abilities, spawning at a node.'),
  concurrency: page('concurrency', 'reference', 'Reference: runs, transactions and concurrency', 'A run is a transaction; one partition actor per root; async abilities; CONFLICT and retries; locks; events; the actor kernel.'),
  advanced: page('advanced', 'reference', 'Reference: advanced endpoints', 'restspec (methods, paths, raw bodies), hook walkers, WebSocket and webhook walkers, uploads, grants between users, sv.import.'),

  'tutorial-coding-primer': page('tutorial-coding-primer', 'tutorial', 'Tutorial: the TypeScript you need for svc', 'Classes, static members, declare, async/await, decorators and modules — only what svc code uses.'),
  'tutorial-basics': page('tutorial-basics', 'tutorial', 'Tutorial: a todo service step by step', 'Build the todo app: node type, create/list/toggle/delete walkers, a GET route, a function, a test.'),
  'tutorial-osp': page('tutorial-osp', 'tutorial', 'Tutorial: graphs and walkers', 'A small social graph: typed edges, traversals with visit, node abilities, stopping early, spawning at a node.'),
  'tutorial-ai-quickstart': { absent: NO_AI },
  'tutorial-ai-structured': { absent: NO_AI },
  'tutorial-ai-agentic': { absent: NO_AI },
  'tutorial-ai-multimodal': { absent: NO_AI },
  'tutorial-fullstack-setup': { absent: NO_CLIENT },
  'tutorial-fullstack-components': { absent: NO_CLIENT },
  'tutorial-fullstack-state': { absent: NO_CLIENT },
  'tutorial-fullstack-backend': page('tutorial-fullstack-backend', 'tutorial', 'Tutorial: a browser page on svc endpoints', 'Serve a hand-written page from public/ and call walkers with fetch: the envelope, errors, CORS. No bundling involved.'),
  'tutorial-fullstack-auth': page('tutorial-fullstack-auth', 'tutorial', 'Tutorial: signing users in from a page', 'Register, log in, keep the token, call private walkers, refresh, and single sign-on redirects back to your page.'),
  'tutorial-fullstack-routing': { absent: NO_CLIENT },
  'tutorial-production-local': page('tutorial-production-local', 'tutorial', 'Tutorial: production on one host', 'Run svc under a process manager: secrets, the prod profile, data folder, durability, proxies, health checks, graceful stop.'),
  'tutorial-production-k8s': page('tutorial-production-k8s', 'tutorial', 'Tutorial: production on Kubernetes', 'svc start --scale: the plan, the image, the deploy with its rollout and rollback, status, HTTPS through cert-manager, destroy.'),

  client: page('client', 'service', 'Calling svc from clients', 'Any HTTP client: endpoints, tokens, the envelope; WebSocket walkers and WalkerSocket from svc/client.'),
  scale: page('scale', 'service', 'Scaling: threads, processes, shared stores', 'Worker threads, a cluster of processes through Redis (KV_URL), PostgreSQL or MongoDB (DOCDB_URI), event streaming, metrics.'),
  cli: page('cli', 'workflow', 'The svc command', 'svc start (and --scale), scale, init, token, db, bench and mcp: what each does and its main flags.'),
  config: page('config', 'workflow', 'Configuration', 'svc.toml, profiles, environment variables and flags: precedence and the keys you touch most.'),
  'code-organization': page('code-organization', 'workflow', 'Organizing a project', 'The entry module and helper modules, what is exported, the project folder, public/, .svc/, several apps with sv.import.'),
  mcp: page('mcp', 'workflow', 'The svc tool server (MCP)', 'svc mcp: transports, the svc:// resources, the tools and prompts for AI clients, and a workflow that uses them.'),
  testing: page('testing', 'workflow', 'Testing svc apps', 'testApp from svc/testing: in-process requests with inject, users and tokens, node:test or tap.'),
  debugging: page('debugging', 'workflow', 'Debugging', '--dev, logs and trace ids, error envelopes, --faux, the /graph visualizer, svc db inspect.'),
  'python-integration': page('python-integration', 'interop', 'Coming from the Python walker service', 'What maps to what, wire compatibility, users migrated from the Python original, calling Python services over HTTP.'),
  'library-mode': page('library-mode', 'interop', 'svc as a library', 'Run walkers without a server: Graph.open with a Registry and a store; the actor kernel on its own.'),
  'walker-responses': page('walker-responses', 'quick', 'Walker responses', 'What a client receives: the envelope, reports, results, nodes as {id, type, context}, errors and statuses.'),
  appendices: page('appendices', 'quick', 'Appendices', 'Glossary of the seed\'s words and svc\'s, the built-in routes, files on disk, limits.'),
  // The site's pages written for it (the README's sections, the tutorial): every page of docs/ is also a resource.
  bookmarks: page('bookmarks', 'tutorial', 'Tutorial: a bookmarks app, step by step', 'Node types and an edge, private and public walkers, a GET route, a function, a hook walker, a WebSocket walker, a test, --dev.'),
  model: page('model', 'reference', 'Graphs, walkers, access and hooks', 'Graphs and roots, nodes, edges, walkers and abilities, access levels and grants, the guest graph, hook walkers and their fields.'),
  architecture: page('architecture', 'reference', 'Architecture and the actor kernel', 'The rooms of svc, partition actors, worker threads, the front, mailboxes and supervision: how a request becomes a run.'),
  auth: page('auth', 'service', 'Users, tokens and the admin', 'Registration, login, tokens and their revocation, password rules, email flows, the admin account and the admin portal.'),
  sso: page('sso', 'service', 'Single sign-on', 'OpenID Connect and OAuth platforms under /sso/{platform}: configuration, redirects, linking accounts, the callback.'),
  webhooks: page('webhooks', 'service', 'API keys and webhooks', 'API keys for services (/api-key/*), webhook walkers (POST /webhook/<Name>) with keys and signatures.'),
  websockets: page('websockets', 'service', 'WebSocket walkers', 'WebSocket walkers at /ws/<Name>: tokens, frames, broadcast, limits and backpressure, WalkerSocket.'),
  events: page('events', 'service', 'Event streaming', 'Publishing events and consuming them with walkers and functions: streams, consumer groups, retries, dead letters.'),
  'data-storage': page('data-storage', 'service', 'Data and storage', 'store() for files and object storage, kvstore() for documents and keys, locks, and one shared database (DOCDB_URI).'),
  'service-calls': page('service-calls', 'service', 'Calls between svc apps', 'sv.import: typed calls to another app, retries, timeouts, circuit breaking; microservice mode behind one gateway.'),
  clusters: page('clusters', 'service', 'A cluster of processes', 'KV_URL: several svc processes serving one service through Redis, partition leases, forwarding, failure and recovery.'),
  deployment: page('deployment', 'workflow', 'Deploying', 'svc start --scale to Kubernetes step by step (plan, image, rollout, status, destroy) and notes for any deployment.'),
  sandboxes: page('sandboxes', 'service', 'Sandboxes', 'sandboxes(): previews of users\' projects, locally, in containers, or as pods on Kubernetes behind a routing proxy.'),
  metrics: page('metrics', 'service', 'Metrics', 'The Prometheus endpoint, what svc measures per route, walker and store, and your own metrics.'),
  'graph-visualizer': page('graph-visualizer', 'workflow', 'Seeing the graph', 'The /graph visualizer, /graph/data and /traverse: looking at a user\'s graph while developing.'),
  'svc-db': page('svc-db', 'workflow', 'Operating the stores: svc db', 'svc db inspect, stats, copy, alias, quarantine and recover: operating the graph and user stores.'),
  benchmarking: page('benchmarking', 'workflow', 'Benchmarking', 'svc bench for load-testing your app, and the repository\'s own benchmarks with their figures.'),
  settings: page('settings', 'quick', 'Settings', 'Every setting of svc.toml with its environment variable and default, and the order in which they apply.'),
  'http-api': page('http-api', 'quick', 'HTTP API', 'The envelope and every route the runtime serves: walkers, functions, users, admin, API keys, SSO, webhooks, health, docs, CORS.'),
  errors: page('errors', 'quick', 'Error codes', 'Every error code svc raises, its HTTP status and meaning (docs/errors.md of the package).', 'docs/errors.md'),
};

/**
 * The `svc://guide/*` pages (exposed by `expose.pitfalls`).
 * @example GUIDES.pitfalls?.uri // 'svc://guide/pitfalls'
 */
export const GUIDES: Readonly<Record<string, DocPage>> = {
  pitfalls: {
    uri: 'svc://guide/pitfalls',
    title: 'Pitfalls: mistakes to avoid in svc code',
    description: 'Wrong vs right for the mistakes svc code most often has: missing await, fields outside has, class-field initializers, coercion, tokens, exit order.',
    file: 'docs/guides/pitfalls.md',
    section: 'quick',
  },
  patterns: {
    uri: 'svc://guide/patterns',
    title: 'Patterns: idiomatic svc code',
    description: 'Complete, working patterns: find-or-create, lookup by id, typed relations, per-user data, sharing, errors, hooks, functions that spawn walkers.',
    file: 'docs/guides/patterns.md',
    section: 'quick',
  },
};

/**
 * Whether a manifest entry is an absent topic.
 * @example if (isAbsent(DOCS['tutorial-ai-agentic']!)) console.log('no such page');
 */
export function isAbsent(entry: DocEntry): entry is AbsentTopic {
  return 'absent' in entry;
}

/**
 * The absolute path of a page's file.
 * @example fileOf(DOCS.welcome as DocPage) // '/…/svc/docs/welcome.md'
 */
export function fileOf(page: DocPage): string {
  return fileURLToPath(new URL(page.file, PACKAGE_ROOT));
}

/**
 * The pages that exist, docs then guides.
 * @example for (const p of presentPages()) console.log(p.uri);
 */
export function presentPages(): DocPage[] {
  return [...Object.values(DOCS).filter((e): e is DocPage => !isAbsent(e)), ...Object.values(GUIDES)];
}
