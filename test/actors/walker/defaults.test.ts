// Field defaults as a run takes its fields: each field's own default filled at once, a default deeper in a field's
// schema through TypeBox's Value.Default — the same values either way.
import t from 'tap';
import { Value } from 'typebox/value';
import { T, Walker } from 'svc';
import { validateFields, walkerInfo } from '../../../actors/walker/index.ts';

let made = 0;
class Flat extends Walker {
  static has = T.Object({
    op: T.Union([T.Literal('a'), T.Literal('b')]),
    text: T.String({ default: '' }),
    n: T.Number({ default: 3 }),
    tags: T.Array(T.String(), { default: ['x'] }),
    made: T.Number({ default: () => ++made }),
    maybe: T.Optional(T.String()),
  });
}
class Deep extends Walker {
  static has = T.Object({
    box: T.Object({ size: T.Number({ default: 1 }), label: T.String({ default: 'none' }) }, { default: {} }),
    text: T.String({ default: 'd' }),
  });
}

t.test('a field’s own default: filled when missing or undefined, a copy each time, a function called each time', async (t) => {
  const info = walkerInfo(Flat);
  t.equal(info.defaults.deep, false, 'no default below the fields: the schema is not walked per request');
  const a = validateFields(info, { op: 'a' });
  t.same(a, { op: 'a', text: '', n: 3, tags: ['x'], made: 1 });
  t.notOk(Object.hasOwn(a, 'maybe'), 'an optional field without a default stays absent');
  (a.tags as string[]).push('changed');
  const b = validateFields(info, { op: 'b', text: 'hi', n: 0, tags: [], made: undefined });
  t.same(b, { op: 'b', text: 'hi', n: 0, tags: [], made: 2 }, 'given values kept (falsy ones too); undefined takes the default');
  t.same(validateFields(info, { op: 'a' }).tags, ['x'], 'the default array was copied, not shared');
  t.throws(() => validateFields(info, { op: 'c' }), { code: 'SVC_ERR_INVALID_FIELDS' });
  t.throws(() => validateFields(info, { op: 'a', n: 'x' }), { code: 'SVC_ERR_INVALID_FIELDS' });
});

t.test('a default inside a field’s schema: filled as TypeBox fills it', async (t) => {
  const info = walkerInfo(Deep);
  t.equal(info.defaults.deep, true);
  for (const fields of [{}, { box: {} }, { box: { size: 5 } }, { box: { size: 5, label: 'l' }, text: 'x' }]) {
    const want = Value.Default(info.schema, structuredClone(fields));
    t.same(validateFields(info, structuredClone(fields)), want, JSON.stringify(fields));
  }
  t.same(validateFields(info, {}), { box: { size: 1, label: 'none' }, text: 'd' });
});

t.test('the fast path and Value.Default agree on the flat schema', async (t) => {
  const info = walkerInfo(Flat);
  for (const fields of [{ op: 'a' }, { op: 'b', text: 'q' }, { op: 'a', n: 7, tags: ['y', 'z'], maybe: 'm', made: 9 }]) {
    const want = Value.Default(info.schema, structuredClone(fields)) as Record<string, unknown>;
    const got = validateFields(info, structuredClone(fields));
    if (!Object.hasOwn(fields, 'made')) delete want.made, delete got.made; // a counter: its own values
    t.same(got, want, JSON.stringify(fields));
  }
});

t.test('edges TypeBox settles the same way: an optional field whose default gives undefined stays absent; a function default sees its schema as this', async (t) => {
  class Edges extends Walker {
    static has = T.Object({
      gone: T.Optional(T.String({ default: () => undefined })),
      kept: T.String({ default: function (this: { maxLength?: number }) { return `max ${this.maxLength}`; }, maxLength: 9 }),
    });
  }
  const info = walkerInfo(Edges);
  const got = validateFields(info, {});
  t.same(Object.keys(got), ['kept']);
  t.equal(got.kept, 'max 9');
  t.same(Object.keys(Value.Default(info.schema, {}) as object), Object.keys(got), 'as Value.Default');
});
