// search_docs ranks the page a question is about first; understand_svc maps what is offered;
// get_resource answers content or an error, never a throw.
import t from 'tap';
import { DOCS, isAbsent } from '../../mcp/catalog.ts';
import { createResources } from '../../mcp/resources.ts';
import { getResource, searchDocs, stem, tokenize, understandSvc } from '../../mcp/tools/knowledge.ts';
import { ToolInputError } from '../../mcp/types.ts';

const grammar = { spec: async () => 'declare module "svc" {}', tokens: () => '# vocabulary' };
const resources = createResources({ grammar });

t.test('the obviously relevant page comes first', async (t) => {
  const cases: [string, string][] = [
    ['install svc with npm', 'svc://docs/install'],
    ['test a walker in-process with inject', 'svc://docs/testing'],
    ['JSON values are not coerced: a string for a number', 'svc://docs/primitives'],
    ['pitfall: an exit ability on the root runs before the visited nodes', 'svc://guide/pitfalls'],
    ['cluster of processes with KV_URL and Redis', 'svc://docs/scale'],
    ['svc.toml settings and environment variables', 'svc://docs/settings'],
    ['configuration precedence: profiles, svc.toml, environment, flags', 'svc://docs/config'],
    ['glossary of terms', 'svc://docs/appendices'],
    ['run walkers without a server: Graph.open', 'svc://docs/library-mode'],
    ['TypeBox field types', 'svc://docs/primitives'],
    ['migrate from the Python walker service', 'svc://docs/python-integration'],
  ];
  for (const [query, uri] of cases) {
    const { results } = await searchDocs(resources, { query });
    t.equal(results[0]?.uri, uri, `${JSON.stringify(query)} → ${uri} (got ${results.map((r) => r.uri).join(', ')})`);
  }
});

t.test('results: shape, order, limit, snippets that show the words', async (t) => {
  const { results } = await searchDocs(resources, { query: 'permGrant allowRoot sharing' });
  t.equal(results.length, 5, 'limit defaults to 5');
  for (const r of results) {
    t.match(r, { uri: /^svc:\/\//, title: String, description: String, snippet: String, score: Number });
    t.ok(r.score > 0);
    t.ok(r.snippet.length > 0 && r.snippet.length <= 300, 'a short snippet');
  }
  for (let i = 1; i < results.length; i++) t.ok((results[i - 1]?.score ?? 0) >= (results[i]?.score ?? 0), 'best first');
  t.match(results[0]?.snippet ?? '', /permGrant|allowRoot|shar/i, 'the snippet holds a query word');
  t.equal((await searchDocs(resources, { query: 'walker', limit: 1 })).results.length, 1);
  t.ok((await searchDocs(resources, { query: 'walker', limit: 50 })).results.length > 20, 'many pages mention walkers');
  t.same((await searchDocs(resources, { query: 'zyxxyzzy qwxv' })).results, [], 'nothing for words no page has');
  t.ok((await searchDocs(resources, { query: 'how to' })).results.length >= 0, 'a query of stop words does not throw');
});

t.test('bad arguments are ToolInputErrors', async (t) => {
  await t.rejects(searchDocs(resources, { query: '' }), ToolInputError);
  await t.rejects(searchDocs(resources, { query: '   ' }), ToolInputError);
  await t.rejects(searchDocs(resources, { query: 5 as unknown as string }), ToolInputError);
  for (const limit of [0, 51, 2.5, -1]) await t.rejects(searchDocs(resources, { query: 'walker', limit }), ToolInputError, `limit ${limit}`);
  await t.rejects(searchDocs(resources, { query: 'x'.repeat(200 * 1024) }), ToolInputError, 'too large');
});

t.test('switched-off groups are neither searched nor mapped', async (t) => {
  const noDocs = createResources({ grammar, expose: { docs: false } });
  const { results } = await searchDocs(noDocs, { query: 'walker node edge', limit: 50 });
  t.ok(results.length > 0, 'guides and examples still answer');
  t.notOk(results.some((r) => r.uri.startsWith('svc://docs/')), 'no docs page');
  const noGuides = createResources({ grammar, expose: { pitfalls: false } });
  t.notOk((await searchDocs(noGuides, { query: 'pitfalls mistakes', limit: 50 })).results.some((r) => r.uri.startsWith('svc://guide/')));
  const { knowledge_map } = await understandSvc(noGuides);
  t.notMatch(knowledge_map, 'svc://guide/pitfalls');
  t.match(knowledge_map, 'svc://docs/osp');
});

t.test('understand_svc: every offered page, the grammar and the examples, and what svc does not have', async (t) => {
  const { knowledge_map } = await understandSvc(resources);
  t.match(knowledge_map, /^# svc knowledge map/);
  for (const r of resources.list()) t.ok(knowledge_map.includes(r.uri), `${r.uri} is on the map`);
  for (const [topic, entry] of Object.entries(DOCS)) {
    if (isAbsent(entry)) t.ok(knowledge_map.includes(topic), `absent ${topic} is named`);
  }
  t.match(knowledge_map, 'validate_svc');
});

t.test('get_resource: content, or an error for what cannot be read', async (t) => {
  const ok = await getResource(resources, { uri: 'svc://docs/osp' });
  t.equal(ok.uri, 'svc://docs/osp');
  t.match('content' in ok ? ok.content : '', /^# Reference: nodes, edges and walkers/);
  const absent = await getResource(resources, { uri: 'svc://docs/tutorial-fullstack-setup' });
  t.match(absent, { uri: 'svc://docs/tutorial-fullstack-setup', error: /no client-side framework/ });
  t.match(await getResource(resources, { uri: 'svc://docs/../../etc/passwd' }), { error: /not a resource URI/ });
  t.match(await getResource(resources, { uri: 'svc://docs/nope' }), { error: /unknown resource/ });
  t.match(await getResource(createResources({ grammar, expose: { grammar: false } }), { uri: 'svc://grammar/spec' }), { error: /not offered/ });
});

t.test('tokens: identifiers split, endings folded', async (t) => {
  t.same(['sharing', 'shared', 'shares', 'share'].map(stem), ['shar', 'shar', 'shar', 'shar']);
  t.equal(stem('coercion'), stem('coerced'));
  t.equal(stem('running'), 'run');
  t.equal(stem('classes'), stem('class'));
  t.same(tokenize('permGrant'), ['permgrant', 'perm', 'grant']);
  t.ok(tokenize('SVC_ERR_BAD_WRITE').includes('bad'), 'snake case parts');
  t.same(tokenize('how to use the'), [], 'stop words');
});
