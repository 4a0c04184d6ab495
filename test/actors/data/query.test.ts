// The shared checker and reference matcher of the docdb backends (actors/data/query.ts),
// without a database: what the backends' conformance suite takes as its reference.
import t from 'tap';
import { applyUpdate, checkDocument, compareStrings, compileFilter, matches, newId, validateFilter, validateFind, validateUpdate } from '../../../actors/data/query.ts';

t.test('newId: 24 hex, ObjectId-shaped (seconds first), unique', async (t) => {
  const ids = Array.from({ length: 1000 }, () => newId());
  for (const id of ids.slice(0, 5)) t.match(id, /^[0-9a-f]{24}$/);
  t.equal(new Set(ids).size, ids.length, 'unique');
  const seconds = parseInt((ids[0] as string).slice(0, 8), 16);
  t.ok(Math.abs(seconds - Date.now() / 1000) < 5, 'starts with the time in seconds');
  t.equal((ids[0] as string).slice(8, 18), (ids[999] as string).slice(8, 18), 'the same process part');
});

t.test('validateFilter: a Clause tree; operators of a field become conditions under and', async (t) => {
  t.same(validateFilter({}), { kind: 'and', clauses: [] });
  t.same(validateFilter({ 'a.b': 1 }), { kind: 'field', path: ['a', 'b'], op: '$eq', value: 1 });
  t.same(validateFilter({ a: { $gt: 1, $lt: 5 }, $or: [{ b: null }] }), {
    kind: 'and',
    clauses: [
      { kind: 'field', path: ['a'], op: '$gt', value: 1 },
      { kind: 'field', path: ['a'], op: '$lt', value: 5 },
      { kind: 'or', clauses: [{ kind: 'field', path: ['b'], op: '$eq', value: null }] },
    ],
  });
  t.same(validateFilter({ a: { x: undefined, y: 1 } }), { kind: 'field', path: ['a'], op: '$eq', value: { y: 1 } }, 'undefined inside an object value is dropped');
  t.throws(() => validateFilter({ a: { $regex: 'x' } }), { code: 'INVALID_QUERY', message: /\$regex/ });
  t.throws(() => validateFilter([] as never), { code: 'INVALID_QUERY' });
});

t.test('matches / compileFilter on plain objects (what findNodes filters in memory)', async (t) => {
  const node = { title: 'Buy milk', done: false, tags: ['home', 'urgent'], meta: { prio: 2 } };
  t.ok(matches(node, { done: false, 'meta.prio': { $gte: 2 } }));
  t.ok(matches(node, { tags: 'urgent', title: { $in: ['Buy milk', 'x'] } }));
  t.notOk(matches(node, { done: 0 }), 'false is not 0');
  t.ok(matches(node, { due: null, owner: { $exists: false }, 'meta.x': { $ne: 1 } }));
  t.notOk(matches(node, { $or: [{ done: true }, { 'meta.prio': { $gt: 2 } }] }));
  const urgent = compileFilter({ tags: 'urgent' });
  t.same([node, { tags: [] }, { tags: 'urgent' }].filter(urgent).length, 2);
  t.ok(matches({ a: { b: 1, c: 2 } }, { a: { b: 1, c: 2 } }));
  t.notOk(matches({ a: { b: 1, c: 2 } }, { a: { c: 2, b: 1 } }), 'object equality minds key order (as MongoDB does)');
});

t.test('compareStrings: code point order (UTF-8 bytes), not UTF-16 units', async (t) => {
  t.ok(compareStrings('\uffff', '𝄞') < 0);
  t.ok('\uffff' > '𝄞', 'where < says otherwise');
  t.ok(compareStrings('B', 'a') < 0);
  t.ok(compareStrings('a', 'ab') < 0);
  t.equal(compareStrings('é', 'é'), 0);
});

t.test('validateUpdate: only $set / $unset, no _id, no overlapping paths', async (t) => {
  t.same(validateUpdate({ $set: { 'a.b': 1 }, $unset: { c: '' } }), { set: [[['a', 'b'], 1]], unset: [['c']] });
  for (const [u, mention] of [
    [{ $set: { a: 1, 'a.b': 2 } }, /overlaps/],
    [{ $set: { 'a.b': 1 }, $unset: { a: 1 } }, /overlaps/],
    [{ $set: { '_id': 'x' } }, /_id/],
    [{ $rename: { a: 'b' } }, /\$rename/],
    [{ a: 1 }, /replacement/],
  ] as [never, RegExp][]) {
    t.throws(() => validateUpdate(u), { code: 'INVALID_QUERY', message: mention });
  }
  t.same(validateUpdate({ $set: { ab: 1, 'a.b': 2 } }).set.length, 2, 'ab and a.b do not overlap');
});

t.test('applyUpdate: a new document; the input untouched; objects created along $set paths', async (t) => {
  const doc = { _id: 'a', o: { x: 1, keep: { y: 2 } }, list: [1] };
  const out = applyUpdate(doc, { $set: { 'o.z.w': 3, n: null }, $unset: { 'o.x': '', 'nope.deeper': '' } });
  t.same(out, { _id: 'a', o: { keep: { y: 2 }, z: { w: 3 } }, list: [1], n: null });
  t.same(doc, { _id: 'a', o: { x: 1, keep: { y: 2 } }, list: [1] }, 'unchanged');
  t.equal(out.o.keep, doc.o.keep, 'untouched branches are shared');
  t.throws(() => applyUpdate(doc, { $set: { 'list.0': 5 } }), { code: 'INVALID_QUERY', message: /list holds an array/ });
  t.throws(() => applyUpdate({ a: null }, { $set: { 'a.b': 1 } }), { code: 'INVALID_QUERY', message: /a holds null/ });
  t.same(applyUpdate({ a: 5 }, { $unset: { 'a.b': '' } }), { a: 5 }, '$unset through a number changes nothing');
});

t.test('checkDocument and validateFind', async (t) => {
  const { id, doc } = checkDocument({ a: -0, b: undefined });
  t.match(id, /^[0-9a-f]{24}$/);
  t.same(doc, { _id: id, a: 0 });
  t.ok(Object.is(doc.a, 0), '-0 is stored as 0');
  t.same(checkDocument({ x: 1 }, 'key').doc, { _id: 'key', x: 1 });
  t.same(validateFind({ sort: { 'a.b': -1, c: 1 }, limit: 5 }), { limit: 5, skip: 0, sort: [[['a', 'b'], -1], [['c'], 1]] });
  t.throws(() => validateFind({ limit: Infinity }), { code: 'INVALID_QUERY' });
});

t.test('filters and paths are bounded: a request cannot make one query cost seconds', async (t) => {
  const { validateFilter, validateUpdate } = await import('../../../actors/data/query.ts');
  t.doesNotThrow(() => validateFilter({ a: { $in: Array.from({ length: 200 }, (_, i) => i) } }));
  t.throws(() => validateFilter({ a: { $in: Array.from({ length: 1000 }, (_, i) => i) } }), { code: 'INVALID_QUERY', message: /more than 256 terms/ });
  const wide = { $or: Array.from({ length: 300 }, (_, i) => ({ a: i })) };
  t.throws(() => validateFilter(wide), { code: 'INVALID_QUERY', message: /terms/ });
  let deep: Record<string, unknown> = { a: 1 };
  for (let i = 0; i < 20; i++) deep = { $and: [deep] };
  t.throws(() => validateFilter(deep), { code: 'INVALID_QUERY', message: /nested deeper/ });
  t.throws(() => validateUpdate({ $set: { [Array.from({ length: 1200 }, () => 'a').join('.')]: 1 } }), { code: 'INVALID_QUERY', message: /segments/ });
});
