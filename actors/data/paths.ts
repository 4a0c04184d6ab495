/**
 * Storage paths: what a caller may name, and where it lands. Every method of
 * every backend passes its paths through here before anything is touched:
 * a path is relative to the storage's base, `/`-separated, and never leaves
 * it (no `..` segment, no absolute path or Windows drive, no NUL, no
 * backslash). `./` segments and repeated slashes are dropped, so
 * `./docs//a.txt` and `docs/a.txt` are one file on disk and one key in a bucket.
 *
 * The local backend adds a check the text cannot make: a symbolic link inside
 * the base may point anywhere, so the real path of what a path names (or of its
 * nearest existing folder) must stay under the real base (`assertInside`).
 * TODO: that check and the file operation after it are two steps (a link
 * swapped in between wins); closing that needs openat2(RESOLVE_BENEATH),
 * which Node does not offer.
 */
import { realpath } from 'node:fs/promises';
import { dirname, sep } from 'node:path';
import { fsErrorCode, storageError } from './storage-errors.ts';

/** The longest path (bytes, UTF-8) and the longest name of one segment: S3's key limit, and ext4's name limit. */
export const MAX_PATH_BYTES = 1024;
export const MAX_NAME_BYTES = 255;

/** A path as it may be shown in an error message (quoted, control characters escaped, cut at 200 characters). */
function shown(path: unknown): string {
  const text = JSON.stringify(String(path));
  return text.length > 200 ? `${text.slice(0, 197)}..."` : text;
}

/** The segments of `path`, checked; `.` and empty segments dropped. */
function segments(path: unknown): string[] {
  if (typeof path !== 'string') throw storageError('INVALID_PATH', `${shown(path)} is not a path (a string is expected)`);
  if (path.includes('\0')) throw storageError('INVALID_PATH', `${shown(path)} contains a NUL byte`);
  if (path.includes('\\')) throw storageError('INVALID_PATH', `${shown(path)} contains a backslash (paths are /-separated)`);
  if (path.startsWith('/')) throw storageError('INVALID_PATH', `${shown(path)} is absolute (paths are relative to the storage)`);
  if (/^[A-Za-z]:/.test(path)) throw storageError('INVALID_PATH', `${shown(path)} starts with a Windows drive`);
  const parts = path.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) throw storageError('INVALID_PATH', `${shown(path)} has a ".." segment (it would leave the storage)`);
  // What no file system (a name: 255 bytes) or object store (a key: 1,024 bytes) takes is refused here, not as an outage.
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw storageError('INVALID_PATH', `${shown(path)} is longer than ${MAX_PATH_BYTES} bytes`);
  for (const part of parts) if (Buffer.byteLength(part) > MAX_NAME_BYTES) throw storageError('INVALID_PATH', `${shown(path)} has a name longer than ${MAX_NAME_BYTES} bytes`);
  return parts;
}

/**
 * The normalised relative path of a file, or `INVALID_PATH` (a path that
 * names nothing, such as `''` or `'./'`, is refused too).
 *
 * @example
 * safeRelative('./docs//a.txt')   // 'docs/a.txt'
 * safeRelative('a/../../x')       // throws INVALID_PATH
 */
export function safeRelative(path: string): string {
  const parts = segments(path);
  if (parts.length === 0) throw storageError('INVALID_PATH', `${shown(path)} names no file`);
  return parts.join('/');
}

/**
 * A `listFiles` prefix, normalised like a path but kept as a string prefix:
 * empty is allowed (everything), and a trailing `/` (or `/.`) is kept, since
 * `docs/` (inside the folder) and `docs` (anything starting so) differ.
 *
 * @example
 * safePrefix('./docs/')   // 'docs/'
 * safePrefix('docs/re')   // 'docs/re'
 * safePrefix('')          // ''
 */
export function safePrefix(prefix: string): string {
  const parts = segments(prefix);
  if (parts.length === 0) return '';
  const folder = /(^|\/)\.?$/.test(prefix);
  return parts.join('/') + (folder ? '/' : '');
}

/**
 * Refuse with `INVALID_PATH` when `absolute` (a path under `realBase`, itself
 * a real path) resolves outside `realBase` through a symbolic link. What does
 * not exist yet is judged by its nearest existing folder: folders created
 * under it are real folders, so they stay inside.
 *
 * @example
 * await assertInside(await realpath(base), join(await realpath(base), 'a/b.txt'), 'a/b.txt')
 */
export async function assertInside(realBase: string, absolute: string, path: string): Promise<void> {
  let candidate = absolute;
  for (;;) {
    let real: string;
    try {
      real = await realpath(candidate);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const up = dirname(candidate);
      if ((code === 'ENOENT' || code === 'ENOTDIR') && up !== candidate) {
        candidate = up;
        continue;
      }
      // A loop of links or a name too long is the path's fault (400); a folder that refuses access, a setting; the rest, an outage.
      const kind = typeof code === 'string' ? fsErrorCode(code) : 'STORAGE_UNAVAILABLE';
      if (kind === 'INVALID_PATH') throw storageError(kind, `${shown(path)} cannot be resolved (${code})`, { cause: err });
      throw storageError(kind === 'STORAGE_CONFIG' ? kind : 'STORAGE_UNAVAILABLE', `the storage folder cannot be read at ${shown(path)} (${code ?? 'error'})`, { cause: err });
    }
    if (real === realBase || real.startsWith(realBase.endsWith(sep) ? realBase : realBase + sep)) return;
    throw storageError('INVALID_PATH', `${shown(path)} leads outside the storage through a symbolic link`);
  }
}
