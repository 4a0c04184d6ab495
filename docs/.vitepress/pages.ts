/**
 * The documentation site's pages, found by scanning `docs/` (no list to keep
 * up to date): each page's route, its first `# ` heading, the sidebar built
 * from the folder tree, and the markdown-it plugin that turns the tool
 * server's `svc://docs/<topic>` and `svc://guide/<name>` URIs into links to
 * the page, so one markdown source serves the site and the `svc://` resources.
 *
 * Decisions:
 * - A topic is a page's file name without `.md` (`docs/guides/testing.md` is
 *   `svc://docs/testing`), the rule `mcp/catalog.ts` follows; `svc://guide/*`
 *   names pages of `docs/guides/`. A URI no page answers stays text (and the
 *   site test fails on no link, so nothing breaks silently).
 * - Sidebar order: welcome, tutorial, concepts, guides, reference, errors, then
 *   any other top-level page; inside a folder a page's `order:` front matter
 *   wins, then the catalogue's reading order, then the file name.
 * - Imports only node: modules and the catalogue, so VitePress's config and the
 *   tests (test/docs/) load it alike.
 *
 * @example
 * const pages = scanPages(DOCS_DIR);
 * pages.find((p) => p.topic === 'testing')?.route; // '/guides/testing'
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOCS, GUIDES, isAbsent } from '../../mcp/catalog.ts';

/**
 * The `docs/` folder of this checkout.
 * @example join(DOCS_DIR, 'welcome.md')
 */
export const DOCS_DIR = fileURLToPath(new URL('..', import.meta.url)).replace(/[\\/]$/, '');

/**
 * Files under `docs/` that are not pages (VitePress's `srcExclude`, and skipped by the scan).
 * @example SRC_EXCLUDE.includes('**\/node_modules/**') // true
 */
export const SRC_EXCLUDE = ['**/node_modules/**', '**/_*.md', '**/README.md', '.vitepress/**'];

/**
 * The sidebar's groups, in order: a top-level page or a folder.
 * @example SIDEBAR_ORDER[0] // 'welcome'
 */
export const SIDEBAR_ORDER = ['welcome', 'tutorial', 'concepts', 'guides', 'reference', 'errors'];

const FOLDER_TITLES: Readonly<Record<string, string>> = { tutorial: 'Tutorial', concepts: 'Concepts', guides: 'Guides', reference: 'Reference' };

/**
 * One page of the site.
 * @example const p: SitePage = { file: 'guides/testing.md', route: '/guides/testing', topic: 'testing', title: 'Testing svc apps', folder: 'guides', order: undefined };
 */
export type SitePage = {
  /** Relative to `docs/`, with forward slashes. */
  file: string;
  /** The clean URL of the page (`/guides/testing`; `/` for index.md). */
  route: string;
  /** The file name without `.md`: the `svc://docs/<topic>` it answers. */
  topic: string;
  /** The first `# ` heading, else the topic. */
  title: string;
  /** The top-level folder, or '' for a page at the top. */
  folder: string;
  /** The `order:` of its front matter, if any. */
  order: number | undefined;
};

/** The catalogue's reading order of topics (svc://docs then svc://guide). */
const CATALOG_ORDER = new Map([...Object.entries(DOCS).filter(([, e]) => !isAbsent(e)).map(([topic]) => topic), ...Object.keys(GUIDES)].map((topic, i) => [topic, i]));

function excluded(rel: string): boolean {
  const name = rel.split('/').pop() as string;
  return rel.startsWith('.vitepress/') || rel.split('/').includes('node_modules') || name.startsWith('_') || name === 'README.md';
}

function markdownFiles(dir: string, root: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...markdownFiles(path, root));
    else if (name.endsWith('.md')) {
      const rel = relative(root, path).split(sep).join('/');
      if (!excluded(rel)) out.push(rel);
    }
  }
  return out;
}

/**
 * A page's first `# ` heading outside code fences (after its front matter), or undefined.
 * @example firstHeading('---\norder: 1\n---\n# Hello\n') // 'Hello'
 */
export function firstHeading(markdown: string): string | undefined {
  let fence: string | undefined;
  const body = markdown.replace(/^---\r?\n[\s\S]*?\r?\n---\r?\n/, '');
  for (const line of body.split(/\r?\n/)) {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f) {
      const mark = f[1] as string;
      if (fence === undefined) fence = mark;
      else if (mark[0] === fence[0] && mark.length >= fence.length) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const h = /^#\s+(.+?)\s*#*\s*$/.exec(line);
    if (h) return h[1] as string;
  }
  return undefined;
}

function frontOrder(markdown: string): number | undefined {
  const front = /^---\r?\n([\s\S]*?)\r?\n---\r?\n/.exec(markdown)?.[1];
  const order = front && /^order:\s*(-?\d+(?:\.\d+)?)\s*$/m.exec(front)?.[1];
  return order ? Number(order) : undefined;
}

/**
 * Every page under `root` (default `docs/`), sorted as the sidebar shows them.
 * @example scanPages().map((p) => p.route) // ['/welcome', '/tutorial/first-app', …]
 */
export function scanPages(root: string = DOCS_DIR): SitePage[] {
  const pages = markdownFiles(root, root).map((file): SitePage => {
    const text = readFileSync(join(root, file), 'utf8');
    const topic = (file.split('/').pop() as string).replace(/\.md$/, '');
    const parts = file.split('/');
    const route = `/${file.replace(/\.md$/, '')}`.replace(/(^|\/)index$/, '$1');
    return { file, route, topic, title: firstHeading(text) ?? topic, folder: parts.length > 1 ? (parts[0] as string) : '', order: frontOrder(text) };
  });
  const group = (p: SitePage) => {
    const i = SIDEBAR_ORDER.indexOf(p.folder || p.topic);
    return i < 0 ? SIDEBAR_ORDER.length : i;
  };
  const rank = (p: SitePage) => p.order ?? CATALOG_ORDER.get(p.topic) ?? Number.MAX_SAFE_INTEGER;
  return pages.sort((a, b) => group(a) - group(b) || (a.folder || '').localeCompare(b.folder || '') || rank(a) - rank(b) || a.file.localeCompare(b.file));
}

/**
 * A VitePress sidebar item or group.
 * @example const item: SidebarItem = { text: 'Welcome to svc', link: '/welcome' };
 */
export type SidebarItem = { text: string; link?: string; items?: SidebarItem[]; collapsed?: boolean };

/**
 * The sidebar: top-level pages as links, each folder as a group of its pages (index.md is the home page, not listed).
 * @example sidebar(scanPages())[0] // { text: 'Welcome to svc', link: '/welcome' }
 */
export function sidebar(pages: SitePage[]): SidebarItem[] {
  const out: SidebarItem[] = [];
  const groups = new Map<string, SidebarItem>();
  for (const page of pages) {
    if (page.route === '/') continue;
    const item = { text: page.title, link: page.route };
    if (!page.folder) {
      out.push(item);
      continue;
    }
    let group = groups.get(page.folder);
    if (!group) {
      group = { text: FOLDER_TITLES[page.folder] ?? page.folder.replace(/^./, (c) => c.toUpperCase()), items: [], collapsed: false };
      groups.set(page.folder, group);
      out.push(group);
    }
    group.items?.push(item);
  }
  return out;
}

/**
 * The route of each `svc://docs/<topic>` and `svc://guide/<name>` a page of the site answers.
 * @example svcRoutes(scanPages()).get('svc://guide/pitfalls') // '/guides/pitfalls'
 */
export function svcRoutes(pages: SitePage[]): Map<string, string> {
  const routes = new Map<string, string>();
  for (const page of pages) {
    if (page.route === '/') continue;
    routes.set(`svc://docs/${page.topic}`, page.route);
    if (page.folder === 'guides') routes.set(`svc://guide/${page.topic}`, page.route);
  }
  return routes;
}

/**
 * `svc://docs/…` and `svc://guide/…` in a text, as the resources write them.
 * @example 'see svc://docs/osp.'.match(SVC_URI)?.[0] // 'svc://docs/osp'
 */
export const SVC_URI = /svc:\/\/(?:docs|guide)\/[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*/g;

// The markdown-it types, as far as the plugin uses them (VitePress brings markdown-it; no @types needed).
type Token = { type: string; tag: string; content: string; children: Token[] | null; attrs: [string, string][] | null; nesting: number; level: number };
type TokenCtor = new (type: string, tag: string, nesting: number) => Token;
type MarkdownIt = { core: { ruler: { push(name: string, rule: (state: { tokens: Token[]; Token: TokenCtor }) => void): void } } };

/**
 * A markdown-it plugin: every `svc://docs/<topic>` or `svc://guide/<name>` in a
 * page's text, or alone in inline code, becomes a link to the page that answers
 * it (text inside an existing link is left alone).
 *
 * @example
 * md.use(svcLinks, svcRoutes(scanPages()));   // in docs/.vitepress/config.mts
 */
export function svcLinks(md: MarkdownIt, routes: Map<string, string>): void {
  md.core.ruler.push('svc_links', (state) => {
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      const out: Token[] = [];
      let inLink = 0;
      const link = (href: string, inner: Token[]) => {
        const open = new state.Token('link_open', 'a', 1);
        open.attrs = [['href', href]];
        out.push(open, ...inner, new state.Token('link_close', 'a', -1));
      };
      for (const token of block.children) {
        if (token.type === 'link_open') inLink++;
        if (token.type === 'link_close') inLink--;
        if (inLink > 0 || (token.type !== 'text' && token.type !== 'code_inline')) {
          out.push(token);
          continue;
        }
        if (token.type === 'code_inline') {
          const route = routes.get(token.content.trim());
          if (route) link(route, [token]);
          else out.push(token);
          continue;
        }
        let last = 0;
        for (const m of token.content.matchAll(SVC_URI)) {
          const route = routes.get(m[0]);
          if (!route) continue;
          if (m.index > last) out.push(textToken(state.Token, token.content.slice(last, m.index)));
          link(route, [textToken(state.Token, m[0])]);
          last = m.index + m[0].length;
        }
        if (last === 0) out.push(token);
        else if (last < token.content.length) out.push(textToken(state.Token, token.content.slice(last)));
      }
      block.children = out;
    }
  });
}

function textToken(Ctor: TokenCtor, content: string): Token {
  const t = new Ctor('text', '', 0);
  t.content = content;
  return t;
}
