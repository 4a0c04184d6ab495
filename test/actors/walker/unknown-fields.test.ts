// Undeclared fields from a client: refused with every problem named, or (not strict) warned about once per walker and field.
import t from 'tap';
import { APIProtocol, T } from 'svc';
import { takesAnyFields, UnknownFields, unknownFieldsError } from '../../../actors/walker/index.ts';

const has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });

t.test('strict: a typo is refused, naming it and what it left missing', async (t) => {
  const unknown = new UnknownFields();
  t.equal(unknown.strict, true, 'strict by default');
  t.doesNotThrow(() => unknown.check('AddNote', has, { title: 'x' }, []), 'nothing unknown: nothing to say');
  t.throws(() => unknown.check('AddNote', has, {}, ['titel']), {
    code: 'SVC_ERR_INVALID_FIELDS',
    status: 400,
    message: 'AddNote: unknown field "titel"; missing required field "title"',
    details: [
      { field: 'titel', message: 'unknown field' },
      { field: 'title', message: 'missing required field' },
    ],
  });
  const error = unknownFieldsError('AddNote', has, { title: 'x' }, ['a', 'b', 'a']);
  t.equal(error.message, 'AddNote: unknown field "a"; unknown field "b"', 'each named once; defaults applied to the rest (done)');
});

t.test('not strict: accepted, one warning per walker and field, bounded', async (t) => {
  const lines: { message: string; endpoint: string; field: string }[] = [];
  const unknown = new UnknownFields({ strict: false, warn: (message, extra) => lines.push({ message, ...extra }), maxWarnings: 3 });
  for (let i = 0; i < 5; i++) unknown.check('AddNote', has, {}, ['titel']);
  t.same(lines, [{ message: 'AddNote: unknown field "titel" ignored (strict_fields is off; told once per walker and field)', endpoint: 'AddNote', field: 'titel' }]);
  unknown.check('Other', has, {}, ['titel', 'x']);
  t.equal(lines.length, 3, 'another walker, another field: told once each');
  unknown.check('Other', has, {}, ['y', 'z']);
  t.equal(lines.length, 4, 'past the bound: one last line');
  t.match(lines[3]?.message, /no more are/);
  unknown.check('Other', has, {}, ['w']);
  t.equal(lines.length, 4, 'then nothing');
  t.doesNotThrow(() => new UnknownFields({ strict: false }).check('AddNote', has, {}, ['x']), 'no logger: silent');
});

t.test('webhooks and walkers reading the raw body take any fields', async (t) => {
  t.equal(takesAnyFields(has), false);
  t.equal(takesAnyFields(has, APIProtocol.WEBHOOK), true);
  t.equal(takesAnyFields(has, APIProtocol.HTTP), false);
  t.equal(takesAnyFields(T.Object({ request: T.Object({ method: T.String(), body: T.String() }) })), true);
  t.equal(takesAnyFields(T.Object({ request: T.Object({ method: T.String(), path: T.String() }) })), false, 'request without body: held to its fields');
});
