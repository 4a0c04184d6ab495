/**
 * The conformance suite every docdb backend passes (SQLite, PostgreSQL,
 * MongoDB): each method, each operator and the edge cases of their meaning
 * (actors/data/query.ts), checked by hand-written expectations and, over
 * a corpus of awkward documents, against the reference matcher and sort of
 * query.ts — before and after indexes exist on the fields, since indexes
 * change the SQL the backends run.
 *
 * `make(dbName)` opens a backend on the same file / server each time; every
 * test uses dbNames of its own (`conf_<pid>_<n>`), so tests never see one
 * another's documents, and the isolation tests are real.
 */
import type { Test } from 'tap';
import type { DocBackend, Document, Filter, FindOptions } from '../../actors/data/kvstore-types.ts';
import { compareDocuments, matches, validateFind } from '../../actors/data/query.ts';

/** The prefix of every dbName the suite uses (a MongoDB run drops them afterwards). */
export const SUITE_DB_PREFIX = `conf_${process.pid}_`;
let n = 0;

/** Awkward documents: mixed types per field, nested objects, arrays of scalars, arrays, objects and null, missing fields. */
export const CORPUS: Document[] = [
  { _id: 'd01', n: 1, s: 'a', b: true, tags: ['x', 'y'], o: { p: 1, q: 'z' } },
  { _id: 'd02', n: 2.5, s: 'B', b: false, tags: ['y'], o: { p: 2 } },
  { _id: 'd03', n: -3, s: 'ab', tags: [], o: { p: null } },
  { _id: 'd04', n: '1', s: 1, tags: 'x', o: 'flat' },
  { _id: 'd05', n: null, s: null, tags: [1, 'x', null], o: { p: [1, 2] } },
  { _id: 'd06' },
  { _id: 'd07', n: 10, s: 'é', tags: [[1, 2], 3], o: { p: { deep: true } } },
  { _id: 'd08', n: 1e21, s: '𝄞', tags: [{ k: 1 }], b: 'true' },
  { _id: 'd09', n: 0, s: '\uffff', tags: ['X'], o: {} },
  { _id: 'd10', n: 9, s: 'Z', tags: [2, 10], o: { p: 3, q: ['z'] } },
  { _id: 'd11', n: true, s: '', tags: null },
  { _id: 'd12', n: [5, 15], s: ['m', 'n'], b: [true] },
];

/** Filters over the corpus: every operator, brackets, arrays, nulls, missing fields, nesting. */
export const FILTERS: Filter[] = [
  {},
  { n: 1 },
  { n: '1' },
  { n: true },
  { n: null },
  { n: 1e21 },
  { n: { $ne: null } },
  { n: { $ne: 1 } },
  { n: { $exists: false } },
  { n: { $exists: true } },
  { s: 'a' },
  { s: '' },
  { b: true },
  { b: 'true' },
  { b: [true] },
  { tags: 'x' },
  { tags: 1 },
  { tags: 3 },
  { tags: null },
  { tags: ['y'] },
  { tags: [] },
  { tags: [1, 2] },
  { tags: { k: 1 } },
  { tags: { $ne: 'x' } },
  { 'o.p': 1 },
  { 'o.p': null },
  { 'o.p': [1, 2] },
  { 'o.p': { deep: true } },
  { 'o.p.deep': true },
  { 'o.q': 'z' },
  { 'o.p': { $exists: true } },
  { 'o.q': { $exists: false } },
  { o: { p: 2 } },
  { o: {} },
  { o: 'flat' },
  { n: { $gt: 1 } },
  { n: { $gte: 1 } },
  { n: { $lt: 1 } },
  { n: { $lte: 0 } },
  { n: { $gte: 1e20 } },
  { n: { $gt: 2, $lt: 10 } },
  { n: { $gt: 6, $lt: 7 } },
  { s: { $gt: 'a' } },
  { s: { $lt: 'a' } },
  { s: { $gte: 'é' } },
  { s: { $gt: '\uffff' } },
  { s: { $lte: '' } },
  { tags: { $gt: 2 } },
  { tags: { $lt: 'y' } },
  { n: { $in: [1, '1', null] } },
  { n: { $nin: [1, null] } },
  { tags: { $in: ['x', [1, 2]] } },
  { tags: { $nin: ['x'] } },
  { tags: { $in: [] } },
  { tags: { $nin: [] } },
  { $or: [{ n: 1 }, { s: 'Z' }] },
  { $and: [{ n: { $gte: 0 } }, { $or: [{ b: true }, { b: false }] }] },
  { $or: [{ $and: [{ n: { $gt: 0 } }, { n: { $lt: 3 } }] }, { 'o.p': null }] },
  { n: { $gte: 0 }, $or: [{ tags: 'y' }, { tags: { $exists: false } }] },
  { _id: 'd03' },
  { _id: { $in: ['d01', 'd05', 'zz'] } },
  { _id: { $gt: 'd09' } },
  { _id: { $ne: 'd01' } },
  { _id: { $nin: ['d01', 'd02'] } },
  { _id: 5 },
  { '_id.x': null },
  { '_id.x': { $exists: true } },
];

/** Documents of a corpus that match, in `_id` order, by the reference matcher. */
export function expected(corpus: Document[], filter: Filter): string[] {
  return corpus
    .filter((d) => matches(d, filter))
    .map((d) => String(d._id))
    .sort();
}

function ids(docs: Document[]): string[] {
  return docs.map((d) => String(d._id));
}

/**
 * @example
 * docdbSuite(t, async (dbName) => new SqliteDocBackend(file, dbName));
 */
export function docdbSuite(t: Test, make: (dbName: string) => Promise<DocBackend>): void {
  const open = async (t: Test): Promise<DocBackend> => {
    const b = await make(`${SUITE_DB_PREFIX}${n++}`);
    t.teardown(() => b.close());
    return b;
  };
  const seeded = async (t: Test, corpus = CORPUS, collection = 'c'): Promise<DocBackend> => {
    const b = await open(t);
    await b.insertMany(collection, corpus);
    return b;
  };

  t.test('get / set / delete / exists by key', async (t) => {
    const b = await open(t);
    t.equal(await b.get('people', 'ada'), null, 'an absent collection has nothing');
    t.equal(await b.exists('people', 'ada'), false);
    await b.set('people', 'ada', { name: 'Ada', born: 1815, langs: ['en'], life: { died: 1852 } });
    t.same(await b.get('people', 'ada'), { _id: 'ada', name: 'Ada', born: 1815, langs: ['en'], life: { died: 1852 } });
    t.equal(await b.exists('people', 'ada'), true);
    await b.set('people', 'ada', { name: 'Ada Lovelace' });
    t.same(await b.get('people', 'ada'), { _id: 'ada', name: 'Ada Lovelace' }, 'set replaces the document whole');
    await b.set('people', 'ada', { _id: 'ada', name: 'A.' });
    t.same(await b.get('people', 'ada'), { _id: 'ada', name: 'A.' }, 'an _id equal to the key is fine');
    await t.rejects(b.set('people', 'ada', { _id: 'bob' }), { code: 'INVALID_QUERY' }, 'an _id other than the key');
    t.equal(await b.delete('people', 'ada'), true);
    t.equal(await b.delete('people', 'ada'), false);
    t.equal(await b.get('people', 'ada'), null);
    t.same(await b.find('people', {}), []);
  });

  t.test('insertOne: a 24-hex _id when none is given, the given one kept, a taken one DUPLICATE_KEY', async (t) => {
    const b = await open(t);
    const a = await b.insertOne('c', { x: 1 });
    const c = await b.insertOne('c', { x: 2 });
    t.match(a, /^[0-9a-f]{24}$/);
    t.not(a, c);
    t.same(await b.get('c', a), { _id: a, x: 1 });
    t.equal(await b.insertOne('c', { _id: 'mine', x: 3 }), 'mine');
    await t.rejects(b.insertOne('c', { _id: 'mine', x: 4 }), { code: 'DUPLICATE_KEY', status: 409 });
    t.same(await b.get('c', 'mine'), { _id: 'mine', x: 3 }, 'the first stays');
    for (const bad of [5, null, { $oid: 'x' }, ['a'], true]) {
      await t.rejects(b.insertOne('c', { _id: bad, x: 1 }), { code: 'INVALID_QUERY' }, `_id ${JSON.stringify(bad)}`);
    }
    t.equal((await b.find('c', {})).length, 3);
  });

  t.test('insertMany: ids in order; all or none on a taken _id or one given twice', async (t) => {
    const b = await open(t);
    t.same(await b.insertMany('c', []), []);
    const got = await b.insertMany('c', [{ _id: 'a', v: 1 }, { v: 2 }, { _id: 'c', v: 3 }]);
    t.equal(got.length, 3);
    t.equal(got[0], 'a');
    t.equal(got[2], 'c');
    t.same(ids(await b.find('c', {}, { sort: { v: 1 } })), got);
    await t.rejects(b.insertMany('c', [{ _id: 'x1' }, { _id: 'x2' }, { _id: 'a' }, { _id: 'x3' }]), { code: 'DUPLICATE_KEY' });
    await t.rejects(b.insertMany('c', [{ _id: 'y1' }, { _id: 'y2' }, { _id: 'y1' }]), { code: 'DUPLICATE_KEY' });
    await t.rejects(b.insertMany('c', [{ _id: 'z1' }, { _id: 'z2', when: new Date() }]), { code: 'INVALID_QUERY' });
    t.same(ids(await b.find('c', {}, { sort: { v: 1 } })), got, 'nothing of the refused batches is there');
  });

  t.test('values: JSON only; undefined fields dropped; the rest refused naming the path', async (t) => {
    const b = await open(t);
    const id = await b.insertOne('c', { a: 1, gone: undefined, deep: { x: undefined, y: [1, 'two', null, { z: false }] }, s: 'é𝄞\n"\\' });
    t.same(await b.get('c', id), { _id: id, a: 1, deep: { y: [1, 'two', null, { z: false }] }, s: 'é𝄞\n"\\' });
    class Point {
      x = 1;
    }
    const refused: [Document, RegExp][] = [
      [{ when: new Date() }, /when.*Date/],
      [{ n: NaN }, /\bn\b/],
      [{ deep: { n: Infinity } }, /deep\.n/],
      [{ big: 10n }, /big/],
      [{ f: () => 1 }, /\bf\b/],
      [{ m: new Map() }, /\bm\b.*Map/],
      [{ p: new Point() }, /\bp\b.*Point/],
      [{ list: [1, undefined] }, /list\.1/],
      [{ o: { $set: 1 } }, /\$set/],
      [{ 'a.b': 1 }, /a\.b/],
      [{ nul: 'a\u0000b' }, /nul/],
      [{ lone: '\ud800' }, /lone/],
      [{ deep: JSON.parse('['.repeat(120) + ']'.repeat(120)) as unknown }, /deeper/],
    ];
    for (const [doc, mention] of refused) {
      await t.rejects(b.insertOne('c', doc), { code: 'INVALID_QUERY', status: 400, message: mention }, `refused: ${Object.keys(doc)[0]}`);
    }
    await t.rejects(b.updateMany('c', {}, { $set: { when: new Date() } }), { code: 'INVALID_QUERY', message: /when/ });
    await t.rejects(b.find('c', { when: new Date() }), { code: 'INVALID_QUERY', message: /when/ });
    t.equal((await b.find('c', {})).length, 1, 'nothing refused was stored');
  });

  t.test('a key or path segment __proto__ is RESERVED_KEY naming it, everywhere: documents, nested, filters, updates, sorts, indexes', async (t) => {
    const b = await open(t);
    // JSON.parse makes __proto__ an own key (an object literal would set the prototype instead).
    const own = (json: string): Document => JSON.parse(json) as Document;
    const refusedDocs: [Document, string][] = [
      [own('{"name":"p","__proto__":{"x":1}}'), 'doc.__proto__'],
      [own('{"name":"p","a":{"b":[{"__proto__":1}]}}'), 'doc.a.b.0.__proto__'],
      [own('{"name":"p","\\u005f_proto__":true}'), 'doc.__proto__'],
    ];
    for (const [doc, path] of refusedDocs) {
      await t.rejects(b.insertOne('c', doc), { code: 'RESERVED_KEY', status: 400, message: new RegExp(path.replace(/\./g, '\\.')) }, `insertOne refused: ${path}`);
      await t.rejects(b.insertMany('c', [{ name: 'fine' }, doc]), { code: 'RESERVED_KEY' }, `insertMany refused: ${path}`);
      await t.rejects(b.set('c', 'k', doc), { code: 'RESERVED_KEY' }, `set refused: ${path}`);
    }
    t.same(await b.find('c', {}), [], 'nothing refused was stored, not even the good half of a batch');
    const id = await b.insertOne('c', { name: 'q', __proto_: 1, proto: { __proto: 2 } });
    t.same(await b.get('c', id), { _id: id, name: 'q', __proto_: 1, proto: { __proto: 2 } }, 'names near it are stored as sent');
    await t.rejects(b.find('c', own('{"__proto__":{"x":1}}')), { code: 'RESERVED_KEY', message: /__proto__/ }, 'a filter key');
    await t.rejects(b.find('c', { '__proto__.toString': { $exists: true } }), { code: 'RESERVED_KEY' }, 'a filter path through it');
    await t.rejects(b.find('c', { name: own('{"__proto__":1}') }), { code: 'RESERVED_KEY' }, 'a filter value holding it');
    await t.rejects(b.updateMany('c', {}, { $set: { 'proto.__proto__': 1 } }), { code: 'RESERVED_KEY' }, 'a $set path');
    await t.rejects(b.updateMany('c', {}, { $set: { proto: own('{"__proto__":{"polluted":true}}') } }), { code: 'RESERVED_KEY' }, 'a $set value');
    await t.rejects(b.updateMany('c', {}, own('{"$unset":{"__proto__":""}}') as never), { code: 'RESERVED_KEY' }, 'an $unset path');
    await t.rejects(b.find('c', {}, { sort: own('{"__proto__":1}') as never }), { code: 'RESERVED_KEY' }, 'a sort path');
    await t.rejects(b.createIndex('c', '__proto__'), { code: 'RESERVED_KEY' }, 'an index path');
    t.same(await b.get('c', id), { _id: id, name: 'q', __proto_: 1, proto: { __proto: 2 } }, 'unchanged by the refused updates');
    t.equal(({} as { polluted?: boolean }).polluted, undefined, 'no prototype was touched');
  });

  t.test('keys that need quoting in SQL reach their fields', async (t) => {
    const b = await open(t);
    const doc = { "it's": 1, 'say "hi"': 2, 'back\\slash': 3, 'with space': { 'and-dash': 4 }, é: 5, '0': 6 };
    const id = await b.insertOne('c', doc);
    t.same(await b.get('c', id), { _id: id, ...doc });
    for (const [filter, label] of [
      [{ "it's": 1 }, 'quote'],
      [{ 'say "hi"': 2 }, 'double quotes'],
      [{ 'back\\slash': 3 }, 'backslash'],
      [{ 'with space.and-dash': 4 }, 'space and dash'],
      [{ é: { $gte: 5 } }, 'non-ASCII'],
      [{ '0': 6 }, 'digits'],
    ] as [Filter, string][]) {
      t.same(ids(await b.find('c', filter)), [id], label);
    }
    await b.createIndex('c', "it's");
    t.same(ids(await b.find('c', { "it's": 1 })), [id], 'indexed, quote');
  });

  t.test('equality: type brackets, nested paths, arrays contain or equal, null matches missing', async (t) => {
    const b = await seeded(t);
    const q = async (f: Filter) => ids(await b.find('c', f));
    t.same(await q({ n: 1 }), ['d01'], '1 is not "1" nor true');
    t.same(await q({ n: '1' }), ['d04']);
    t.same(await q({ n: true }), ['d11']);
    t.same(await q({ n: null }), ['d05', 'd06'], 'null and missing');
    t.same(await q({ tags: 'x' }), ['d01', 'd04', 'd05'], 'a scalar, or an array containing it');
    t.same(await q({ tags: ['y'] }), ['d02'], 'an array equals an array');
    t.same(await q({ tags: [1, 2] }), ['d07'], 'or is an element of one');
    t.same(await q({ tags: 1 }), ['d05'], 'one level: [[1, 2]] does not contain 1');
    t.same(await q({ tags: null }), ['d05', 'd06', 'd11', 'd12'], 'null, missing, or an array holding null');
    t.same(await q({ 'o.p': null }), ['d03', 'd04', 'd06', 'd08', 'd09', 'd11', 'd12'], 'a path through a string is missing');
    t.same(await q({ 'o.p.deep': true }), ['d07']);
    t.same(await q({ 'o.p': { deep: true } }), ['d07'], 'object equality');
    t.same(await q({ o: {} }), ['d09']);
    t.same(await q({ b: [true] }), ['d12']);
    t.same(await q({ b: true }), ['d01', 'd12']);
  });

  t.test('$ne, $nin, $exists: a missing field is not equal to anything but null', async (t) => {
    const b = await seeded(t);
    const q = async (f: Filter) => ids(await b.find('c', f));
    t.same(await q({ n: { $ne: 1 } }), CORPUS.map((d) => String(d._id)).filter((id) => id !== 'd01'));
    t.same(await q({ n: { $ne: null } }), ['d01', 'd02', 'd03', 'd04', 'd07', 'd08', 'd09', 'd10', 'd11', 'd12']);
    t.same(await q({ tags: { $ne: 'x' } }), ['d02', 'd03', 'd06', 'd07', 'd08', 'd09', 'd10', 'd11', 'd12'], 'not if an element is x');
    t.same(await q({ tags: { $nin: ['x', 'y'] } }), ['d03', 'd06', 'd07', 'd08', 'd09', 'd10', 'd11', 'd12']);
    t.same(await q({ n: { $exists: false } }), ['d06']);
    t.same(await q({ n: { $exists: true } }).then((x) => x.length), 11, 'null exists');
    t.same(await q({ 'o.q': { $exists: true } }), ['d01', 'd10']);
  });

  t.test('$gt $gte $lt $lte: numbers with numbers, strings with strings by code point, any array element', async (t) => {
    const b = await seeded(t);
    const q = async (f: Filter) => ids(await b.find('c', f));
    t.same(await q({ n: { $gt: 1 } }), ['d02', 'd07', 'd08', 'd10', 'd12'], 'not "1", not true; 2.5 is a number');
    t.same(await q({ n: { $gte: 1, $lte: 2.5 } }), ['d01', 'd02']);
    t.same(await q({ n: { $lt: 0 } }), ['d03']);
    t.same(await q({ n: { $gt: 6, $lt: 7 } }), ['d12'], 'each bound met by some element (no $elemMatch)');
    t.same(await q({ s: { $gt: 'a' } }), ['d03', 'd07', 'd08', 'd09', 'd12'], "'ab' > 'a', 'B' and 'Z' < 'a'");
    t.same(await q({ s: { $lt: 'a' } }), ['d02', 'd10', 'd11']);
    t.same(await q({ s: { $gt: '\uffff' } }), ['d08'], 'U+1D11E sorts after U+FFFF (UTF-8 order, not UTF-16)');
    t.same(await q({ tags: { $gt: 2 } }), ['d07', 'd10']);
    t.same(await q({ _id: { $gte: 'd11' } }), ['d11', 'd12']);
  });

  t.test('$in / $nin; $and / $or at the top and nested; {} is everything', async (t) => {
    const b = await seeded(t);
    const q = async (f: Filter) => ids(await b.find('c', f));
    t.same(await q({ n: { $in: [1, '1', null] } }), ['d01', 'd04', 'd05', 'd06']);
    t.same(await q({ tags: { $in: ['y', [1, 2]] } }), ['d01', 'd02', 'd07']);
    t.same(await q({ tags: { $in: [] } }), []);
    t.same((await q({ tags: { $nin: [] } })).length, CORPUS.length);
    t.same(await q({ $or: [{ n: 1 }, { s: 'Z' }] }), ['d01', 'd10']);
    t.same(await q({ $and: [{ n: { $gte: 0 } }, { $or: [{ b: true }, { b: false }] }] }), ['d01', 'd02', 'd12']);
    t.same(await q({ n: { $gte: 0 }, $or: [{ tags: 'y' }, { $and: [{ tags: { $exists: true } }, { tags: { $gt: 5 } }] }] }), ['d01', 'd02', 'd10']);
    t.same((await q({})).length, CORPUS.length);
    t.same(await q({ _id: { $in: ['d01', 'd05', 'zz'] } }), ['d01', 'd05']);
    t.same(await q({ _id: 5 }), []);
  });

  t.test('every corpus filter agrees with the reference matcher, without and with indexes', async (t) => {
    const b = await seeded(t);
    const check = async (label: string) => {
      for (const f of FILTERS) t.same(ids(await b.find('c', f)), expected(CORPUS, f), `${label} ${JSON.stringify(f)}`);
    };
    await check('no index:');
    for (const field of ['n', 's', 'b', 'tags', 'o.p', 'o', '_id']) await b.createIndex('c', field);
    await b.createIndex('c', 'n');
    await check('indexed:');
  });

  t.test('unknown operators and malformed filters are INVALID_QUERY naming the operator', async (t) => {
    const b = await seeded(t);
    const bad: [Filter, RegExp][] = [
      [{ name: { $regex: '^a' } }, /\$regex/],
      [{ $where: 'this.a > 1' }, /\$where/],
      [{ n: { $not: { $gt: 1 } } }, /\$not/],
      [{ $nor: [{ n: 1 }] }, /\$nor/],
      [{ tags: { $elemMatch: { $gt: 1 } } }, /\$elemMatch/],
      [{ tags: { $size: 2 } }, /\$size/],
      [{ n: { $and: [{ $gt: 1 }] } }, /\$and/],
      [{ $and: [] }, /\$and/],
      [{ $or: { n: 1 } }, /\$or/],
      [{ n: { $gt: true } }, /\$gt/],
      [{ n: { $lt: { a: 1 } } }, /\$lt/],
      [{ n: { $gte: null } }, /\$gte/],
      [{ n: { $in: 5 } }, /\$in/],
      [{ n: { $exists: 'yes' } }, /\$exists/],
      [{ n: { $gt: 1, plain: 2 } }, /plain/],
      [{ 'a..b': 1 }, /a\.\.b/],
      [{ 'a.$b': 1 }, /a\.\$b/],
      [{ n: undefined }, /\bn\b/],
    ];
    for (const [f, mention] of bad) {
      await t.rejects(b.find('c', f), { code: 'INVALID_QUERY', status: 400, message: mention }, JSON.stringify(f) ?? String(f));
    }
    await t.rejects(b.findOne('c', { n: { $regex: 'x' } }), { code: 'INVALID_QUERY' });
    await t.rejects(b.updateMany('c', { n: { $foo: 1 } }, { $set: { a: 1 } }), { code: 'INVALID_QUERY', message: /\$foo/ });
    await t.rejects(b.deleteMany('c', { $expr: {} }), { code: 'INVALID_QUERY', message: /\$expr/ });
    t.equal((await b.find('c', {})).length, CORPUS.length, 'nothing was changed');
  });

  t.test('find: sort by dotted fields, numbers numerically, strings by code point, types in Mongo order; skip, limit; _id by default', async (t) => {
    const docs: Document[] = [
      { _id: 'k1', v: 10, w: { x: 'b' }, g: 1 },
      { _id: 'k2', v: 9, w: { x: 'a' }, g: 2 },
      { _id: 'k3', v: '10', w: { x: 'B' }, g: 1 },
      { _id: 'k4', v: null, w: { x: 'é' }, g: 2 },
      { _id: 'k5', w: { x: '𝄞' }, g: 1 },
      { _id: 'k6', v: 2.5, w: { x: '\uffff' }, g: 2 },
      { _id: 'k7', v: true, g: 1 },
      { _id: 'k8', v: -1, w: { x: 'a' }, g: 2 },
      { _id: 'k0', v: false, w: { x: '' }, g: 1 },
    ];
    const b = await seeded(t, docs);
    const q = async (o: FindOptions, f: Filter = {}) => ids(await b.find('c', f, o));
    const ref = (o: FindOptions, f: Filter = {}) => {
      const c = validateFind(o);
      const all = docs.filter((d) => matches(d, f)).sort(compareDocuments(c.sort));
      return ids(all.slice(c.skip, c.limit ? c.skip + c.limit : undefined));
    };
    t.same(await q({}), ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'], '_id order by default');
    t.same(await q({ sort: { v: 1 } }), ['k4', 'k5', 'k8', 'k6', 'k2', 'k1', 'k3', 'k0', 'k7'], 'null/missing, numbers, strings, booleans');
    t.same(await q({ sort: { v: -1 } }), ['k7', 'k0', 'k3', 'k1', 'k2', 'k6', 'k8', 'k4', 'k5'], 'descending; ties still by _id');
    t.same(await q({ sort: { 'w.x': 1 } }), ['k7', 'k0', 'k3', 'k2', 'k8', 'k1', 'k4', 'k6', 'k5']);
    for (const o of [{ sort: { g: 1, v: -1 } }, { sort: { g: -1, 'w.x': 1 }, skip: 2, limit: 3 }, { skip: 7 }, { skip: 20 }, { limit: 0 }, { limit: 2, sort: { _id: -1 } }] as FindOptions[]) {
      t.same(await q(o), ref(o), JSON.stringify(o));
    }
    t.same(await q({ sort: { v: 1 }, limit: 2 }, { g: 1 }), ['k5', 'k1']);
    t.same(await b.findOne('c', { g: 2 }), docs[1], 'findOne: the first match by _id');
    t.equal(await b.findOne('c', { g: 3 }), null);
    for (const o of [{ limit: -1 }, { skip: 1.5 }, { sort: { v: 2 } }, { sort: { 'a..b': 1 } }] as FindOptions[]) {
      await t.rejects(b.find('c', {}, o), { code: 'INVALID_QUERY' }, JSON.stringify(o));
    }
  });

  t.test('updates: $set creates nested objects, $unset removes; counts are matched documents', async (t) => {
    const b = await seeded(t, [
      { _id: 'u1', n: 1, o: { a: 1 } },
      { _id: 'u2', n: 2 },
      { _id: 'u3', n: 2, tags: ['x'] },
    ]);
    t.equal(await b.updateOne('c', { n: 2 }, { $set: { 'o.b.c': 'deep' } }), 1);
    t.same(await b.get('c', 'u2'), { _id: 'u2', n: 2, o: { b: { c: 'deep' } } }, 'the first match by _id');
    t.same(await b.get('c', 'u3'), { _id: 'u3', n: 2, tags: ['x'] }, 'only one');
    t.equal(await b.updateMany('c', { n: { $gte: 1 } }, { $set: { 'o.a': 5, flag: true } }), 3);
    t.same(await b.get('c', 'u1'), { _id: 'u1', n: 1, o: { a: 5 }, flag: true });
    t.same(await b.get('c', 'u2'), { _id: 'u2', n: 2, o: { b: { c: 'deep' }, a: 5 }, flag: true });
    t.equal(await b.updateMany('c', { flag: true }, { $set: { flag: true } }), 3, 'matched, though nothing changed');
    t.equal(await b.updateMany('c', { n: 9 }, { $set: { x: 1 } }), 0);
    t.equal(await b.updateOne('c', { n: 9 }, { $set: { x: 1 } }), 0, 'no upsert');
    t.equal((await b.find('c', {})).length, 3);
    t.equal(await b.updateMany('c', {}, { $unset: { 'o.a': '', missing: '', 'o.zz.y': '' }, $set: { tags: ['y'] } }), 3);
    t.same(await b.get('c', 'u1'), { _id: 'u1', n: 1, o: {}, flag: true, tags: ['y'] });
    t.same(await b.get('c', 'u2'), { _id: 'u2', n: 2, o: { b: { c: 'deep' } }, flag: true, tags: ['y'] });
    t.equal(await b.updateOne('c', { _id: 'u3' }, { $set: { o: null } }), 1);
    t.same(await b.get('c', 'u3'), { _id: 'u3', n: 2, o: null, flag: true, tags: ['y'] });
    // Names an Object has by inheritance are fields like any other: created along a path, unset only when there.
    t.equal(await b.updateOne('c', { _id: 'u1' }, { $set: { 'constructor.q': 1, 'toString.r': 2 }, $unset: { hasOwnProperty: '' } }), 1);
    t.same(await b.get('c', 'u1'), { _id: 'u1', n: 1, o: {}, flag: true, tags: ['y'], constructor: { q: 1 }, toString: { r: 2 } });
    t.equal(await b.updateOne('c', { _id: 'u1' }, { $unset: { 'constructor.q': '' } }), 1);
    t.same(await b.get('c', 'u1'), { _id: 'u1', n: 1, o: {}, flag: true, tags: ['y'], constructor: {}, toString: { r: 2 } });
  });

  t.test('updates refused: replacement documents, other operators, _id, overlapping paths, a path through a non-object', async (t) => {
    const b = await seeded(t, [{ _id: 'u1', n: 1, s: 'x', list: [1] }]);
    const bad: [unknown, RegExp][] = [
      [{ n: 2 }, /replacement/],
      [{}, /empty/],
      [{ $inc: { n: 1 } }, /\$inc/],
      [{ $push: { list: 2 } }, /\$push/],
      [{ $set: { _id: 'other' } }, /_id/],
      [{ $unset: { _id: '' } }, /_id/],
      [{ $set: { a: 1 }, $unset: { 'a.b': '' } }, /overlap/],
      [{ $set: { 'a..b': 1 } }, /a\.\.b/],
      [{ $set: { a: undefined } }, /\ba\b/],
      [{ $set: 5 }, /\$set/],
    ];
    for (const [u, mention] of bad) {
      await t.rejects(b.updateOne('c', {}, u as never), { code: 'INVALID_QUERY', message: mention }, JSON.stringify(u));
      await t.rejects(b.updateMany('c', {}, u as never), { code: 'INVALID_QUERY' }, JSON.stringify(u));
    }
    await t.rejects(b.updateOne('c', { _id: 'u1' }, { $set: { 's.t': 1 } }), { code: 'INVALID_QUERY' }, 'through a string');
    await t.rejects(b.updateOne('c', { _id: 'u1' }, { $set: { 'list.x': 1 } }), { code: 'INVALID_QUERY' }, 'through an array');
    t.same(await b.get('c', 'u1'), { _id: 'u1', n: 1, s: 'x', list: [1] }, 'unchanged');
  });

  t.test('deleteOne / deleteMany resolve to the number deleted', async (t) => {
    const b = await seeded(t);
    t.equal(await b.deleteOne('c', { tags: 'x' }), 1);
    t.equal(await b.get('c', 'd01'), null, 'the first match by _id');
    t.equal(await b.deleteOne('c', { n: 12345 }), 0);
    t.equal(await b.deleteMany('c', { tags: 'x' }), 2);
    t.equal(await b.deleteMany('c', { tags: 'x' }), 0);
    t.equal(await b.deleteMany('c', { n: { $type: 'x' } }).catch((e: { code: string }) => e.code), 'INVALID_QUERY');
    t.equal(await b.deleteMany('c', {}), CORPUS.length - 3);
    t.same(await b.find('c', {}), []);
    t.equal(await b.deleteMany('absent', {}), 0);
  });

  t.test('collections and dbNames are isolated; an absent collection is empty', async (t) => {
    const base = `${SUITE_DB_PREFIX}${n++}`;
    const one = await make(`${base}a`);
    const two = await make(`${base}b`);
    t.teardown(async () => {
      await one.close();
      await two.close();
    });
    await one.insertOne('users', { _id: 'u', who: 'one' });
    await one.insertOne('other', { _id: 'u', who: 'other collection' });
    await two.insertOne('users', { _id: 'u', who: 'two' });
    t.same(await one.get('users', 'u'), { _id: 'u', who: 'one' });
    t.same(await two.get('users', 'u'), { _id: 'u', who: 'two' });
    t.same(ids(await two.find('users', {})), ['u']);
    t.same(await two.find('other', {}), [], 'the same collection name in another dbName');
    t.equal(await two.updateMany('users', {}, { $set: { seen: true } }), 1);
    t.same(await one.get('users', 'u'), { _id: 'u', who: 'one' });
    t.equal(await two.deleteMany('users', {}), 1);
    t.same(await one.find('users', {}), [{ _id: 'u', who: 'one' }]);
    t.same(await one.find('nothing-here', { a: 1 }), []);
    t.equal(await one.findOne('nothing-here', {}), null);
    t.equal(await one.updateMany('nothing-here', {}, { $set: { a: 1 } }), 0);
  });

  t.test('createIndex: idempotent, _id a no-op, answers unchanged (arrays at the indexed path included)', async (t) => {
    const b = await seeded(t);
    await b.createIndex('c', 'tags');
    await b.createIndex('c', 'tags');
    await b.createIndex('c', '_id');
    await b.createIndex('c', 'o.p');
    await t.rejects(b.createIndex('c', 'a..b'), { code: 'INVALID_QUERY' });
    t.same(ids(await b.find('c', { tags: 'x' })), ['d01', 'd04', 'd05']);
    t.same(ids(await b.find('c', { tags: { $gt: 2 } })), ['d07', 'd10']);
    t.same(ids(await b.find('c', { 'o.p': 1, tags: 'x' })), ['d01', 'd05'], 'two indexed paths, arrays at both');
    await b.insertOne('c', { _id: 'd13', tags: ['late', 'x'] });
    t.same(ids(await b.find('c', { tags: 'x' })), ['d01', 'd04', 'd05', 'd13'], 'a document written after the index');
    t.equal(await b.updateMany('c', { tags: 'late' }, { $set: { tags: 'x' } }), 1);
    t.same(ids(await b.find('c', { tags: ['late', 'x'] })), []);
    t.same(ids(await b.find('c', { tags: 'x' })), ['d01', 'd04', 'd05', 'd13']);
    t.equal(await b.deleteOne('c', { tags: 'x', _id: { $gt: 'd04' } }), 1);
    t.same(ids(await b.find('c', { tags: 'x' })), ['d01', 'd04', 'd13']);
  });
}
