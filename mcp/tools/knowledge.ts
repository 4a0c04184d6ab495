/**
 * The knowledge tools: `search_docs` (BM25 over the offered pages, with
 * titles, descriptions and headings weighted above the body), `understand_svc`
 * (a map of svc's concepts and the resources to read for each) and
 * `get_resource`. They read through the same `Resources` the client lists, so
 * a switched-off group is neither searched nor mapped.
 *
 * @example
 * const resources = createResources({ grammar });
 * await searchDocs(resources, { query: 'share a node with another user' }); // { results: [{ uri: 'svc://guide/patterns', … }, …] }
 * await understandSvc(resources);                                           // { knowledge_map: '# svc knowledge map …' }
 * await getResource(resources, { uri: 'svc://docs/osp' });                  // { uri, content }
 */
import { DOCS, type DocPage, GUIDES, isAbsent, SECTIONS, type Section as MapSection } from '../catalog.ts';
import type { Resources } from '../resources.ts';
import { checkSize, ToolInputError } from '../types.ts';

/**
 * One hit of `search_docs`.
 * @example const hit: SearchResult = { uri: 'svc://docs/osp', title: '…', description: '…', snippet: '…visit(await here.out(Todo))…', score: 7.5 };
 */
export type SearchResult = { uri: string; title: string; description: string; snippet: string; score: number };

// BM25 parameters (the usual ones) and how much a term counts in each field of a section.
const K1 = 1.2;
const B = 0.75;
const WEIGHT = { title: 2, description: 1, heading: 3, body: 1 } as const;
/** A page scores its best section plus this share of its second best. */
const SECOND = 0.3;
const SNIPPET_CHARS = 280;

const STOP = new Set(
  'a about all also an and another any are as at be been but by can could do does each for from has have how i if in into is it its just me more most my no not of on one only or other should so some than that the their them then there these this to too use using very was were what when where which who why will with would you your svc'.split(' '),
);

/**
 * A word's index form: lower case, with plural, verb and `-ion` endings and a
 * final `e` dropped, so `share`, `shares`, `shared` and `sharing` meet.
 *
 * @example [stem('sharing'), stem('shared'), stem('coercion'), stem('coerced')] // ['shar', 'shar', 'coerc', 'coerc']
 */
export function stem(word: string): string {
  let w = word.toLowerCase();
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length > 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  let cut = false;
  if (w.length > 5 && w.endsWith('ing')) [w, cut] = [w.slice(0, -3), true];
  else if (w.length > 4 && w.endsWith('ed')) [w, cut] = [w.slice(0, -2), true];
  else if (w.length > 6 && w.endsWith('ion')) w = w.slice(0, -3);
  // running → runn → run, stopped → stopp → stop
  if (cut && /([^lsz])\1$/.test(w)) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

/**
 * Index terms of a text: words and identifiers, camelCase and snake_case
 * split into parts as well as kept whole (`permGrant` → `permgrant`, `perm`, `grant`).
 *
 * @example tokenize('permGrant SVC_ERR_BAD_WRITE') // ['permgrant', 'perm', 'grant', 'svc_err_bad_writ', 'err', 'bad', 'writ']
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.match(/[A-Za-z0-9_]+/g) ?? []) {
    const whole = raw.toLowerCase();
    const parts = raw
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .split(/[\s_]+/)
      .filter((p) => p.length > 0);
    if (!STOP.has(whole) && whole.length > 1) out.push(stem(whole));
    if (parts.length > 1) for (const p of parts) if (p.length > 1 && !STOP.has(p.toLowerCase())) out.push(stem(p));
  }
  return out;
}

/** A part of a page under one heading: the unit BM25 ranks. */
type Section = {
  page: number;
  lines: string[];
  /** Weighted term frequencies over the section's fields. */
  tf: Map<string, number>;
  length: number;
};
type Page = { uri: string; title: string; description: string };
type Index = { pages: Page[]; sections: Section[]; df: Map<string, number>; avgLength: number };

function count(into: Map<string, number>, terms: string[], weight: number): void {
  for (const t of terms) into.set(t, (into.get(t) ?? 0) + weight);
}

/** A page cut at its headings (`#` lines inside code fences are not headings). */
function sectionsOf(text: string): { heading: string; lines: string[] }[] {
  const out: { heading: string; lines: string[] }[] = [{ heading: '', lines: [] }];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const f = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (f && (fence === undefined || f.startsWith(fence))) fence = fence === undefined ? f : undefined;
    const heading = fence === undefined && !f ? /^#{1,6}\s+(.+)$/.exec(line)?.[1] : undefined;
    if (heading !== undefined) out.push({ heading, lines: [line] });
    else (out[out.length - 1] as { lines: string[] }).lines.push(line);
  }
  return out.filter((s) => s.heading !== '' || s.lines.some((l) => l.trim() !== ''));
}

async function buildIndex(resources: Resources): Promise<Index> {
  const pages: Page[] = [];
  const sections: Section[] = [];
  // The grammar is reference text of another kind (declarations), reached through understand_svc.
  for (const info of resources.list().filter((r) => !r.uri.startsWith('svc://grammar/'))) {
    const { text } = await resources.read(info.uri);
    const page = pages.push({ uri: info.uri, title: info.title, description: info.description }) - 1;
    const title = tokenize(info.title);
    const description = tokenize(info.description);
    for (const part of sectionsOf(text)) {
      const tf = new Map<string, number>();
      const body = tokenize(part.lines.join('\n'));
      count(tf, title, WEIGHT.title);
      count(tf, description, WEIGHT.description);
      count(tf, tokenize(part.heading), WEIGHT.heading);
      count(tf, body, WEIGHT.body);
      sections.push({ page, lines: part.lines, tf, length: body.length });
    }
  }
  const df = new Map<string, number>();
  for (const s of sections) for (const t of s.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const avgLength = sections.reduce((sum, s) => sum + s.length, 0) / Math.max(1, sections.length);
  return { pages, sections, df, avgLength };
}

const indexes = new WeakMap<Resources, Promise<Index>>();
function indexOf(resources: Resources): Promise<Index> {
  let index = indexes.get(resources);
  if (!index) {
    index = buildIndex(resources);
    index.catch(() => indexes.delete(resources));
    indexes.set(resources, index);
  }
  return index;
}

function idf(index: Index, term: string): number {
  const n = index.sections.length;
  const df = index.df.get(term) ?? 0;
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

function bm25(index: Index, section: Section, terms: string[]): number {
  let score = 0;
  for (const t of terms) {
    const tf = section.tf.get(t);
    if (!tf) continue;
    score += (idf(index, t) * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * section.length) / Math.max(1, index.avgLength)));
  }
  return score;
}

/** The lines of a section that hold the most (and rarest) query terms, as one line of about {@link SNIPPET_CHARS} characters. */
function snippet(index: Index, section: Section, terms: string[]): string {
  const wanted = new Set(terms);
  const lines = section.lines.filter((l) => l.trim() !== '' && !/^\s*(`{3,}|~{3,})/.test(l));
  let best = 0;
  let bestScore = -1;
  for (let i = 0; i < lines.length; i++) {
    let score = 0;
    for (const t of new Set(tokenize(`${lines[i]} ${lines[i + 1] ?? ''}`))) if (wanted.has(t)) score += idf(index, t);
    // A heading alone says little: on a tie, prefer the text under it.
    if (/^#/.test(lines[i] as string)) score *= 0.9;
    if (score > bestScore) [best, bestScore] = [i, score];
  }
  let text = lines
    .slice(best, best + 3)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (text.length > SNIPPET_CHARS) text = `${text.slice(0, SNIPPET_CHARS).replace(/\s+\S*$/, '')}…`;
  return best > 0 ? `…${text}` : text;
}

/**
 * `search_docs`: the offered pages (docs, guides, examples) ranked for
 * `query` — BM25 over their sections, a page scoring its best section and a
 * share of its second — best first; only pages that contain a query term.
 * `limit`: 1–50, default 5.
 *
 * @example
 * const { results } = await searchDocs(resources, { query: 'private walker token 401', limit: 3 });
 * results[0]; // { uri, title, description, snippet, score }
 */
export async function searchDocs(resources: Resources, args: { query: string; limit?: number }): Promise<{ results: SearchResult[] }> {
  if (typeof args?.query !== 'string' || args.query.trim() === '') throw new ToolInputError('query must be a non-empty string');
  checkSize(args.query, 'query');
  const limit = args.limit ?? 5;
  if (!Number.isInteger(limit) || limit < 1 || limit > 50) throw new ToolInputError(`limit must be a whole number from 1 to 50, not ${String(args.limit)}`);
  const index = await indexOf(resources);
  let terms = [...new Set(tokenize(args.query))];
  // A query of stop words only ("how to use it"): search for its words anyway.
  if (terms.length === 0) terms = [...new Set((args.query.match(/[A-Za-z0-9_]+/g) ?? []).map((w) => stem(w)))];
  const best = new Map<number, { first: number; second: number; section: Section }>();
  for (const section of index.sections) {
    const score = bm25(index, section, terms);
    if (score <= 0) continue;
    const seen = best.get(section.page);
    if (!seen) best.set(section.page, { first: score, second: 0, section });
    else if (score > seen.first) best.set(section.page, { first: score, second: seen.first, section });
    else if (score > seen.second) seen.second = score;
  }
  const phrase = args.query.trim().toLowerCase();
  const results: SearchResult[] = [];
  for (const [pageNo, { first, second, section }] of best) {
    const page = index.pages[pageNo] as Page;
    let score = first + SECOND * second;
    // The whole query in the title or description: what the page is about.
    if (phrase.length > 3 && `${page.title} ${page.description}`.toLowerCase().includes(phrase)) score *= 1.5;
    results.push({ uri: page.uri, title: page.title, description: page.description, snippet: snippet(index, section, terms), score: Math.round(score * 1000) / 1000 });
  }
  results.sort((a, b) => b.score - a.score || a.uri.localeCompare(b.uri));
  return { results: results.slice(0, limit) };
}

/** What each section of the map says before its list of pages. */
const SECTION_INTRO: Record<MapSection, string> = {
  start:
    'svc turns TypeScript walkers and functions into a web service. An app is one entry module; every exported `Walker` class is `POST /walker/<Name>`, every exported `fn(...)` is `POST /function/<name>`. Each user has a persistent graph anchored at a root; anonymous calls to public walkers share a guest graph.',
  reference:
    '`Node`/`Edge` classes hold data (`static has = T.Object({...})` + `declare` fields, never initialised); walkers travel the graph with `@entry(Type)`/`@exit(Type)` abilities, `visit`, `report`, `skip`, `disengage`; every graph operation (`connect`, `out`, `in`, `destroy`) is awaited. A run is a transaction: all or nothing.',
  tutorial: 'Step-by-step builds: a todo service, a social graph, a browser page, sign-in, production on one host.',
  service:
    'Around your code: users and tokens (`/user/*`), the response envelope, WebSocket and webhook walkers, clients, scaling with worker threads, Redis (`KV_URL`) and PostgreSQL/MongoDB (`DOCDB_URI`).',
  workflow: 'The `svc` command (start, init, token, db, bench, mcp), `svc.toml`, project layout, in-process tests with `svc/testing`, debugging.',
  interop: 'Coming from the Python walker service; running walkers as a library without a server.',
  quick: 'Answers at a glance: response shapes, error codes, glossary and limits — and the guides of mistakes to avoid and patterns to copy.',
};

/**
 * `understand_svc`: a markdown map of svc's concepts with the resource URIs
 * to read for each — only those this server offers.
 *
 * @example
 * const { knowledge_map } = await understandSvc(resources);
 * knowledge_map.includes('svc://guide/pitfalls'); // true unless guides are switched off
 */
export async function understandSvc(resources: Resources): Promise<{ knowledge_map: string }> {
  const offered = new Set(resources.list().map((r) => r.uri));
  const lines: string[] = [
    '# svc knowledge map',
    '',
    'svc is a TypeScript walker-service runtime: nodes, edges, walkers and functions in one module, served over HTTP/WebSocket with auth, per-user persistent graphs, OpenAPI docs and metrics. Read the resources below with `get_resource` (or search them with `search_docs`); check code with `validate_svc`; explain errors with `explain_error`.',
    '',
    '## The shape of an app',
    '',
    '```ts',
    "import { entry, fn, Node, Root, T, Walker } from 'svc';",
    'export class Todo extends Node {',
    '  static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });',
    '  declare title: string; declare done: boolean;',
    '}',
    'export class AddTodo extends Walker {            // POST /walker/AddTodo',
    "  static access = 'pub' as const;               // default: private (token needed)",
    '  static has = T.Object({ title: T.String() });',
    '  declare title: string;',
    '  @entry(Root) async add(here: Root) { this.report(await here.connect(new Todo({ title: this.title }))); }',
    '}',
    'export const count = fn({}, async (_args, ctx) => (await ctx.root.out(Todo)).length);   // POST /function/count',
    '```',
    '',
  ];
  const pages = [...Object.values(DOCS).filter((e): e is DocPage => !isAbsent(e)), ...Object.values(GUIDES)];
  for (const [section, heading] of Object.entries(SECTIONS) as [MapSection, string][]) {
    const here = pages.filter((p) => p.section === section && offered.has(p.uri));
    if (here.length === 0) continue;
    lines.push(`## ${heading}`, '', SECTION_INTRO[section], '');
    for (const p of here) lines.push(`- \`${p.uri}\` — ${p.description}`);
    lines.push('');
  }
  const grammar = [...offered].filter((u) => u.startsWith('svc://grammar/'));
  if (grammar.length > 0) {
    lines.push('## The API itself', '', 'The exact types of everything `svc` exports, generated from the code:', '');
    for (const u of grammar) lines.push(`- \`${u}\``);
    lines.push('');
  }
  const examples = resources.list().filter((r) => r.uri.startsWith('svc://examples/'));
  if (examples.length > 0) {
    lines.push('## Examples', '', 'Whole apps to copy (also `list_examples` / `get_example`):', '');
    for (const e of examples) lines.push(`- \`${e.uri}\` — ${e.description}`);
    lines.push('');
  }
  const absent = Object.entries(DOCS).filter(([, e]) => isAbsent(e));
  if (absent.length > 0) {
    lines.push('## Not in svc', '', `Topics of the original product with no svc page: ${absent.map(([t]) => t).join(', ')} (no AI/LLM features, no client bundling, no Kubernetes deployment yet).`, '');
  }
  lines.push(
    '## Workflow',
    '',
    '1. Read the cheatsheet and the pitfalls before writing code.',
    '2. Search the docs and take the closest example.',
    '3. Write the module; `validate_svc` until it is clean.',
    '4. `run_svc` with an entrypoint (or `graph_visualize`) to see it work.',
    '5. On an error, `explain_error` with the message.',
  );
  return { knowledge_map: lines.join('\n') };
}

/**
 * `get_resource`: a resource's content, or `{ uri, error }` when it cannot be
 * read (unknown, absent, not offered, malformed).
 *
 * @example
 * await getResource(resources, { uri: 'svc://docs/tutorial-ai-agentic' }); // { uri, error: '… has no page in svc: …' }
 */
export async function getResource(resources: Resources, args: { uri: string }): Promise<{ uri: string; content: string } | { uri: string; error: string }> {
  const uri = typeof args?.uri === 'string' ? args.uri : String(args?.uri);
  try {
    const got = await resources.read(uri);
    return { uri: got.uri, content: got.text };
  } catch (error) {
    return { uri, error: error instanceof Error ? error.message : String(error) };
  }
}
