// safeRelative / safePrefix: what a caller may name, normalised; everything else INVALID_PATH.
import t from 'tap';
import { safePrefix, safeRelative, STORAGE_ERRORS } from '../../../actors/data/index.ts';
import { TRAVERSALS } from '../../conformance/storage.ts';

t.test('safeRelative normalises ./ segments and repeated slashes', async (t) => {
  const cases: [string, string][] = [
    ['a.txt', 'a.txt'],
    ['./a.txt', 'a.txt'],
    ['docs//a.txt', 'docs/a.txt'],
    ['./docs/./sub//a.txt', 'docs/sub/a.txt'],
    ['docs/', 'docs'],
    ['...', '...'],
    ['..a/b..', '..a/b..'],
    ['ab:c', 'ab:c'],
    ['with space/ü.txt', 'with space/ü.txt'],
  ];
  for (const [input, expected] of cases) t.equal(safeRelative(input), expected, JSON.stringify(input));
});

t.test('safeRelative refuses what leaves the base, or names nothing, with INVALID_PATH naming the path', async (t) => {
  for (const path of [...TRAVERSALS, '', '.', './', '//', '/', 'a/..', 'a\\b', 'D:/x', 'c:', '\\\\?\\C:\\x']) {
    t.throws(() => safeRelative(path), { code: 'INVALID_PATH', status: STORAGE_ERRORS.INVALID_PATH.status }, JSON.stringify(path));
  }
  t.throws(() => safeRelative('../secret'), { message: /"\.\.\/secret"/ }, 'the message names the path');
  t.throws(() => safeRelative('a\u0000b'), { message: /\\u0000/ }, 'NUL shown escaped');
  t.throws(() => safeRelative(42 as unknown as string), { code: 'INVALID_PATH' }, 'not a string');
});

t.test('safePrefix keeps a trailing slash and allows the empty prefix', async (t) => {
  const cases: [string, string][] = [
    ['', ''],
    ['.', ''],
    ['./', ''],
    ['docs', 'docs'],
    ['docs/', 'docs/'],
    ['docs/.', 'docs/'],
    ['./docs//', 'docs/'],
    ['docs/re', 'docs/re'],
  ];
  for (const [input, expected] of cases) t.equal(safePrefix(input), expected, JSON.stringify(input));
  for (const path of TRAVERSALS) t.throws(() => safePrefix(path), { code: 'INVALID_PATH' }, JSON.stringify(path));
});
