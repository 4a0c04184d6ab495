/**
 * A real S3-API server for the storage tests and benchmarks: s3rver on a free loopback port,
 * over a temporary folder, with one bucket; stopped and removed when the test
 * ends. It checks signatures and pre-signed expiry.
 *
 * In this process by default. With `{ child: true }` in a child process of
 * its own, started with `--openssl-legacy-provider`: s3rver 3.7 makes
 * ListObjectsV2 continuation tokens with DES, which OpenSSL 3 (Node 17+)
 * refuses without it (every second page is an InternalError); and a child
 * keeps the server's memory and CPU apart from what a test measures.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface S3Server {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where s3rver keeps objects: `<directory>/<bucket>/<key>._S3rver_object`. */
  directory: string;
  /** The file s3rver stores `key`'s bytes in. */
  objectFile(key: string): string;
  close(): Promise<void>;
}

const CHILD = `
const S3rver = require('s3rver');
const [directory, bucket] = process.argv.slice(1);
const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket }] });
server.run().then((a) => process.stdout.write(JSON.stringify({ port: a.port }) + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

/** s3rver in a child process; resolves its port. The child exits when its stdin closes (this process ended) or on SIGTERM. */
async function runChild(directory: string, bucket: string): Promise<{ port: number; stop(): Promise<void> }> {
  const root = new URL('../..', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '-e', CHILD, directory, bucket], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const [line] = (await Promise.race([once(createInterface({ input: child.stdout }), 'line'), exited.then(() => [undefined])])) as [string | undefined];
  if (line === undefined) throw new Error('s3rver (child) exited before listening');
  return {
    port: (JSON.parse(line) as { port: number }).port,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/**
 * @example
 * const s3 = await startS3(t);   // stopped when t ends
 * const storage = new ObjectStorage({ ...STORAGE_DEFAULTS, type: 'object', bucket: s3.bucket, endpoint_url: s3.endpoint, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey });
 */
export async function startS3(t: { teardown(fn: () => unknown): void }, options: { bucket?: string; child?: boolean } = {}): Promise<S3Server> {
  const bucket = options.bucket ?? 'svc-test';
  const directory = await mkdtemp(join(tmpdir(), 'svc-s3rver-'));
  let port: number;
  let stop: () => Promise<void>;
  if (options.child) {
    ({ port, stop } = await runChild(directory, bucket));
  } else {
    const { default: S3rver } = await import('s3rver'); // loaded here: importing the kit does not load s3rver
    const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket }] });
    ({ port } = await server.run());
    stop = () => server.close();
  }
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await stop();
    await rm(directory, { recursive: true, force: true });
  };
  t.teardown(close);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    directory,
    objectFile: (key) => join(directory, bucket, `${key}._S3rver_object`),
    close,
  };
}
