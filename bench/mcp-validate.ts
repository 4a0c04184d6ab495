/**
 * `validate_svc` on a generated 2,000-line svc module: the cold call (the
 * spec — built, or read from its cache file —, the language service, the
 * first check) and warm calls (the language
 * service kept; each call a slightly different module, so each is a real
 * re-check), p50/p99. Also warm checks of the same module with one `fn(...)`
 * function added, which TypeScript infers slowly (see the result's note).
 *
 *   node --import tsx bench/mcp-validate.ts [--rounds 30]
 */
import { existsSync } from 'node:fs';
import { publicSpec, specCacheFile } from '../mcp/grammar/spec.ts';
import { validateSvc } from '../mcp/tools/compiler/index.ts';
import { machine, percentile, round, save } from './lib.ts';

const ROUNDS = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 30;
const FN_ROUNDS = 5;

/** A module of `pairs` node + walker pairs (about 20 lines each), with `extra` appended. */
function module(pairs: number, extra = ''): string {
  const out = ["import { Edge, entry, Node, Root, T, Walker } from 'svc';", '', 'export class Link extends Edge {}', ''];
  for (let i = 0; i < pairs; i++) {
    out.push(
      `export class Item${i} extends Node {`,
      `  static has = T.Object({ title: T.String(), n: T.Integer({ default: ${i} }) });`,
      '  declare title: string;',
      '  declare n: number;',
      '}',
      '',
      `export class Make${i} extends Walker {`,
      "  static access = 'pub' as const;",
      '  static has = T.Object({ title: T.String() });',
      '  declare title: string;',
      '',
      '  @entry(Root) async make(here: Root) {',
      `    const item = await here.connect(new Item${i}({ title: this.title }), new Link());`,
      `    const all = await here.out(Item${i}, (x) => x.n >= 0);`,
      '    this.report({ id: item.id, count: all.length });',
      '  }',
      '',
      `  @entry(Item${i}) each(here: Item${i}) { this.report(here.title); }`,
      '}',
      '',
    );
  }
  return `${out.join('\n')}${extra}`;
}

const FN = "\nimport { fn } from 'svc';\nexport const add = fn({ access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => a + b);\n";

async function timed(code: string): Promise<{ ms: number; valid: unknown; errors: unknown[] }> {
  const started = performance.now();
  const r = await validateSvc({ code });
  return { ms: performance.now() - started, valid: r.valid, errors: r.errors as unknown[] };
}

const base = module(100);
const lines = base.split('\n').length;
const specCached = existsSync(specCacheFile()); // built before, and valid unless a source changed since
const specStarted = performance.now();
await publicSpec();
const specMs = performance.now() - specStarted;
const cold = await timed(base);
if (!cold.valid) throw new Error(`the generated module should be valid: ${JSON.stringify(cold.errors.slice(0, 3))}`);

const warm: number[] = [];
for (let i = 0; i < ROUNDS; i++) warm.push((await timed(`${base}\n// round ${i}\n`)).ms);
warm.sort((a, b) => a - b);

const withFn: number[] = [];
for (let i = 0; i < FN_ROUNDS; i++) withFn.push((await timed(`${base}${FN}// round ${i}\n`)).ms);
withFn.sort((a, b) => a - b);

const result = {
  bench: 'mcp-validate',
  machine: machine(),
  module_lines: lines,
  spec_ms: round(specMs, 1),
  spec_from_cache_file: specCached,
  cold_first_check_ms: round(cold.ms, 1),
  warm: { rounds: ROUNDS, p50_ms: round(percentile(warm, 50), 1), p99_ms: round(percentile(warm, 99), 1), max_ms: round(warm[warm.length - 1] ?? NaN, 1) },
  warm_with_one_fn: { rounds: FN_ROUNDS, p50_ms: round(percentile(withFn, 50), 1), max_ms: round(withFn[withFn.length - 1] ?? NaN, 1) },
  note: "fn()'s handler type `(args: Static<P>, …)` makes TypeScript infer P through TypeBox's Static: seconds per fn() call; `NoInfer<Static<P>>` in actors/walker/fn.ts cuts it to well under a second",
};
console.log(JSON.stringify(result, null, 2));
console.log(save('mcp-validate', result));
