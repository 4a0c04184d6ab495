/**
 * Write a file whole or not at all: the bytes go to a temporary file in the
 * target's own folder (same file system, so the rename is atomic), which is
 * renamed into place once complete and removed when anything fails. Readers
 * see the old file or the new one, never a part.
 *
 * Visibility, not durability: there is no fsync, so a machine crash right
 * after the rename may leave an empty or short file (as with most servers
 * that store uploads). A process killed mid-write leaves its temporary file
 * behind; `listFiles` skips such names (`TEMP_FILE`).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { constants, copyFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';

/** The names of temporary files (`.svc-upload-<16 hex>.tmp`). */
export const TEMP_FILE = /^\.svc-upload-[0-9a-f]{16}\.tmp$/;

/** What to write: bytes, a stream of chunks, or a local file copied by the kernel (copy_file_range / reflink where it can). */
export type AtomicBody = Uint8Array | AsyncIterable<Uint8Array> | { copyFrom: string };

/**
 * Write `body` to `target` atomically; the target's folder must exist.
 *
 * @example
 * await writeAtomic('/srv/storage/a.txt', Buffer.from('hi'))
 * await writeAtomic('/srv/storage/b.bin', { copyFrom: '/tmp/upload-123' })
 */
export async function writeAtomic(target: string, body: AtomicBody): Promise<void> {
  const temp = join(dirname(target), `.svc-upload-${randomBytes(8).toString('hex')}.tmp`);
  try {
    if (body instanceof Uint8Array) await writeFile(temp, body, { flag: 'wx' });
    else if ('copyFrom' in body) await copyFile(body.copyFrom, temp, constants.COPYFILE_EXCL);
    else await pipeline(body, createWriteStream(temp, { flags: 'wx' }));
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/**
 * Whether `name` (a file name, or a path whose last segment is judged) is a temporary file of `writeAtomic`.
 *
 * @example
 * isTempFile('docs/.svc-upload-0123456789abcdef.tmp') // true
 */
export function isTempFile(name: string): boolean {
  return TEMP_FILE.test(basename(name));
}
