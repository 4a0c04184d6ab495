// Validation errors as sentences: each TypeBox error kind, named by its field, in the message and in details.
import t from 'tap';
import { T } from 'svc';
import { fieldProblems, invalidFields, MISSING_FIELD, UNKNOWN_FIELD } from '../../../actors/walker/index.ts';

/** The message `validateFields` would throw for `value` against `has`. */
const messageOf = (has: Parameters<typeof fieldProblems>[0], value: unknown) => invalidFields('AddNote', fieldProblems(has, value)).message;

t.test('each kind of error reads as a sentence naming its field', async (t) => {
  const cases: [string, Parameters<typeof fieldProblems>[0], unknown, string][] = [
    ['required', T.Object({ text: T.String() }), {}, 'AddNote: missing required field "text"'],
    ['type', T.Object({ done: T.Boolean() }), { done: 'yes' }, 'AddNote: field "done" must be a boolean'],
    ['integer', T.Object({ n: T.Integer() }), { n: 1.5 }, 'AddNote: field "n" must be an integer'],
    ['"3" is not a number', T.Object({ n: T.Number() }), { n: '3' }, 'AddNote: field "n" must be a number'],
    ['minimum', T.Object({ count: T.Integer({ minimum: 1 }) }), { count: 0 }, 'AddNote: field "count" must be at least 1'],
    ['maximum', T.Object({ count: T.Integer({ maximum: 100 }) }), { count: 1000 }, 'AddNote: field "count" must be at most 100'],
    ['exclusiveMinimum', T.Object({ x: T.Number({ exclusiveMinimum: 0 }) }), { x: 0 }, 'AddNote: field "x" must be greater than 0'],
    ['exclusiveMaximum', T.Object({ x: T.Number({ exclusiveMaximum: 1 }) }), { x: 1 }, 'AddNote: field "x" must be less than 1'],
    ['multipleOf', T.Object({ x: T.Number({ multipleOf: 5 }) }), { x: 7 }, 'AddNote: field "x" must be a multiple of 5'],
    ['minLength 1', T.Object({ text: T.String({ minLength: 1 }) }), { text: '' }, 'AddNote: field "text" must not be empty'],
    ['minLength', T.Object({ text: T.String({ minLength: 3 }) }), { text: 'ab' }, 'AddNote: field "text" must be at least 3 characters long'],
    ['maxLength', T.Object({ text: T.String({ maxLength: 5 }) }), { text: 'abcdef' }, 'AddNote: field "text" must be at most 5 characters long'],
    ['pattern', T.Object({ slug: T.String({ pattern: '^[a-z]+$' }) }), { slug: 'A B' }, 'AddNote: field "slug" must match the pattern "^[a-z]+$"'],
    ['format', T.Object({ email: T.String({ format: 'email' }) }), { email: 'nope' }, 'AddNote: field "email" must be a valid email'],
    ['enum', T.Object({ size: T.Enum(['s', 'm', 'l']) }), { size: 'xl' }, 'AddNote: field "size" must be one of "s", "m", "l"'],
    ['const', T.Object({ v: T.Literal(2) }), { v: 3 }, 'AddNote: field "v" must be 2'],
    ['union of literals', T.Object({ kind: T.Union([T.Literal('low'), T.Literal('high')]) }), { kind: 'mid' }, 'AddNote: field "kind" must be one of "low", "high"'],
    ['union of types', T.Object({ note: T.Union([T.String(), T.Null()]) }), { note: 3 }, 'AddNote: field "note" must be a string or null'],
    ['a literal or a type', T.Object({ size: T.Union([T.Literal('auto'), T.Number()]) }), { size: true }, 'AddNote: field "size" must be "auto" or a number'],
    ['the bound of the branch whose type fits', T.Object({ note: T.Union([T.String({ maxLength: 3 }), T.Null()]) }), { note: 'long' }, 'AddNote: field "note" must be at most 3 characters long'],
    ['union of objects', T.Object({ shape: T.Union([T.Object({ r: T.Number() }), T.Object({ side: T.Number() })]) }), { shape: {} }, 'AddNote: field "shape" does not match any of the allowed forms'],
    ['minItems 1', T.Object({ tags: T.Array(T.String(), { minItems: 1 }) }), { tags: [] }, 'AddNote: field "tags" must not be empty'],
    ['maxItems', T.Object({ tags: T.Array(T.String(), { maxItems: 2 }) }), { tags: ['a', 'b', 'c'] }, 'AddNote: field "tags" must have at most 2 items'],
    ['uniqueItems', T.Object({ tags: T.Array(T.String(), { uniqueItems: true }) }), { tags: ['a', 'a'] }, 'AddNote: field "tags" must not contain duplicate items'],
    ['an array item', T.Object({ tags: T.Array(T.String()) }), { tags: ['a', 2] }, 'AddNote: field "tags[1]" must be a string'],
    ['nested', T.Object({ at: T.Object({ city: T.String() }) }), { at: { city: 1 } }, 'AddNote: field "at.city" must be a string'],
    ['nested required', T.Object({ items: T.Array(T.Object({ name: T.String() })) }), { items: [{}] }, 'AddNote: missing required field "items[0].name"'],
    ['a closed object', T.Object({ at: T.Object({ city: T.String() }, { additionalProperties: false }) }), { at: { city: 'x', zip: 1 } }, 'AddNote: unknown field "at.zip"'],
    ['maxProperties', T.Object({ meta: T.Record(T.String(), T.String(), { maxProperties: 1 }) }), { meta: { a: 'x', b: 'y' } }, 'AddNote: field "meta" must have at most 1 key'],
  ];
  for (const [kind, has, value, message] of cases) t.equal(messageOf(has, value), message, kind);
});

t.test('several problems: one sentence each, in the schema’s order; details carry them without the field’s name', async (t) => {
  const has = T.Object({ text: T.String(), done: T.Boolean(), count: T.Integer({ minimum: 1 }) });
  const problems = fieldProblems(has, { done: 'yes', count: 0 });
  t.same(problems, [
    { field: 'text', message: MISSING_FIELD },
    { field: 'done', message: 'must be a boolean' },
    { field: 'count', message: 'must be at least 1' },
  ]);
  const error = invalidFields('AddNote', problems);
  t.match(error, { code: 'SVC_ERR_INVALID_FIELDS', status: 400, details: problems });
  t.equal(error.message, 'AddNote: missing required field "text"; field "done" must be a boolean; field "count" must be at least 1');
  t.same(fieldProblems(T.Object({ a: T.String(), b: T.String() }), {}), [
    { field: 'a', message: MISSING_FIELD },
    { field: 'b', message: MISSING_FIELD },
  ], 'every missing field is named');
});

t.test('long lists are cut in the message, never in details; field names are quoted and escaped', async (t) => {
  const problems = Array.from({ length: 14 }, (_, i) => ({ field: `f${i}`, message: UNKNOWN_FIELD }));
  const error = invalidFields('Wide', problems);
  t.match(error.message, /^Wide: unknown field "f0"; .*unknown field "f9"; and 4 more$/);
  t.equal((error.details as unknown[]).length, 14);
  t.equal(invalidFields('X', [{ field: 'a"b\n', message: UNKNOWN_FIELD }]).message, 'X: unknown field "a\\"b\\n"');
  t.equal(invalidFields('X', [{ field: 'x'.repeat(500), message: UNKNOWN_FIELD }]).message, `X: unknown field "${'x'.repeat(100)}…"`);
});

t.test('a union TypeBox stopped counting in is not told as fewer values than it allows', async (t) => {
  // TypeBox keeps 8 errors: six wrong fields, then two of the three branches of `g`.
  const has = T.Object({ a: T.String(), b: T.String(), c: T.String(), d: T.Number(), e: T.Number(), f: T.Number(), g: T.Union([T.Literal('x'), T.Literal('y'), T.Literal('z')]) });
  const problems = fieldProblems(has, { a: 1, b: 1, c: 1, d: 'x', e: 'x', f: 'x', g: 'q' });
  t.same(problems.at(-1), { field: 'g', message: 'must be one of "x", "y", "z"' });
});
