// Every setting svc reads is in the settings table of docs/reference/settings.md (the README links it), with its
// environment names and default; every row there is a setting svc reads.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { SCHEMA } from '../../runtime/config.ts';

const table = readFileSync(new URL('../../docs/reference/settings.md', import.meta.url), 'utf8');

t.test('every key of every section has its row in "Every setting"', async (t) => {
  const rows = new Map<string, string>();
  for (const m of table.matchAll(/^\| `\[([\w.]+)\]` \| `(\w+)` \| ([^|]*) \| ([^|]*) \|$/gm)) rows.set(`${m[1]}.${m[2]}`, m[3] as string);
  for (const [section, keys] of Object.entries(SCHEMA)) {
    for (const [key, spec] of Object.entries(keys as Record<string, { env?: readonly string[] }>)) {
      const row = rows.get(`${section}.${key}`);
      t.ok(row !== undefined, `[${section}] ${key} has a row in docs/reference/settings.md`);
      for (const env of spec.env ?? []) t.match(row ?? '', `\`${env}\``, `[${section}] ${key}: ${env} named`);
    }
  }
  for (const name of rows.keys()) {
    const i = name.lastIndexOf('.');
    t.ok(Object.hasOwn((SCHEMA as Record<string, object>)[name.slice(0, i)] ?? {}, name.slice(i + 1)), `${name} is a setting svc reads`);
  }
});

t.test('the README sends readers to the settings table', async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  t.match(readme, /\]\(docs\/reference\/settings\.md(#[\w-]+)?\)/, 'a link to docs/reference/settings.md');
});
