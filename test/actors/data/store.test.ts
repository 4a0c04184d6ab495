// `store()`, `StorageFactory` and the binding they read, through the data room's door: the runtime bound (or, outside
// one, the current folder's settings), one storage per settings kept until the runtime stops, arguments checked.
import t from 'tap';
// The built-in backends, registered as the runtime registers them.
import '../../../stores/index.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { STORAGE_DEFAULTS } from '../../../actors/data/index.ts';
import { bindData, closeData, dataBinding, setDataFallback, store, StorageFactory, type DataBinding } from '../../../actors/data/index.ts';

function binding(dir: string, over: Partial<DataBinding> = {}): DataBinding {
  return { projectRoot: dir, dataDir: join(dir, 'data'), storage: { ...STORAGE_DEFAULTS }, docdbUri: '', kvUrl: '', ...over };
}

t.teardown(() => closeData());

t.test('the binding: the last runtime bound wins; unbinding gives back the one before, in any order', async (t) => {
  const [a, b, c] = [binding('/a'), binding('/b'), binding('/c')];
  const offA = bindData(a);
  const offB = bindData(b);
  const offC = bindData(c);
  t.equal(dataBinding(), c);
  offB();
  t.equal(dataBinding(), c, 'unbinding one below the top leaves the top');
  offC();
  t.equal(dataBinding(), a);
  offC();
  t.equal(dataBinding(), a, 'unbinding twice does nothing more');
  offA();
  t.not(dataBinding(), a);
});

t.test('outside a runtime: the current folder, read again when the environment or the folder changes', async (t) => {
  const saved = { cwd: process.cwd(), dataDir: process.env.SVC_DATA_DIR };
  t.teardown(() => {
    process.chdir(saved.cwd);
    if (saved.dataDir === undefined) delete process.env.SVC_DATA_DIR;
    else process.env.SVC_DATA_DIR = saved.dataDir;
  });
  const dir = t.testdir({ other: {} });
  process.chdir(dir);
  const plain = dataBinding();
  t.same(plain, binding(process.cwd(), { dataDir: join(process.cwd(), '.svc', 'data') }), 'with no loader: the folder, `.svc/data`, the storage defaults');

  let loads = 0;
  setDataFallback(() => (loads++, binding(process.cwd(), { dataDir: process.env.SVC_DATA_DIR ?? 'unset' })));
  t.equal(dataBinding().dataDir, 'unset');
  dataBinding();
  t.equal(loads, 1, 'read once while nothing changes');
  process.env.SVC_DATA_DIR = '/somewhere';
  t.equal(dataBinding().dataDir, '/somewhere', 'a changed SVC_DATA_DIR is read again');
  process.env.UNRELATED_SETTING = 'x';
  dataBinding();
  t.equal(loads, 2, 'a variable the binding does not read changes nothing');
  delete process.env.UNRELATED_SETTING;
  process.chdir(join(dir, 'other'));
  t.equal(dataBinding().projectRoot, process.cwd(), 'another folder is read again');
  t.equal(loads, 3);
  const off = bindData(binding('/bound'));
  t.equal(dataBinding().projectRoot, '/bound', 'a bound runtime comes before the fallback');
  off();
});

t.test('store(): local files under the project folder; one storage per settings, until the runtime stops', async (t) => {
  const root = t.testdir({ app: {}, other: {} });
  const dir = join(root, 'app');
  const off = bindData(binding(dir));
  t.teardown(off);
  const files = store();
  t.equal(files.type, 'local');
  t.equal(await files.upload(Buffer.from('hello'), 'notes/a.txt'), 'notes/a.txt');
  t.equal(readFileSync(join(dir, 'storage', 'notes', 'a.txt'), 'utf8'), 'hello', 'under ./storage of the project folder');
  t.equal(store(), files, 'the same settings: the same storage');
  t.equal(StorageFactory.getDefault(), files);
  const avatars = store('avatars');
  t.not(avatars, files, 'another base path: another storage');
  await avatars.upload(Buffer.from('png'), 'ann.png');
  t.ok(existsSync(join(dir, 'avatars', 'ann.png')));
  t.equal(store('avatars'), avatars);

  const offOther = bindData(binding(join(root, 'other')));
  t.not(store(), files, "another project folder: its own storage");
  offOther();

  await closeData();
  t.not(store(), files, 'closed with the runtime: the next call makes a new one');
});

t.test('store() and StorageFactory refuse what they cannot use (STORAGE_CONFIG)', async (t) => {
  const off = bindData(binding(t.testdir({})));
  t.teardown(off);
  t.throws(() => store(''), { code: 'STORAGE_CONFIG', message: 'store(basePath): a non-empty path' });
  t.throws(() => store(42 as never), { code: 'STORAGE_CONFIG' });
  t.throws(() => store('x', 'yes' as never), { code: 'STORAGE_CONFIG', message: /createDirs is true or false/ });
  t.throws(() => StorageFactory.create('ftp' as never), { code: 'STORAGE_CONFIG', message: 'a storage type is local or object, not "ftp"' });
  t.throws(() => StorageFactory.create('object', {}), { code: 'STORAGE_CONFIG' }, 'object storage needs a bucket');
  const made = StorageFactory.create('local', { base_path: 'archive' });
  t.teardown(() => made.close());
  t.not(StorageFactory.create('local', { base_path: 'archive' }), made, 'create makes a new one each time (its caller closes it)');
  t.equal(made.type, 'local');
});
