// The conformance suite every storage backend passes (a local folder, an S3 bucket): same calls, same answers.
import type { Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { uploadFolder } from '../../transports/http/upload-stream.ts';
import { mkdtemp, readFile, rm, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import type { Storage, UploadedFile } from '../../actors/data/index.ts';

/** A backend under test: the storage, and a listing of everything it holds, read around it (a folder tree, every key of the bucket). */
export interface Backend {
  storage: Storage;
  snapshot(): Promise<string[]>;
}

/** Paths that leave the storage, each in its own way. */
export const TRAVERSALS = ['../x', 'a/../../x', '/etc/passwd', 'a\u0000b', '..', 'C:\\x', 'a\\..\\b', 'C:x', '\\\\server\\share', 'a/./../../x'];

export async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const x of it) out.push(x);
  return out;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A Writable that keeps what it is given. */
export function sink(): Writable & { bytes(): Buffer } {
  const chunks: Buffer[] = [];
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk);
      cb();
    },
  }) as Writable & { bytes(): Buffer };
  w.bytes = () => Buffer.concat(chunks);
  return w;
}

/** A stream that yields `good` bytes, then fails with `error`. */
export function failingStream(good: number, error: Error): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= good) return this.destroy(error);
      const n = Math.min(64 * 1024, good - sent);
      sent += n;
      this.push(Buffer.alloc(n, 7));
    },
  });
}

/**
 * @param make a fresh, empty backend per test (closed by the suite)
 */
export function storageSuite(t: Test, make: () => Promise<Backend>): void {
  const open = async (t: Test): Promise<Backend> => {
    const b = await make();
    t.teardown(() => b.storage.close());
    return b;
  };
  const scratch = async (t: Test): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-storage-src-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    return dir;
  };

  t.test('upload takes every kind of source and answers the normalised path', async (t) => {
    const { storage } = await open(t);
    const dir = await scratch(t);
    const file = join(dir, 'source.bin');
    await writeFile(file, 'from a file');
    // Where the HTTP front streams an upload (only such a file is read from an uploaded file's path).
    const bigFile = join(uploadFolder(), randomBytes(16).toString('hex'));
    await writeFile(bigFile, 'from an uploaded temp file');
    t.teardown(() => rm(bigFile, { force: true }));
    async function* generator(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('from ');
      yield new TextEncoder().encode('a generator');
    }
    const sources: [string, Parameters<Storage['upload']>[0], string][] = [
      ['path', file, 'from a file'],
      ['Buffer', Buffer.from('from a Buffer'), 'from a Buffer'],
      ['Uint8Array', new TextEncoder().encode('from a Uint8Array'), 'from a Uint8Array'],
      ['Readable', Readable.from([Buffer.from('from a '), Buffer.from('Readable')]), 'from a Readable'],
      ['PassThrough', new PassThrough().end('from a PassThrough'), 'from a PassThrough'],
      ['async generator', generator(), 'from a generator'],
      ['UploadedFile data', { filename: 'd.txt', mimetype: 'text/plain', size: 9, data: Buffer.from('from data') } satisfies UploadedFile, 'from data'],
      ['UploadedFile path', { filename: 'p.txt', mimetype: 'text/plain', size: 26, path: bigFile } satisfies UploadedFile, 'from an uploaded temp file'],
      ['empty bytes', new Uint8Array(0), ''],
    ];
    const forged: UploadedFile = { filename: 'x', mimetype: 'text/plain', size: 1, path: file };
    await t.rejects(storage.upload(forged, 'forged.txt'), { code: 'INVALID_ARGUMENT' }, "an upload-shaped object naming one of the server's files is refused (it can come from a request's JSON)");
    await t.rejects(storage.upload({ ...forged, path: '/etc/passwd' }, 'forged.txt'), { code: 'INVALID_ARGUMENT' });
    t.equal(await storage.exists('forged.txt'), false);
    for (const [i, [kind, source, content]] of sources.entries()) {
      const stored = await storage.upload(source, `./in//${i}.txt`);
      t.equal(stored, `in/${i}.txt`, `${kind}: answers the normalised path`);
      t.equal((await storage.download(stored)).toString(), content, `${kind}: downloads back byte for byte`);
    }
    t.same(await collect(storage.listFiles('in/')), sources.map((_, i) => `in/${i}.txt`).sort());
    // Replacing a file.
    await storage.upload(Buffer.from('second'), 'in/0.txt');
    t.equal((await storage.download('in/0.txt')).toString(), 'second', 'an upload replaces what was there');
    // A source that is not there.
    await t.rejects(storage.upload(join(dir, 'missing'), 'x.txt'), { code: 'FILE_NOT_FOUND' }, 'a missing source file');
    t.notOk(await storage.exists('x.txt'));
  });

  t.test('download: to bytes, to a file path, to a Writable; a missing file is FILE_NOT_FOUND in every form', async (t) => {
    const { storage } = await open(t);
    const dir = await scratch(t);
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
    await storage.upload(bytes, 'data/blob.bin');
    const got = await storage.download('data/blob.bin');
    t.ok(Buffer.isBuffer(got), 'a Buffer');
    t.equal(sha256(got), sha256(bytes));
    const target = join(dir, 'out.bin');
    t.equal(await storage.download('data/blob.bin', target), null);
    t.equal(sha256(await readFile(target)), sha256(bytes), 'written to the path');
    const w = sink();
    t.equal(await storage.download('data/blob.bin', w), null);
    t.equal(sha256(w.bytes()), sha256(bytes), 'streamed into the Writable');
    t.ok(w.writableFinished, 'the Writable is ended');

    await t.rejects(storage.download('data/nope.bin'), { code: 'FILE_NOT_FOUND', status: 404 });
    await t.rejects(storage.download('data/nope.bin', join(dir, 'never.bin')), { code: 'FILE_NOT_FOUND' });
    await t.rejects(storage.download('data/nope.bin', sink()), { code: 'FILE_NOT_FOUND' });
    t.same((await readdir(dir)).sort(), ['out.bin'], 'nothing written for a missing source');
  });

  t.test('listFiles: a string prefix, one level or everything below, relative paths in byte order', async (t) => {
    const { storage } = await open(t);
    const files = ['a.txt', 'b.txt', 'docs/readme.md', 'docs/report/x.txt', 'docs/report/y/z.txt', 'docs/r.txt', 'docsx.txt', 'other/q.txt', 'a-b/c.txt'];
    for (const f of files) await storage.upload(Buffer.from(f), f);
    const cases: [string, boolean, string[]][] = [
      ['', false, ['a.txt', 'b.txt', 'docsx.txt']],
      ['', true, ['a-b/c.txt', 'a.txt', 'b.txt', 'docs/r.txt', 'docs/readme.md', 'docs/report/x.txt', 'docs/report/y/z.txt', 'docsx.txt', 'other/q.txt']],
      ['docs/', false, ['docs/r.txt', 'docs/readme.md']],
      ['docs/', true, ['docs/r.txt', 'docs/readme.md', 'docs/report/x.txt', 'docs/report/y/z.txt']],
      ['./docs/', false, ['docs/r.txt', 'docs/readme.md']],
      ['docs//', false, ['docs/r.txt', 'docs/readme.md']],
      ['docs/re', false, ['docs/readme.md']],
      ['docs/re', true, ['docs/readme.md', 'docs/report/x.txt', 'docs/report/y/z.txt']],
      ['docs/report', false, []],
      ['docs/report/', false, ['docs/report/x.txt']],
      ['docs', false, ['docsx.txt']],
      ['docs', true, ['docs/r.txt', 'docs/readme.md', 'docs/report/x.txt', 'docs/report/y/z.txt', 'docsx.txt']],
      ['a', false, ['a.txt']],
      ['a', true, ['a-b/c.txt', 'a.txt']],
      ['nothing/', true, []],
      ['nothing', false, []],
      ['docs/report/y/z.txt', false, ['docs/report/y/z.txt']],
    ];
    for (const [prefix, recursive, expected] of cases) {
      t.same(await collect(storage.listFiles(prefix, recursive)), expected, `listFiles(${JSON.stringify(prefix)}, ${recursive})`);
    }
    t.same(await collect(storage.listFiles()), ['a.txt', 'b.txt', 'docsx.txt'], 'defaults: everything at the top, not recursive');
    for (const p of await collect(storage.listFiles('', true))) t.notMatch(p, /^(\.\/|\/)/, `${p} is relative`);
  });

  t.test('getMetadata: name, size, ISO times, is_dir; FILE_NOT_FOUND', async (t) => {
    const { storage } = await open(t);
    const before = Date.now();
    await storage.upload(Buffer.from('twelve bytes'), 'm/n/file.txt');
    const m = await storage.getMetadata('m/n/file.txt');
    t.match(m, { name: 'file.txt', size: 12, is_dir: false });
    for (const k of ['modified', 'created'] as const) {
      t.equal(new Date(m[k]).toISOString(), m[k], `${k} is ISO 8601`);
      t.ok(Math.abs(Date.parse(m[k]) - before) < 60_000, `${k} is about now`);
    }
    await t.rejects(storage.getMetadata('m/n/none.txt'), { code: 'FILE_NOT_FOUND' });
  });

  t.test('copy and move: true, false when the source is missing; folders made; copy keeps the source, move removes it', async (t) => {
    const { storage } = await open(t);
    await storage.upload(Buffer.from('original'), 'src/a.txt');
    t.equal(await storage.copy('src/a.txt', 'deep/er/copy.txt'), true);
    t.equal((await storage.download('deep/er/copy.txt')).toString(), 'original');
    t.ok(await storage.exists('src/a.txt'), 'copy keeps the source');
    t.equal(await storage.copy('src/none.txt', 'x.txt'), false);
    t.notOk(await storage.exists('x.txt'));
    t.equal(await storage.copy('src/a.txt', 'src/a.txt'), true, 'a copy onto itself');
    t.equal((await storage.download('src/a.txt')).toString(), 'original');

    await storage.upload(Buffer.from('replaced'), 'deep/er/copy.txt');
    t.equal(await storage.copy('src/a.txt', 'deep/er/copy.txt'), true, 'a copy replaces the destination');
    t.equal((await storage.download('deep/er/copy.txt')).toString(), 'original');

    t.equal(await storage.move('src/a.txt', 'moved/b.txt'), true);
    t.notOk(await storage.exists('src/a.txt'), 'move removes the source');
    t.equal((await storage.download('moved/b.txt')).toString(), 'original');
    t.equal(await storage.move('src/a.txt', 'moved/c.txt'), false);
    t.notOk(await storage.exists('moved/c.txt'));
    t.equal(await storage.move('moved/b.txt', './moved//b.txt'), true, 'a move onto itself');
    t.ok(await storage.exists('moved/b.txt'));
  });

  t.test('delete and exists', async (t) => {
    const { storage } = await open(t);
    await storage.upload(Buffer.from('x'), 'd/e.txt');
    t.equal(await storage.exists('d/e.txt'), true);
    t.equal(await storage.exists('./d//e.txt'), true, 'the same file by a normalised path');
    t.equal(await storage.exists('d'), false, 'a folder is not a file');
    t.equal(await storage.exists('d/none'), false);
    t.equal(await storage.delete('d/e.txt'), true);
    t.equal(await storage.exists('d/e.txt'), false);
    t.equal(await storage.delete('d/e.txt'), false, 'deleting what is not there');
    t.same(await collect(storage.listFiles('', true)), []);
  });

  t.test('paths that leave the storage are INVALID_PATH on every method, and nothing is written', async (t) => {
    const { storage, snapshot } = await open(t);
    const dir = await scratch(t);
    await storage.upload(Buffer.from('keep'), 'keep.txt');
    const before = await snapshot();
    const methods: [string, (p: string) => Promise<unknown>][] = [
      ['upload', (p) => storage.upload(Buffer.from('evil'), p)],
      ['upload of a stream', (p) => storage.upload(Readable.from([Buffer.from('evil')]), p)],
      ['download', (p) => storage.download(p)],
      ['download to a path', (p) => storage.download(p, join(dir, 'out'))],
      ['delete', (p) => storage.delete(p)],
      ['exists', (p) => storage.exists(p)],
      ['getMetadata', (p) => storage.getMetadata(p)],
      ['copy from', (p) => storage.copy(p, 'copied.txt')],
      ['copy to', (p) => storage.copy('keep.txt', p)],
      ['move from', (p) => storage.move(p, 'moved.txt')],
      ['move to', (p) => storage.move('keep.txt', p)],
      ['getUrl', (p) => storage.getUrl(p)],
      ['getUploadUrl', (p) => storage.getUploadUrl(p)],
      ['listFiles', (p) => collect(storage.listFiles(p, true))],
    ];
    for (const path of TRAVERSALS) {
      for (const [name, call] of methods) await t.rejects(call(path), { code: 'INVALID_PATH', status: 400 }, `${name}(${JSON.stringify(path)})`);
    }
    for (const [name, call] of methods) {
      if (name === 'listFiles') continue;
      for (const empty of ['', '.', './', '//']) await t.rejects(call(empty), { code: 'INVALID_PATH' }, `${name}(${JSON.stringify(empty)}) names no file`);
    }
    t.same(await snapshot(), before, 'the storage (and around it) is unchanged');
    t.same(await readdir(dir), [], 'no download written');
    t.equal((await storage.download('keep.txt')).toString(), 'keep', 'keep.txt is untouched');
  });

  t.test('an upload whose stream fails leaves nothing behind and rejects with the stream’s own error', async (t) => {
    const { storage, snapshot } = await open(t);
    await storage.upload(Buffer.from('old'), 'f/over.txt');
    const before = await snapshot();
    for (const [label, good] of [
      ['at once', 0],
      ['after 200 KiB', 200 * 1024],
      ['after more than one part (9 MiB)', 9 * 2 ** 20],
    ] as const) {
      const boom = new Error(`boom ${label}`);
      await t.rejects(storage.upload(failingStream(good, boom), 'f/new.bin'), boom, `${label}: the source's error`);
      t.notOk(await storage.exists('f/new.bin'), `${label}: no file`);
      const boom2 = new Error(`boom over ${label}`);
      await t.rejects(storage.upload(failingStream(good, boom2), 'f/over.txt'), boom2);
      t.equal((await storage.download('f/over.txt')).toString(), 'old', `${label}: the file it would have replaced is intact`);
    }
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield Buffer.alloc(1000, 1);
      throw new Error('generator failed');
    }
    await t.rejects(storage.upload(failing(), 'f/gen.bin'), { message: 'generator failed' });
    t.same(await snapshot(), before, 'nothing left behind (no partial or temporary file)');
  });

  t.test('getUrl answers a URL for a checked path', async (t) => {
    const { storage } = await open(t);
    await storage.upload(Buffer.from('u'), 'u/v.txt');
    const url = new URL(await storage.getUrl('u/v.txt'));
    t.ok(url.pathname.endsWith('/u/v.txt'), url.href);
  });
}
