// Large files stream: a 256 MiB upload and download, through each backend, grow a process's RSS far less than the file.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STORAGE_DEFAULTS } from '../../../actors/data/index.ts';
import { startS3 } from '../../kit/index.ts';

const SIZE = 256 * 2 ** 20;
/** Well under the file size: a whole-file buffer anywhere would show as 256 MiB or more. */
const LIMIT_MIB = 96;

interface Result {
  baseline_mib: number;
  peak_mib: number;
  growth_mib: number;
  max_rss_growth_mib: number;
  file_roundtrip: boolean;
  stream_roundtrip: boolean;
  steps_ms: Record<string, number>;
}

/** Run storage-memory-child.ts with `job`; its one JSON line. */
async function measure(job: Record<string, unknown>): Promise<Result> {
  const root = new URL('../../..', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--expose-gc', '--no-warnings', '--import', 'tsx', 'test/actors/data/storage-memory-child.ts', JSON.stringify(job)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`memory-child exited ${code}:\n${err}`);
  return JSON.parse(out.trim().split('\n').pop() as string) as Result;
}

async function workDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-storage-memory-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function check(t: Test, r: Result): void {
  t.comment(JSON.stringify(r));
  t.ok(r.file_roundtrip, 'the file came back byte for byte');
  t.ok(r.stream_roundtrip, 'the stream came back byte for byte');
  t.ok(r.growth_mib < LIMIT_MIB, `peak RSS grew ${r.growth_mib.toFixed(1)} MiB (sampled) for 256 MiB transfers, under ${LIMIT_MIB}`);
  t.ok(r.max_rss_growth_mib < LIMIT_MIB, `the kernel's high-water mark agrees (${r.max_rss_growth_mib.toFixed(1)} MiB)`);
}


t.test('LocalStorage: 256 MiB up (file and stream) and down (path and Writable) in bounded memory', async (t) => {
  const work = await workDir(t);
  check(t, await measure({ work, size: SIZE, local: { basePath: join(work, 'storage') } }));
});

t.test('ObjectStorage: 256 MiB up (PutObject from a file, multipart from a stream) and down in bounded memory', async (t) => {
  const s3 = await startS3(t, { child: true });
  const work = await workDir(t);
  const object = { ...STORAGE_DEFAULTS, type: 'object', bucket: s3.bucket, endpoint_url: s3.endpoint, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, prefix: 'memory' };
  check(t, await measure({ work, size: SIZE, object }));
});
