/**
 * The `svc://` resources of the tool server: the grammar
 * (from an injected provider), the documentation pages and guides of the
 * manifest (`catalog.ts`), and the examples. Each group can be switched off
 * (`[mcp] expose_*`). A URI is looked up in the table built here — never
 * turned into a file path — so nothing outside the package's own pages can be
 * read, whatever the URI (`..`, encoded separators, NUL).
 *
 * @example
 * const resources = createResources({ grammar: { spec: publicSpec, tokens: grammarTokens } });
 * resources.list().map((r) => r.uri);           // ['svc://grammar/spec', …, 'svc://docs/welcome', …]
 * (await resources.read('svc://docs/osp')).text; // the page's markdown
 */
import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { DOCS, type DocPage, fileOf, GUIDES, isAbsent } from './catalog.ts';
import { exampleCategories, readExample } from './tools/examples.ts';
import { ToolInputError } from './types.ts';

/**
 * What `resources/list` shows of a resource.
 * @example const info: ResourceInfo = { uri: 'svc://docs/osp', name: 'docs/osp', title: '…', description: '…', mimeType: 'text/markdown' };
 */
export type ResourceInfo = { uri: string; name: string; title: string; description: string; mimeType: string };

/**
 * A resource's content.
 * @example const { text } = await resources.read('svc://guide/pitfalls');
 */
export type ResourceContent = { uri: string; mimeType: string; text: string };

/**
 * Where the grammar comes from (mcp/grammar/ in the server; a fake in tests).
 * @example const fake: GrammarProvider = { spec: async () => "declare module 'svc' {}", tokens: () => '# vocabulary' };
 */
export type GrammarProvider = { spec(): Promise<string>; tokens(): string };

/**
 * Which groups are offered; each defaults to true. `pitfalls` governs `svc://guide/*`.
 * @example const docsOnly: Exposure = { grammar: false, examples: false, pitfalls: false };
 */
export type Exposure = { grammar?: boolean; docs?: boolean; examples?: boolean; pitfalls?: boolean };

/**
 * What {@link createResources} takes.
 * @example const options: ResourceOptions = { grammar: { spec: publicSpec, tokens: grammarTokens }, expose: { examples: false } };
 */
export type ResourceOptions = { grammar: GrammarProvider; expose?: Exposure };

/**
 * The resources of one exposure.
 * @example const resources: Resources = createResources({ grammar });
 */
export type Resources = {
  /** Every resource offered, grammar first, then docs, guides, examples. */
  list(): ResourceInfo[];
  /** A resource's content; a `ToolInputError` for a URI that is unknown, absent, not offered or malformed. */
  read(uri: string): Promise<ResourceContent>;
};

type Group = keyof Exposure;
type Entry = { info: ResourceInfo; group: Group; load: () => Promise<string> | string };

const MARKDOWN = 'text/markdown';
/** `svc://<group>/<name>` after decoding: plain names only; the group is the URI's authority, of any case (as the scheme). */
const SHAPE = /^([A-Za-z]+)\/([A-Za-z0-9][A-Za-z0-9._-]*)$/;

/** Read a shipped page once (its links to other pages turned into their `svc://` URIs); later reads come from memory. */
const pageTexts = new Map<string, Promise<string>>();
function pageText(page: DocPage): Promise<string> {
  let text = pageTexts.get(page.file);
  if (!text) {
    text = readFile(fileOf(page), 'utf8').then((markdown) => linkToResources(markdown, page.file));
    // A failed read is not cached: the next one tries again.
    text.catch(() => pageTexts.delete(page.file));
    pageTexts.set(page.file, text);
  }
  return text;
}

/** The `svc://` URI of each page file of the manifest (`docs/guides/testing.md` → `svc://docs/testing`). */
let uriByFile: Map<string, string> | undefined;
function uriOfFile(file: string): string | undefined {
  uriByFile ??= new Map([...Object.values(GUIDES), ...Object.values(DOCS).filter((e): e is DocPage => !isAbsent(e))].map((p) => [p.file, p.uri]));
  return uriByFile.get(file);
}

/**
 * A page's markdown links to other pages of the site, rewritten to the `svc://` URI the tool server reads them by:
 * relative links (`../guides/testing.md#setup`) and the site's own routes (`/guides/testing`) alike, the anchor kept
 * as a fragment (`svc://docs/testing#setup`; reading a URI ignores it). Links inside code, to other sites, and to
 * pages without a resource stay as they are. `file` is the page's path in the package (`docs/tutorial/first-app.md`).
 *
 * @example
 * linkToResources('See [testing](../guides/testing.md#setup).', 'docs/tutorial/first-app.md')
 * // 'See [testing](svc://docs/testing#setup).'
 */
export function linkToResources(markdown: string, file: string): string {
  const dir = posix.dirname(file);
  let fence: string | undefined;
  // The site's front matter (`order:` for its sidebar) is not the page's text.
  return markdown
    .replace(/^---\n[\s\S]*?\n---\n/, '')
    .split('\n')
    .map((line) => {
      const f = /^\s*(`{3,}|~{3,})/.exec(line);
      if (f) {
        const mark = f[1] as string;
        if (fence === undefined) fence = mark;
        else if (mark[0] === fence[0] && mark.length >= fence.length) fence = undefined;
        return line;
      }
      if (fence !== undefined) return line;
      // Inline code spans are left alone: split on them, rewrite the rest.
      return line
        .split(/(`+[^`]*`+)/)
        .map((part, i) =>
          i % 2 === 1
            ? part
            : part.replace(/\]\(\s*([^()\s]+?)\s*\)/g, (whole, target: string) => {
                const m = /^([^#?]*)(#[^\s]*)?$/.exec(target);
                const path = m?.[1] ?? '';
                if (!path || /^[a-z][a-z0-9+.-]*:/i.test(path)) return whole;
                const resolved = path.startsWith('/') ? posix.join('docs', path) : posix.join(dir, path);
                const candidate = resolved.endsWith('.md') ? resolved : `${resolved.replace(/\/$/, '')}.md`;
                const uri = uriOfFile(posix.normalize(candidate));
                return uri ? `](${uri}${m?.[2] ?? ''})` : whole;
              }),
        )
        .join('');
    })
    .join('\n');
}

const FENCE_LANG: Record<string, string> = { ts: 'ts', mts: 'ts', js: 'js', mjs: 'js', json: 'json', md: 'markdown', toml: 'toml', html: 'html', css: 'css', sh: 'sh', yml: 'yaml', yaml: 'yaml' };

/** An example as one markdown document: its description, then each file in a fence longer than any run of backticks inside it. */
function exampleMarkdown(name: string): string {
  const example = readExample(name);
  if (!example) throw new ToolInputError(`unknown example ${name}`);
  const parts = [`# Example: ${example.name}`, '', example.description, '', `Files (from \`${example.source}\`): ${example.files.map((f) => `\`${f.path}\``).join(', ')}`, ''];
  for (const file of example.files) {
    const longest = Math.max(2, ...[...file.content.matchAll(/`+/g)].map((m) => m[0].length));
    const fence = '`'.repeat(longest + 1);
    const ext = /\.([A-Za-z0-9]+)$/.exec(file.path)?.[1]?.toLowerCase() ?? '';
    parts.push(`## ${file.path}`, '', `${fence}${FENCE_LANG[ext] ?? ''}`, file.content.replace(/\n$/, ''), fence, '');
  }
  return parts.join('\n');
}

function buildEntries(grammar: GrammarProvider): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  const add = (group: Group, info: ResourceInfo, load: Entry['load']) => entries.set(info.uri, { info, group, load });

  add('grammar', {
    uri: 'svc://grammar/spec',
    name: 'grammar/spec',
    title: 'svc API specification',
    description: "svc's public API as one TypeScript declaration text (declare module 'svc'): every class, decorator, function and type an app imports.",
    mimeType: 'text/plain',
  }, () => grammar.spec());
  add('grammar', {
    uri: 'svc://grammar/tokens',
    name: 'grammar/tokens',
    title: 'svc vocabulary',
    description: 'The names of an svc module — classes, decorators, static members, walker and node methods, T schema builders, enums — with one line each.',
    mimeType: MARKDOWN,
  }, () => grammar.tokens());
  for (const entry of Object.values(DOCS)) {
    if (isAbsent(entry)) continue;
    const page = entry;
    add('docs', { uri: page.uri, name: page.uri.slice('svc://'.length), title: page.title, description: page.description, mimeType: MARKDOWN }, () => pageText(page));
  }
  for (const page of Object.values(GUIDES)) {
    add('pitfalls', { uri: page.uri, name: page.uri.slice('svc://'.length), title: page.title, description: page.description, mimeType: MARKDOWN }, () => pageText(page));
  }
  for (const example of exampleCategories()) {
    add('examples', {
      uri: `svc://examples/${example.name}`,
      name: `examples/${example.name}`,
      title: `Example: ${example.name}`,
      description: `${example.description} (${example.files.join(', ')})`,
      mimeType: MARKDOWN,
    }, () => exampleMarkdown(example.name));
  }
  return entries;
}

/**
 * The canonical form of an `svc://` URI (`svc://docs/osp`), decoding
 * percent-escapes once; a `ToolInputError` for anything that is not a plain
 * `svc://<group>/<name>` (dot segments, separators, escapes, other schemes).
 *
 * @example
 * canonicalUri('svc://docs/%6Fsp')          // 'svc://docs/osp'
 * canonicalUri('SVC://DOCS/osp')            // 'svc://docs/osp' (scheme and authority are case-insensitive; the name is not)
 * canonicalUri('svc://docs/osp#entry-abilities') // 'svc://docs/osp' (the fragment is a place in the page)
 * canonicalUri('svc://docs/../../etc/passwd') // throws ToolInputError
 */
export function canonicalUri(uri: string): string {
  if (typeof uri !== 'string' || uri.length === 0) throw new ToolInputError('uri must be a non-empty string such as svc://docs/welcome');
  if (uri.length > 300) throw new ToolInputError('uri is too long');
  // A fragment (`svc://docs/testing#setup`, as links between pages carry one) names a place in the page, not another resource.
  const match = /^svc:\/\/([^#]*)(?:#.*)?$/i.exec(uri.trim());
  if (!match) throw new ToolInputError(`not an svc:// resource: ${JSON.stringify(uri)} (try svc://docs/welcome)`);
  let path: string;
  try {
    path = decodeURIComponent(match[1] as string);
  } catch {
    throw new ToolInputError(`malformed escape in ${JSON.stringify(uri)}`);
  }
  const shape = SHAPE.exec(path);
  if (!shape || path.includes('..')) throw new ToolInputError(`not a resource URI svc serves: ${JSON.stringify(uri)}`);
  return `svc://${(shape[1] as string).toLowerCase()}/${shape[2]}`;
}

/**
 * The resources the tool server offers, as `options.expose` allows.
 *
 * @example
 * const docsOnly = createResources({ grammar, expose: { grammar: false, examples: false } });
 * await docsOnly.read('svc://grammar/spec'); // throws ToolInputError: not offered
 */
export function createResources(options: ResourceOptions): Resources {
  const expose: Required<Exposure> = { grammar: true, docs: true, examples: true, pitfalls: true, ...stripUndefined(options.expose ?? {}) };
  const entries = buildEntries(options.grammar);
  const offered = [...entries.values()].filter((e) => expose[e.group]);
  return {
    list: () => offered.map((e) => ({ ...e.info })),
    async read(uri: string): Promise<ResourceContent> {
      const canonical = canonicalUri(uri);
      const entry = entries.get(canonical);
      if (!entry) {
        const topic = canonical.startsWith('svc://docs/') ? canonical.slice('svc://docs/'.length) : undefined;
        const known = topic !== undefined && Object.hasOwn(DOCS, topic) ? DOCS[topic] : undefined;
        if (known && isAbsent(known)) throw new ToolInputError(`${canonical} has no page in svc: ${known.absent}`);
        throw new ToolInputError(`unknown resource ${canonical}; read svc://docs/welcome or call understand_svc for the list`);
      }
      if (!expose[entry.group]) throw new ToolInputError(`${canonical} is not offered by this server (its ${entry.group} resources are switched off)`);
      return { uri: canonical, mimeType: entry.info.mimeType, text: await entry.load() };
    },
  };
}

function stripUndefined(expose: Exposure): Exposure {
  return Object.fromEntries(Object.entries(expose).filter(([, v]) => v !== undefined)) as Exposure;
}
