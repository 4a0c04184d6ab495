// createStorage: configuration checked at boot (STORAGE_CONFIG), then the backend it names.
import t from 'tap';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStorage, STORAGE_DEFAULTS, STORAGE_ERRORS, checkStorageConfig } from '../../../actors/data/index.ts';
import { LocalStorage } from '../../../stores/local/index.ts';
import { ObjectStorage } from '../../../stores/s3/index.ts';

t.test('the defaults are the seed’s: local ./storage, create_dirs on', async (t) => {
  t.match(STORAGE_DEFAULTS, { type: 'local', base_path: './storage', create_dirs: true, bucket: '', region: 'us-east-1', prefix: '', endpoint_url: '', public_read: false, access_key_id: '', secret_access_key: '' });
  t.ok(Object.isFrozen(STORAGE_DEFAULTS));
});

t.test('local: base_path resolved against the project folder, made on first use', async (t) => {
  const project = await mkdtemp(join(tmpdir(), 'svc-project-'));
  t.teardown(() => rm(project, { recursive: true, force: true }));
  const storage = createStorage(STORAGE_DEFAULTS, project);
  t.ok(storage instanceof LocalStorage);
  t.equal(storage.type, 'local');
  t.equal((storage as LocalStorage).basePath, join(project, 'storage'));
  await storage.upload(Buffer.from('x'), 'a.txt');
  t.ok((await stat(join(project, 'storage', 'a.txt'))).isFile());
  const other = createStorage({ base_path: './uploads' }, project);
  t.equal((other as LocalStorage).basePath, join(project, 'uploads'), 'a partial config over the defaults');
  t.equal((createStorage({ base_path: '/srv/data' }, project) as LocalStorage).basePath, '/srv/data', 'an absolute base_path is kept');
});

t.test('object: an ObjectStorage with the key prefix of prefix and base_path', async (t) => {
  const storage = createStorage({ type: 'object', bucket: 'media', prefix: 'app1', endpoint_url: 'http://127.0.0.1:9' }, '/srv/app');
  t.teardown(() => storage.close());
  t.ok(storage instanceof ObjectStorage);
  t.equal(storage.type, 'object');
  t.equal((storage as ObjectStorage).keyPrefix, 'app1/');
});

t.test('a configuration that cannot work is STORAGE_CONFIG at once', async (t) => {
  const bad: [string, Record<string, unknown>][] = [
    ['an unknown type', { type: 'ftp' }],
    ['object without a bucket', { type: 'object' }],
    ['object with a blank bucket', { type: 'object', bucket: '  ' }],
    ['an endpoint that is not a URL', { type: 'object', bucket: 'b', endpoint_url: 'not a url' }],
    ['an endpoint that is not http(s)', { type: 'object', bucket: 'b', endpoint_url: 'ftp://example.com' }],
    ['local with an empty base_path', { type: 'local', base_path: '' }],
    ['object with a prefix leaving the bucket root', { type: 'object', bucket: 'b', prefix: '../x' }],
  ];
  for (const [name, config] of bad) {
    t.throws(() => createStorage(config, '/srv/app'), { code: 'STORAGE_CONFIG', status: STORAGE_ERRORS.STORAGE_CONFIG.status }, name);
  }
  t.throws(() => checkStorageConfig({ type: 'object', bucket: 'b', endpoint_url: 'ftp://user:SECRET@example.com' }), { message: /^(?!.*SECRET)/ }, 'the endpoint is not echoed');
});
