// One source for the site and the tool server: links between pages, as the site writes them (relative `.md`
// links, the site's own routes), read through the tool server's resources as `svc://` URIs; and the site's
// markdown-it plugin turning the tool server's `svc://docs/<topic>` into links to the page.
import t from 'tap';
import { posix } from 'node:path';
import { createMarkdownRenderer } from 'vitepress';
import { presentPages } from '../../mcp/catalog.ts';
import { canonicalUri, createResources, linkToResources } from '../../mcp/resources.ts';
import { DOCS_DIR, scanPages, svcLinks, svcRoutes } from '../../docs/.vitepress/pages.ts';

const grammar = { spec: async () => "declare module 'svc' {}", tokens: () => '# vocabulary' };

t.test('linkToResources: relative and site links to a page become its svc:// URI; the rest stays', async (t) => {
  const from = 'docs/tutorial/first-app.md';
  t.equal(linkToResources('See [testing](../guides/testing.md).', from), 'See [testing](svc://docs/testing).');
  t.equal(linkToResources('See [setup](../guides/testing.md#setup).', from), 'See [setup](svc://docs/testing#setup).', 'the anchor kept as a fragment');
  t.equal(linkToResources('[the basics](./tutorial-basics.md)', from), '[the basics](svc://docs/tutorial-basics)');
  t.equal(linkToResources('[codes](/errors) and [osp](/concepts/osp.md)', from), '[codes](svc://docs/errors) and [osp](svc://docs/osp)', 'site routes too');
  t.equal(linkToResources('[pitfalls](../guides/pitfalls.md)', from), '[pitfalls](svc://guide/pitfalls)', 'a guide is svc://guide/*');
  t.equal(linkToResources('[web](https://example.org/a.md) [here](#top) [gone](../guides/nowhere.md)', from), '[web](https://example.org/a.md) [here](#top) [gone](../guides/nowhere.md)', 'other sites, anchors of the page and pages without a resource stay');
  t.equal(linkToResources('`[x](../guides/testing.md)`\n```md\n[x](../guides/testing.md)\n```', from), '`[x](../guides/testing.md)`\n```md\n[x](../guides/testing.md)\n```', 'code is left alone');
  t.equal(canonicalUri('svc://docs/testing#setup'), 'svc://docs/testing', 'reading a URI with a fragment reads the page');
});

t.test('the tool server serves pages with their links rewritten, and no relative .md link to a resource left', async (t) => {
  const resources = createResources({ grammar });
  const resourceFiles = new Set(presentPages().map((p) => p.file));
  let rewritten = 0;
  for (const page of presentPages()) {
    const { text } = await resources.read(page.uri);
    rewritten += [...text.matchAll(/\]\(svc:\/\//g)].length;
    const left = [...text.matchAll(/\]\((\.{1,2}\/[^)\s#]+\.md)(#[^)\s]*)?\)/g)].map((m) => posix.normalize(posix.join(posix.dirname(page.file), m[1] as string))).filter((f) => resourceFiles.has(f));
    t.same(left, [], `${page.uri}: no relative link to a page that is a resource left`);
  }
  t.comment(`${rewritten} markdown links to svc:// resources in the served pages`);
});

t.test('the site plugin: svc:// URIs in text and alone in inline code link to their page', async (t) => {
  const md = await createMarkdownRenderer(DOCS_DIR);
  svcLinks(md as never, svcRoutes(scanPages()));
  const html = md.render('Read svc://docs/osp, then `svc://guide/pitfalls`; svc://docs/no-such-topic stays text; [svc://docs/osp](/x) is a link already.');
  // (This renderer is not the site's: without cleanUrls, VitePress's own link rule adds `.html`.)
  t.match(html, /<a href="\/concepts\/osp(\.html)?">svc:\/\/docs\/osp<\/a>,/);
  t.match(html, /<a href="\/guides\/pitfalls(\.html)?"><code>svc:\/\/guide\/pitfalls<\/code><\/a>/);
  t.match(html, ' svc://docs/no-such-topic stays text');
  t.match(html, /<a href="\/x(\.html)?">svc:\/\/docs\/osp<\/a> is a link already/);
});
