// ObjectStorage on a real S3-API server (s3rver): the shared suite, then what only a bucket has (keys under a prefix, pre-signed URLs, multipart, metadata).
import t from 'tap';
import { HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectStorage } from '../../../stores/s3/index.ts';
import { STORAGE_DEFAULTS, type StorageConfig } from '../../../actors/data/index.ts';
import { collect, sha256, storageSuite } from '../../conformance/storage.ts';
import { uploadFolder } from '../../../transports/http/upload-stream.ts';
import { startS3 } from '../../kit/index.ts';

const MIB = 2 ** 20;

const s3 = await startS3(t);
const raw = new S3Client({
  region: 'us-east-1',
  endpoint: s3.endpoint,
  forcePathStyle: true,
  credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});
t.teardown(() => raw.destroy());

/** Every key of the bucket (read with a client of the test's own). */
async function allKeys(): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await raw.send(new ListObjectsV2Command({ Bucket: s3.bucket, ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of page.Contents ?? []) keys.push(o.Key as string);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys.sort();
}

function config(overrides: Partial<StorageConfig> = {}): StorageConfig {
  return {
    ...STORAGE_DEFAULTS,
    type: 'object',
    bucket: s3.bucket,
    endpoint_url: s3.endpoint,
    access_key_id: s3.accessKeyId,
    secret_access_key: s3.secretAccessKey,
    ...overrides,
  };
}

let run = 0;
/** A storage under a prefix of its own (tests share the bucket, never keys). */
function fresh(t: { teardown(fn: () => unknown): void }, overrides: Partial<StorageConfig> = {}, options = {}): ObjectStorage {
  const storage = new ObjectStorage(config({ prefix: `run-${++run}/`, ...overrides }), options);
  t.teardown(() => storage.close());
  return storage;
}

/** `n` bytes from a generator, in chunks of 64 KiB, never whole in memory; and their sha256. */
function generated(n: number): { stream: AsyncGenerator<Uint8Array>; digest: Promise<string> } {
  const hash = createHash('sha256');
  let resolveDigest: (d: string) => void = () => undefined;
  const digest = new Promise<string>((r) => (resolveDigest = r));
  async function* gen(): AsyncGenerator<Uint8Array> {
    let left = n;
    let i = 0;
    while (left > 0) {
      const chunk = Buffer.alloc(Math.min(64 * 1024, left), i++ % 256);
      if (chunk.length >= 4) chunk.writeUInt32LE(i, 0);
      hash.update(chunk);
      left -= chunk.length;
      yield chunk;
    }
    resolveDigest(hash.digest('hex'));
  }
  return { stream: gen(), digest };
}

async function fileSha(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

t.test('ObjectStorage conformance (s3rver)', async (t) => {
  storageSuite(t, async () => ({ storage: new ObjectStorage(config({ prefix: `suite-${++run}` })), snapshot: allKeys }));
});

t.test('keys: <prefix>/<base_path>/<path>; the default base_path adds nothing; listFiles strips the prefix', async (t) => {
  const cases: [Partial<StorageConfig>, string][] = [
    [{ prefix: 'app1/' }, 'app1/k/a.txt'],
    [{ prefix: 'app2' }, 'app2/k/a.txt'],
    [{ prefix: 'app3', base_path: './avatars' }, 'app3/avatars/k/a.txt'],
    [{ prefix: 'app4', base_path: 'storage' }, 'app4/storage/k/a.txt'], // only the default, as written, adds nothing
    [{ prefix: '', base_path: './storage' }, 'k/a.txt'],
  ];
  for (const [overrides, key] of cases) {
    const storage = fresh(t, overrides);
    t.equal(await storage.upload(Buffer.from(key), 'k/a.txt'), 'k/a.txt');
    const head = await raw.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
    t.equal(head.ContentLength, key.length, `${JSON.stringify(overrides)} → ${key}`);
    t.same(await collect(storage.listFiles('k/', true)), ['k/a.txt'], 'listed relative to the prefix');
    t.ok(await storage.delete('k/a.txt'));
  }
  for (const bad of [{ prefix: '../up' }, { prefix: '/abs' }, { base_path: '/srv/storage' }, { base_path: 'a/../..' }]) {
    t.throws(() => new ObjectStorage(config(bad)), { code: 'STORAGE_CONFIG' }, JSON.stringify(bad));
  }
  t.throws(() => new ObjectStorage(config({ bucket: '' })), { code: 'STORAGE_CONFIG' }, 'no bucket');
});

t.test('getUrl: a pre-signed GET that plain fetch can use, until it expires (then 403)', async (t) => {
  const storage = fresh(t);
  await storage.upload(Buffer.from('signed bytes'), 'dir/a b+ü.txt');
  const url = await storage.getUrl('dir/a b+ü.txt');
  t.match(url, /X-Amz-Signature=/);
  t.match(url, /X-Amz-Expires=3600/);
  const ok = await fetch(url);
  t.equal(ok.status, 200);
  t.equal(await ok.text(), 'signed bytes');

  const short = await storage.getUrl('dir/a b+ü.txt', 1);
  const signedAt = /X-Amz-Date=(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/.exec(short);
  t.ok(signedAt, 'the URL says when it was signed');
  const [, y, mo, d, h, mi, s] = (signedAt as RegExpExecArray).map(Number) as number[];
  const expiry = Date.UTC(y as number, (mo as number) - 1, d, h, mi, s) + 1000;
  // The condition is the clock itself: wait until a second past the expiry (at most ~3 s).
  while (Date.now() < expiry + 1000) await sleep(50);
  const late = await fetch(short);
  t.equal(late.status, 403, 'expired');
  t.match(await late.text(), /Request has expired/);

  await t.rejects(storage.getUrl('a.txt', 0), { code: 'INVALID_ARGUMENT' });
  await t.rejects(storage.getUrl('a.txt', 8 * 24 * 3600), { code: 'INVALID_ARGUMENT' });
});

t.test('public_read: the permanent URL (path style under endpoint_url, virtual-hosted on AWS)', async (t) => {
  const storage = fresh(t, { public_read: true, prefix: 'pub' });
  await storage.upload(Buffer.from('public bytes'), 'img/a b.png');
  const url = await storage.getUrl('img/a b.png', 5);
  t.equal(url, `${s3.endpoint}/${s3.bucket}/pub/img/a%20b.png`);
  // s3rver does not enforce ACLs or policies: an anonymous GET is served, as a public bucket would.
  const res = await fetch(url);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'public bytes');
  const aws = new ObjectStorage({ ...STORAGE_DEFAULTS, type: 'object', bucket: 'media', region: 'eu-west-1', prefix: 'app1', public_read: true });
  t.teardown(() => aws.close());
  t.equal(await aws.getUrl('a/ü.txt'), 'https://media.s3.eu-west-1.amazonaws.com/app1/a/%C3%BC.txt', 'no network needed');
});

t.test('getUploadUrl: a pre-signed PUT, then the object downloads', async (t) => {
  const storage = fresh(t);
  const url = await storage.getUploadUrl('uploads/from-browser.bin', 60);
  t.match(url, /X-Amz-Expires=60/);
  const body = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 256));
  const res = await fetch(url, { method: 'PUT', body });
  t.equal(res.status, 200);
  t.equal(sha256(await storage.download('uploads/from-browser.bin')), sha256(body));
  await t.rejects(storage.getUploadUrl('../x'), { code: 'INVALID_PATH' });
});

t.test('a stream of unknown length larger than a part goes up in parts, byte-exact, with no aws-chunked framing', async (t) => {
  const storage = fresh(t);
  const size = 20 * MIB + 12345;
  const { stream, digest } = generated(size);
  await storage.upload(stream, 'big/stream.bin', { source: 'generator' });
  const expected = await digest;
  const meta = await storage.getMetadata('big/stream.bin');
  t.equal(meta.size, size, 'the exact size');
  t.same(meta.metadata, { source: 'generator' }, 'metadata set on a multipart upload');
  t.equal(sha256(await storage.download('big/stream.bin')), expected, 'downloads byte-exact');
  const stored = s3.objectFile(`${storage.keyPrefix}big/stream.bin`);
  t.equal(await fileSha(stored), expected, 'the stored object is the bytes themselves (no aws-chunked framing)');
  t.notMatch((await readFile(stored)).subarray(0, 64).toString('latin1'), /chunk-signature|^[0-9a-f]+;/);

  // Exactly two parts: the last part is full, and nothing empty is sent after it.
  const even = generated(16 * MIB);
  await storage.upload(even.stream, 'big/even.bin');
  t.equal((await storage.getMetadata('big/even.bin')).size, 16 * MIB);
  t.equal(sha256(await storage.download('big/even.bin')), await even.digest);
});

t.test('a file above the multipart threshold goes up as ranged parts of itself', async (t) => {
  const storage = fresh(t, {}, { multipartAbove: 10 * MIB });
  const dir = await mkdtemp(join(tmpdir(), 'svc-object-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // Where the HTTP front streams an upload: only such a file is read from an uploaded file's path.
  const file = join(uploadFolder(), randomBytes(16).toString('hex'));
  t.teardown(() => rm(file, { force: true }));
  const size = 17 * MIB + 3;
  const { stream, digest } = generated(size);
  await pipeline(stream, createWriteStream(file));
  await storage.upload({ filename: 'big.bin', mimetype: 'application/x-test', size, path: file }, 'big/file.bin');
  const meta = await storage.getMetadata('big/file.bin');
  t.match(meta, { size, content_type: 'application/x-test' });
  const out = join(dir, 'out.bin');
  await storage.download('big/file.bin', out);
  t.equal(await fileSha(out), await digest);
});

t.test('metadata and content type round-trip, and survive copy and move', async (t) => {
  const storage = fresh(t);
  await storage.upload({ filename: 'p.png', mimetype: 'image/png', size: 3, data: Buffer.from([1, 2, 3]) }, 'p.png', { owner: 'u1', 'x-kind': 'avatar' });
  const m = await storage.getMetadata('p.png');
  t.match(m, { name: 'p.png', size: 3, is_dir: false, content_type: 'image/png', metadata: { owner: 'u1', 'x-kind': 'avatar' } });
  t.equal(m.created, m.modified, 'S3 has no creation time');
  t.ok(await storage.copy('p.png', 'c/p.png'));
  t.match(await storage.getMetadata('c/p.png'), { content_type: 'image/png', metadata: { owner: 'u1' } });
  t.ok(await storage.move('c/p.png', 'm/p.png'));
  t.match(await storage.getMetadata('m/p.png'), { content_type: 'image/png', metadata: { owner: 'u1' } });
  await t.rejects(storage.upload(Buffer.from('x'), 'bad.txt', { 'bad name': 'x' }), { code: 'INVALID_ARGUMENT' });
  await t.rejects(storage.upload(Buffer.from('x'), 'bad.txt', { name: 'résumé' }), { code: 'INVALID_ARGUMENT' });
  t.notOk(await storage.exists('bad.txt'));
});

t.test('a missing bucket is STORAGE_CONFIG; an unreachable store is STORAGE_UNAVAILABLE with the cause, and no credential in the message', async (t) => {
  const noBucket = fresh(t, { bucket: 'no-such-bucket' });
  await t.rejects(noBucket.upload(Buffer.from('x'), 'a.txt'), { code: 'STORAGE_CONFIG' });
  await t.rejects(noBucket.download('a.txt'), { code: 'STORAGE_CONFIG' });

  const down = fresh(t, { endpoint_url: 'http://127.0.0.1:1', secret_access_key: 'SECRET-DO-NOT-LEAK', access_key_id: 'KEY-DO-NOT-LEAK' });
  for (const [name, call] of [
    ['upload', () => down.upload(Buffer.from('x'), 'a.txt')],
    ['download', () => down.download('a.txt')],
    ['exists', () => down.exists('a.txt')],
    ['listFiles', () => collect(down.listFiles())],
  ] as const) {
    const err = (await (call() as Promise<unknown>).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: string; status?: number; message: string; cause?: unknown } | undefined;
    t.match(err, { code: 'STORAGE_UNAVAILABLE', status: 503 }, name);
    t.ok(err?.cause, `${name}: the cause is kept`);
    t.notMatch(`${err?.message} ${String(err)}`, /DO-NOT-LEAK/, `${name}: no credential in the message`);
  }
});

t.test('listFiles pages through ListObjectsV2 (continuation tokens), in order, recursive or not', async (t) => {
  // s3rver's continuation tokens need OpenSSL's legacy provider: a server in a child process started with it.
  const paged = await startS3(t, { child: true });
  const storage = new ObjectStorage(
    { ...config(), endpoint_url: paged.endpoint, prefix: 'paged' },
    // Pages of 100: s3rver reads every listed key's files at once.
    { listPageSize: 100 },
  );
  t.teardown(() => storage.close());
  const names = Array.from({ length: 250 }, (_, i) => `many/${String(i).padStart(4, '0')}.txt`);
  for (let i = 0; i < names.length; i += 25) await Promise.all(names.slice(i, i + 25).map((n) => storage.upload(Buffer.from(n), n)));
  await storage.upload(Buffer.from('deeper'), 'many/sub/x.txt');
  t.same(await collect(storage.listFiles('many/')), names);
  t.same(await collect(storage.listFiles('many/', true)), [...names, 'many/sub/x.txt']);
});
