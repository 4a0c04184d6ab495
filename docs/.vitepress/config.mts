/**
 * The documentation site (VitePress): `npm run docs` builds it into
 * docs/.vitepress/dist, `npm run docs:dev` serves it while editing, `svc docs`
 * serves the built site. The sidebar comes from the folder tree and each page's
 * first `# ` heading (docs/.vitepress/pages.ts), so a new page appears without
 * editing this file. Fully offline: no web fonts, no remote scripts or images;
 * the search index is built into the site (`provider: 'local'`).
 */
import { defineConfig } from 'vitepress';
import { scanPages, sidebar, SRC_EXCLUDE, svcLinks, svcRoutes } from './pages.ts';

const pages = scanPages();

export default defineConfig({
  title: 'svc',
  description: 'A TypeScript walker-service runtime on a small actor kernel',
  lang: 'en-US',
  cleanUrls: true,
  srcExclude: SRC_EXCLUDE,
  // Web fonts would be fetched from a remote host: the theme's own Inter files are used instead.
  useWebFonts: false,
  lastUpdated: false,
  // The pages show an app's own URLs (http://localhost:8000/docs): examples, not links into this site. Any other
  // dead link is printed but does not stop the build (a page being written may link one still to come):
  // test/docs/site.test.ts fails on every link of the built site that leads nowhere.
  ignoreDeadLinks: [
    (url: string) => {
      if (!/^https?:\/\/(localhost|127\.0\.0\.1)\b/.test(url)) console.warn(`(!) dead link ${url}`);
      return true;
    },
  ],
  themeConfig: {
    nav: [
      { text: 'Tutorial', link: pages.find((p) => p.folder === 'tutorial')?.route ?? '/' },
      { text: 'Guides', link: pages.find((p) => p.folder === 'guides')?.route ?? '/' },
      { text: 'Reference', link: pages.find((p) => p.folder === 'reference')?.route ?? '/' },
      { text: 'Errors', link: '/errors' },
    ],
    sidebar: sidebar(pages),
    search: { provider: 'local' },
    outline: { level: [2, 3] },
  },
  markdown: {
    config: (md) => svcLinks(md as never, svcRoutes(pages)),
  },
});
