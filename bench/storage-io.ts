/**
 * Storage I/O benchmark: `store()` against the plainest code that moves the
 * same bytes, side by side in one run, on one file (256 MiB, written by a
 * stream; 64 MiB with --quick).
 *
 *   node --import tsx bench/storage-io.ts [--quick]
 *
 * 1. Local: `LocalStorage.upload(path)` and `download(src, destPath)` (both
 *    a kernel copy, `copyFile`, into a temporary file renamed into place),
 *    and `upload(readStream)` (a pipeline), against a plain
 *    `fs.createReadStream().pipe(fs.createWriteStream())` copy of the same
 *    file and against a bare `fs.copyFile`. The source is in the page cache
 *    after the first run: these are memory-and-syscall figures, not disk.
 * 2. S3: `ObjectStorage.upload(path)` (one PutObject streaming the file)
 *    against the bare SDK's PutObject of the same file (same client settings:
 *    WHEN_REQUIRED checksums, as without them s3rver stores aws-chunked
 *    framing), `upload(stream)` (multipart, 8 MiB parts one at a time)
 *    against the plainest multipart upload of the file with the SDK (8 MiB
 *    read into a buffer, sent, the next read), and
 *    `download(src, destPath)` against a bare GetObject piped to a file.
 *    s3rver runs in a child process (its own core where there are two), and
 *    does most of the work: an MD5 of every byte and a file write (and, for
 *    a multipart upload, the parts joined into one file at the end). These
 *    figures measure svc's overhead over the SDK, not S3's throughput.
 *
 * Each figure is the median of RUNS runs, the cases taking turns, each run
 * after a `sync` (so none pays for another's page-cache writeback); MB/s is 10^6 bytes per second.
 * Results: printed, and written to bench/results/storage-io.json.
 */
import { spawnSync } from 'node:child_process';
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, S3Client, UploadPartCommand, type CompletedPart } from '@aws-sdk/client-s3';
import { once } from 'node:events';
import { createReadStream, createWriteStream, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { copyFile, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { LocalStorage } from '../stores/local/index.ts';
import { ObjectStorage } from '../stores/s3/index.ts';
import { STORAGE_DEFAULTS } from '../actors/data/index.ts';
import { startS3 } from '../test/kit/index.ts';
import { machine, now, round } from './lib.ts';

const quick = process.argv.includes('--quick');
const SIZE = (quick ? 64 : 256) * 2 ** 20;
const RUNS = quick ? 1 : 3;

interface Figure {
  ms: number;
  mb_s: number;
}

interface Case {
  run: () => Promise<unknown>;
  /** Untimed, before each run (remove what the last run wrote). */
  before?: () => Promise<unknown>;
}

/**
 * Each case RUNS times, round-robin (A B C, A B C, …, so no case gains from
 * coming later), the median of each.
 */
async function compare<K extends string>(cases: Record<K, Case>): Promise<Record<K, Figure>> {
  const times = {} as Record<K, number[]>;
  for (let r = 0; r < RUNS; r++) {
    for (const [name, c] of Object.entries(cases) as [K, Case][]) {
      await c.before?.();
      // Dirty pages of the last run written back first: each run starts level, not throttled by another's writeback.
      spawnSync('sync');
      const t0 = now();
      await c.run();
      (times[name] ??= []).push((now() - t0) / 1e6);
    }
  }
  const out = {} as Record<K, Figure>;
  for (const [name, list] of Object.entries(times) as [K, number[]][]) {
    const ms = list.sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;
    out[name] = { ms: round(ms, 1), mb_s: round(SIZE / 1e6 / (ms / 1000), 1) };
  }
  return out;
}

async function writeSource(path: string): Promise<void> {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let sent = 0, i = 0; sent < SIZE; i++) {
      const chunk = Buffer.alloc(Math.min(2 ** 20, SIZE - sent), i % 251);
      chunk.writeDoubleLE(i, 0);
      sent += chunk.length;
      yield chunk;
    }
  }
  await pipeline(chunks(), createWriteStream(path));
}

/** A plain `.pipe()` copy, done when the destination is closed. */
async function pipeCopy(from: string, to: string): Promise<void> {
  const out = createWriteStream(to);
  createReadStream(from).pipe(out);
  await once(out, 'close');
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-storage-'));
  const teardowns: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
  const results: Record<string, unknown> = {};
  try {
    const source = join(work, 'source.bin');
    await writeSource(source);
    await pipeCopy(source, join(work, 'warm.bin')); // the source into the page cache

    // ---- 1. local ----------------------------------------------------------------------------
    process.stderr.write(`bench: local, ${SIZE / 2 ** 20} MiB x ${RUNS}\n`);
    const local = new LocalStorage({ basePath: join(work, 'storage'), createDirs: true });
    const out = join(work, 'out.bin');
    const fresh = () => rm(out, { force: true });
    const stored = (name: string) => () => rm(join(work, 'storage', name), { force: true });
    await local.upload(Buffer.alloc(1), 'warm.bin');
    const l = await compare({
      svc_upload_path: { run: () => local.upload(source, 'big.bin'), before: stored('big.bin') },
      svc_download_to_path: { run: () => local.download('big.bin', out), before: fresh },
      svc_upload_read_stream: { run: () => local.upload(createReadStream(source), 'big-stream.bin'), before: stored('big-stream.bin') },
      plain_pipe_copy: { run: () => pipeCopy(source, out), before: fresh },
      plain_copy_file: { run: () => copyFile(source, out), before: fresh },
    });
    results.local = {
      ...l,
      ratios: {
        svc_upload_path_vs_pipe: round(l.svc_upload_path.mb_s / l.plain_pipe_copy.mb_s, 2),
        svc_download_to_path_vs_pipe: round(l.svc_download_to_path.mb_s / l.plain_pipe_copy.mb_s, 2),
        svc_upload_read_stream_vs_pipe: round(l.svc_upload_read_stream.mb_s / l.plain_pipe_copy.mb_s, 2),
        svc_upload_path_vs_copy_file: round(l.svc_upload_path.mb_s / l.plain_copy_file.mb_s, 2),
      },
    };
    await rm(join(work, 'storage'), { recursive: true, force: true });
    await fresh();

    // ---- 2. S3 (s3rver) ----------------------------------------------------------------------
    process.stderr.write(`bench: S3 (s3rver in a child process), ${SIZE / 2 ** 20} MiB x ${RUNS}\n`);
    const s3 = await startS3(owner, { child: true });
    const config = { ...STORAGE_DEFAULTS, type: 'object' as const, bucket: s3.bucket, endpoint_url: s3.endpoint, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey };
    const object = new ObjectStorage(config);
    owner.teardown(() => object.close());
    const bare = new S3Client({
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    owner.teardown(() => bare.destroy());
    const barePut = () => bare.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'bare.bin', Body: createReadStream(source), ContentLength: SIZE }));
    await barePut(); // warm-up: sockets, credentials, code
    await object.upload(Buffer.alloc(1024), 'warm.bin');
    // The plainest multipart upload: 8 MiB read from the file into a buffer, sent, the next one read.
    const bareMultipart = async () => {
      const Key = 'bare-multipart.bin';
      const { UploadId } = await bare.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
      const parts: CompletedPart[] = [];
      const file = await open(source);
      try {
        for (let PartNumber = 1; ; PartNumber++) {
          const buffer = Buffer.allocUnsafe(8 * 2 ** 20);
          const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
          if (bytesRead === 0) break;
          const sent = await bare.send(new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId, PartNumber, Body: buffer.subarray(0, bytesRead), ContentLength: bytesRead }));
          parts.push({ ETag: sent.ETag, PartNumber });
        }
      } finally {
        await file.close();
      }
      await bare.send(new CompleteMultipartUploadCommand({ Bucket: s3.bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
    };
    const s = await compare({
      svc_upload_path: { run: () => object.upload(source, 'svc.bin') },
      sdk_put_object: { run: barePut },
      svc_upload_read_stream_multipart: { run: () => object.upload(createReadStream(source), 'svc-stream.bin') },
      sdk_multipart_8mib_parts: { run: bareMultipart },
      svc_download_to_path: { run: () => object.download('svc.bin', out), before: fresh },
      sdk_get_object_to_file: {
        run: async () => {
          const got = await bare.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'bare.bin' }));
          await pipeline(got.Body as Readable, createWriteStream(out));
        },
        before: fresh,
      },
    });
    results.s3 = {
      ...s,
      ratios: {
        svc_upload_path_vs_sdk_put: round(s.svc_upload_path.mb_s / s.sdk_put_object.mb_s, 2),
        svc_multipart_stream_vs_sdk_multipart: round(s.svc_upload_read_stream_multipart.mb_s / s.sdk_multipart_8mib_parts.mb_s, 2),
        sdk_multipart_vs_sdk_put: round(s.sdk_multipart_8mib_parts.mb_s / s.sdk_put_object.mb_s, 2),
        svc_download_vs_sdk_get: round(s.svc_download_to_path.mb_s / s.sdk_get_object_to_file.mb_s, 2),
      },
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    await rm(work, { recursive: true, force: true });
  }

  const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, { version?: string }> };
  const versions: Record<string, string | undefined> = {};
  for (const name of ['@aws-sdk/client-s3', '@aws-sdk/s3-request-presigner', 's3rver', 'tsx']) versions[name] = lock.packages[`node_modules/${name}`]?.version;
  const m = machine();
  const report = {
    bench: 'storage-io',
    at: new Date().toISOString(),
    quick,
    machine: { cpus: m.cores, cpu: m.cpu, memory_gib: m.memory_gib, node: m.node, platform: m.platform },
    versions,
    settings: { file_mib: SIZE / 2 ** 20, runs: RUNS, statistic: 'median', part_mib: 8 },
    results,
  };
  const dir = new URL('./results/', import.meta.url).pathname;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'storage-io.json');
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  print(results);
  console.log(`written ${file}`);
}

/** One table per section: time and MB/s side by side, then the ratios. */
function print(results: Record<string, unknown>): void {
  for (const [section, title] of [
    ['local', `1. local, ${SIZE / 2 ** 20} MiB (median of ${RUNS})`],
    ['s3', `2. S3 API (s3rver), ${SIZE / 2 ** 20} MiB (median of ${RUNS})`],
  ] as const) {
    const { ratios, ...figures } = results[section] as Record<string, Figure> & { ratios: Record<string, number> };
    console.log(`\n${title}`);
    console.table(figures);
    console.table(ratios);
  }
}

await main();
