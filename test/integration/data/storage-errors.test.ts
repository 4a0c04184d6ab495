// What the file system refuses because of the client's path reaches the client as 400 INVALID_PATH,
// never as a 503 that reads as an outage: a file moved onto its own folder (ENOTEMPTY), onto another
// folder (EISDIR), under a file (ENOTDIR), through a loop of symbolic links (ELOOP) — through a real
// `svc start` server whose functions call store(). Each refusal leaves the file where it was.
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsErrorCode } from '../../../actors/data/storage-errors.ts';
import { post, startServer } from '../../kit/index.ts';

const ENTRY = new URL('../../fixtures/data-app.ts', import.meta.url).pathname;

t.test('store() through a served app: paths the file system refuses are 400 INVALID_PATH', async (t) => {
  const storage = mkdtempSync(join(tmpdir(), 'svc-storage-'));
  t.teardown(() => rmSync(storage, { recursive: true, force: true }));
  const server = await startServer({ entry: ENTRY, env: { SVC_STORAGE_PATH: storage } });
  t.teardown(() => server.stop());
  const url = server.url;

  const put = await post(`${url}/function/writeText`, { path: 'docs/a.txt', text: 'kept' });
  t.equal(put.status, 200, JSON.stringify(put.body));
  mkdirSync(join(storage, 'empty'));
  // A loop of links inside the storage folder (made on disk: store() cannot make links).
  symlinkSync('loop', join(storage, 'loop'));

  const cases: [string, Record<string, string>, string][] = [
    ['moveFile', { from: 'docs/a.txt', to: 'docs' }, 'onto its own folder (ENOTEMPTY)'],
    ['moveFile', { from: 'docs/a.txt', to: 'empty' }, 'onto an empty folder (EISDIR)'],
    ['moveFile', { from: 'docs/a.txt', to: 'docs/a.txt/b.txt' }, 'under itself, a file (ENOTDIR)'],
    ['moveFile', { from: 'docs/a.txt', to: 'loop/b.txt' }, 'into a loop of links (ELOOP)'],
    ['copyFile', { from: 'docs/a.txt', to: 'docs' }, 'copied onto its own folder'],
    ['writeText', { path: 'loop/x.txt', text: 'x' }, 'written through a loop of links'],
  ];
  for (const [fn, body, what] of cases) {
    const res = await post(`${url}/function/${fn}`, body);
    t.equal(res.status, 400, `${fn} ${what}: 400, not ${res.status}`);
    t.equal(res.body.error?.code, 'INVALID_PATH', `${fn} ${what}: ${res.body.error?.message}`);
  }
  t.equal(readFileSync(join(storage, 'docs', 'a.txt'), 'utf8'), 'kept', 'the file is where it was, unchanged');
  const moved = await post(`${url}/function/moveFile`, { from: 'docs/a.txt', to: 'done/a.txt' });
  t.equal(moved.body.data?.result, true, 'and a move that makes sense still works');
  t.equal(readFileSync(join(storage, 'done', 'a.txt'), 'utf8'), 'kept');
  t.equal((await fetch(`${url}/health`)).status, 200, 'still serving');
});

t.test('each file system error is the caller’s fault, a setting, or an outage', async (t) => {
  for (const code of ['EISDIR', 'ENOTDIR', 'EEXIST', 'ENOTEMPTY', 'EINVAL', 'ENAMETOOLONG', 'ELOOP']) t.equal(fsErrorCode(code), 'INVALID_PATH', code);
  for (const code of ['EACCES', 'EPERM', 'EROFS']) t.equal(fsErrorCode(code), 'STORAGE_CONFIG', code);
  for (const code of ['EIO', 'ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'EBUSY', 'EFBIG', 'EMLINK', 'ESTALE', 'EXDEV', 'ESOMETHINGNEW']) t.equal(fsErrorCode(code), 'STORAGE_UNAVAILABLE', code);
  t.equal(fsErrorCode('ENOENT'), 'FILE_NOT_FOUND');
});
