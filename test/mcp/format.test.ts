// format_svc: prettier under one fixed configuration; idempotent; a syntax error comes back as the input
// with a line:col error; input over the limit is refused.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { formatSvc, SVC_PRETTIER_OPTIONS } from '../../mcp/tools/format.ts';
import { MAX_INPUT_BYTES, ToolInputError } from '../../mcp/types.ts';

const app = readFileSync(new URL('../../examples/todo/app.ts', import.meta.url), 'utf8');

t.test('messy code is formatted with the fixed settings: single quotes, semicolons, 100 columns', async (t) => {
  const code = 'import {fn,T} from "svc"\nexport const add=fn({access:"pub",params:T.Object({a:T.Number(),b:T.Number()})},({a,b})=>a+b)\n';
  const r = await formatSvc({ code });
  t.equal(r.changed, true);
  t.equal(r.error, undefined);
  t.equal(
    r.formatted,
    "import { fn, T } from 'svc';\n" +
      'export const add = fn(\n' +
      "  { access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) },\n" +
      '  ({ a, b }) => a + b,\n' +
      ');\n',
  );
  t.equal(SVC_PRETTIER_OPTIONS.printWidth, 100);
  t.equal(SVC_PRETTIER_OPTIONS.singleQuote, true);
});

t.test('formatting is idempotent: the formatted text formats to itself (decorators included)', async (t) => {
  const snippets = [
    app,
    'export class W extends Walker{@entry(Root) async go(here:Root){this.report(await here.out(Todo,(t)=>t.done&&t.title.length>3))}}',
    '/** doc */\nexport const x = { a: 1, "b-c": [1,2,3,], d: `t${1}` } // trailing\n',
  ];
  for (const code of snippets) {
    const once = await formatSvc({ code });
    t.equal(once.error, undefined, 'formats');
    const twice = await formatSvc({ code: once.formatted });
    t.equal(twice.changed, false, 'formatting the result changes nothing');
    t.equal(twice.formatted, once.formatted);
  }
});

t.test('already formatted code: changed false', async (t) => {
  const r = await formatSvc({ code: "export const n = 1;\n" });
  t.same(r, { formatted: 'export const n = 1;\n', changed: false });
});

t.test('a syntax error: the input unchanged, changed false, error with line:col', async (t) => {
  const code = 'export const ok = 1;\nconst x = ;\n';
  const r = await formatSvc({ code });
  t.equal(r.formatted, code);
  t.equal(r.changed, false);
  t.match(r.error, /^2:11: Expression expected\.$/);
});

t.test('input over 100 KB is refused with ToolInputError', async (t) => {
  await t.rejects(formatSvc({ code: 'x'.repeat(MAX_INPUT_BYTES + 1) }), ToolInputError);
});
