// LocalStorage: the shared suite on a temporary folder, then what only a folder has (links, a missing base, file:// URLs).
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStorage } from '../../../stores/local/index.ts';
import { collect, storageSuite } from '../../conformance/storage.ts';

/** Every file and folder under `dir` (hidden ones too), relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.map((e) => relative(dir, join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)) + (e.isDirectory() ? '/' : '')).sort();
}

async function tempRoot(t: Test): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'svc-local-storage-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return root;
}

t.test('LocalStorage conformance', async (t) => {
  storageSuite(t, async () => {
    // The base is a folder inside a temporary root: the snapshot covers the root, so a write beside the base shows.
    const root = await mkdtemp(join(tmpdir(), 'svc-local-storage-'));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    const storage = new LocalStorage({ basePath: join(root, 'base'), createDirs: true });
    return { storage, snapshot: () => tree(root) };
  });
});

t.test('a symbolic link inside the base that points outside is INVALID_PATH; nothing is read or written there', async (t) => {
  const root = await tempRoot(t);
  const base = join(root, 'base');
  const outside = join(root, 'outside');
  await mkdir(base);
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), 'secret');
  await symlink(outside, join(base, 'link'));
  await symlink(join(outside, 'secret.txt'), join(base, 'secret-link.txt'));
  await mkdir(join(base, 'inner'));
  await writeFile(join(base, 'inner', 'ok.txt'), 'ok');
  await symlink(join(base, 'inner', 'ok.txt'), join(base, 'inner-link.txt'));
  const storage = new LocalStorage({ basePath: base, createDirs: false });
  const before = await tree(outside);

  const refused: [string, () => Promise<unknown>][] = [
    ['upload into a linked folder', () => storage.upload(Buffer.from('evil'), 'link/evil.txt')],
    ['upload into a new folder under a linked folder', () => storage.upload(Buffer.from('evil'), 'link/new/evil.txt')],
    ['download through a linked folder', () => storage.download('link/secret.txt')],
    ['download of a linked file', () => storage.download('secret-link.txt')],
    ['exists', () => storage.exists('link/secret.txt')],
    ['getMetadata', () => storage.getMetadata('secret-link.txt')],
    ['delete', () => storage.delete('link/secret.txt')],
    ['copy from', () => storage.copy('link/secret.txt', 'stolen.txt')],
    ['copy to', () => storage.copy('inner/ok.txt', 'link/planted.txt')],
    ['move from', () => storage.move('secret-link.txt', 'stolen.txt')],
    ['move to', () => storage.move('inner/ok.txt', 'link/planted.txt')],
    ['getUrl', () => storage.getUrl('link/secret.txt')],
    ['listFiles of a linked folder', () => collect(storage.listFiles('link/', true))],
  ];
  for (const [name, call] of refused) await t.rejects(call(), { code: 'INVALID_PATH' }, name);
  t.same(await tree(outside), before, 'outside is unchanged');
  t.equal(await readFile(join(outside, 'secret.txt'), 'utf8'), 'secret');
  t.notOk(await storage.exists('stolen.txt'));
  t.ok(await storage.exists('inner/ok.txt'), 'the source of the refused move is still there');
  // A link that stays inside is followed; links are not listed, nor are linked folders walked.
  t.equal((await storage.download('inner-link.txt')).toString(), 'ok');
  t.same(await collect(storage.listFiles('', true)), ['inner/ok.txt']);
});

t.test('createDirs false: a missing base is STORAGE_CONFIG (and is not made); once it exists, it is used', async (t) => {
  const root = await tempRoot(t);
  const base = join(root, 'missing');
  const storage = new LocalStorage({ basePath: base, createDirs: false });
  await t.rejects(storage.upload(Buffer.from('x'), 'a.txt'), { code: 'STORAGE_CONFIG', status: 500 });
  await t.rejects(collect(storage.listFiles()), { code: 'STORAGE_CONFIG' });
  await t.rejects(storage.exists('a.txt'), { code: 'STORAGE_CONFIG' });
  t.same(await readdir(root), [], 'nothing made');
  await mkdir(base);
  t.equal(await storage.upload(Buffer.from('x'), 'sub/a.txt'), 'sub/a.txt', 'folders inside the base are made with either setting');
  t.equal(await readFile(join(base, 'sub', 'a.txt'), 'utf8'), 'x');

  await writeFile(join(root, 'a-file'), '');
  await t.rejects(new LocalStorage({ basePath: join(root, 'a-file'), createDirs: true }).exists('x'), { code: 'STORAGE_CONFIG' }, 'a base that is a file');
  t.throws(() => new LocalStorage({ basePath: 'relative/path', createDirs: true }), { code: 'STORAGE_CONFIG' }, 'a relative base');
});

t.test('createDirs true: the base is made on first use', async (t) => {
  const root = await tempRoot(t);
  const base = join(root, 'a', 'b', 'storage');
  const storage = new LocalStorage({ basePath: base, createDirs: true });
  t.same(await collect(storage.listFiles('', true)), []);
  t.ok((await stat(base)).isDirectory());
});

t.test('getUrl is a file:// URL that reads back the content; getUploadUrl needs object storage', async (t) => {
  const root = await tempRoot(t);
  const storage = new LocalStorage({ basePath: root, createDirs: true });
  await storage.upload(Buffer.from('by url'), 'with space/ü.txt');
  const url = await storage.getUrl('with space/ü.txt', 60);
  t.match(url, /^file:\/\//);
  t.equal(await readFile(fileURLToPath(url), 'utf8'), 'by url');
  t.match(await storage.getUrl('not/yet.txt'), /^file:\/\/.*\/not\/yet\.txt$/, 'the file need not exist');
  await t.rejects(storage.getUploadUrl('a.txt'), { code: 'STORAGE_CONFIG', message: 'pre-signed upload URLs need object storage' });
});

t.test('folders: not files for exists/delete/copy/move; getMetadata says is_dir; temporary upload files are not listed', async (t) => {
  const root = await tempRoot(t);
  const storage = new LocalStorage({ basePath: root, createDirs: true });
  await storage.upload(Buffer.from('x'), 'dir/a.txt');
  t.equal(await storage.exists('dir'), false);
  t.equal(await storage.delete('dir'), false, 'a folder is not deleted');
  t.ok(await storage.exists('dir/a.txt'));
  t.equal(await storage.copy('dir', 'dir2'), false);
  t.equal(await storage.move('dir', 'dir2'), false);
  t.match(await storage.getMetadata('dir'), { name: 'dir', is_dir: true });
  await t.rejects(storage.download('dir'), { code: 'FILE_NOT_FOUND' });
  await t.rejects(storage.upload(Buffer.from('y'), 'dir'), { code: 'INVALID_PATH' }, 'a folder in the way');
  await t.rejects(storage.upload(Buffer.from('y'), 'dir/a.txt/b.txt'), { code: 'INVALID_PATH' }, 'a file in the way');
  await writeFile(join(root, 'dir', '.svc-upload-0123456789abcdef.tmp'), 'left by a killed process');
  t.same(await collect(storage.listFiles('dir/', true)), ['dir/a.txt']);
  t.same(await collect(storage.listFiles('', true)), ['dir/a.txt']);
});

t.test('upload from a relative file path and download to a relative path resolve against the working folder', async (t) => {
  const root = await tempRoot(t);
  const storage = new LocalStorage({ basePath: join(root, 'base'), createDirs: true });
  const work = join(root, 'work');
  await mkdir(work);
  await writeFile(join(work, 'in.txt'), 'relative');
  const cwd = process.cwd();
  process.chdir(work);
  t.teardown(() => process.chdir(cwd));
  await storage.upload('in.txt', 'r.txt');
  await storage.download('r.txt', 'out.txt');
  t.equal(await readFile(join(work, 'out.txt'), 'utf8'), 'relative');
});

t.test('local storage checks arguments as object storage does, and refuses paths no file system takes', async (t) => {
  const { LocalStorage } = await import('../../../stores/local/index.ts');
  const base = t.testdir({});
  const storage = new LocalStorage({ basePath: base, createDirs: true });
  await t.rejects(storage.upload(Buffer.from('x'), 'm.txt', { name: 'résumé' }), { code: 'INVALID_ARGUMENT' }, 'metadata S3 could not keep');
  await t.rejects(storage.getUrl('a.txt', 0), { code: 'INVALID_ARGUMENT' });
  await t.rejects(storage.exists('a'.repeat(300)), { code: 'INVALID_PATH', message: /longer than 255 bytes/ });
  await t.rejects(storage.upload(Buffer.from('x'), `${'d/'.repeat(600)}x`), { code: 'INVALID_PATH', message: /longer than 1024 bytes/ });
  const long = await storage.exists('a'.repeat(60_000)).catch((e: Error) => e);
  t.ok(long instanceof Error && long.message.length < 400, 'the message does not echo a huge path');
});
