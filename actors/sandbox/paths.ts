/**
 * Paths inside a sandbox's project. Refused, before anything is touched: a
 * `..` segment, an absolute path, the shell metacharacters `;`, `|`, `&` and
 * backtick (and `$`, NUL, newline, backslash), an empty path. Then what the
 * text cannot show: a symbolic link inside the project may point anywhere,
 * so the real path of what a path names (or of its nearest existing folder)
 * must stay under the project's real path — the project's code can make such
 * links, and svc reads and writes as a more privileged user than that code.
 * The last component is opened without following a link (`O_NOFOLLOW`).
 */
import { constants } from 'node:fs';
import { chown, lstat, mkdir, open, readdir, realpath, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { sandboxError } from './errors.ts';

/** Directories `listFiles` never lists (nor descends into). */
export const SKIPPED_DIRS = new Set(['.svc', 'node_modules', '__pycache__', 'dist', '.git']);

/** The largest file `readFile` answers (bytes). */
export const MAX_READ_BYTES = 16 * 1024 * 1024;

const FORBIDDEN = /[;|&`$\0\n\r\\]/;

function shown(path: unknown): string {
  const text = JSON.stringify(String(path));
  return text.length > 200 ? `${text.slice(0, 197)}..."` : text;
}

/** `path` checked as text: its `/`-separated segments (`.` and empty ones dropped). */
export function checkPath(path: unknown): string[] {
  if (typeof path !== 'string' || path === '') throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is not a path (a non-empty string relative to the project)`);
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is absolute (paths are relative to the project)`);
  if (FORBIDDEN.test(path)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} holds a character refused in sandbox paths (; | & \` $ \\ or a control character)`);
  const parts = path.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} has a ".." segment (it would leave the sandbox)`);
  if (parts.length === 0) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} names the project folder itself, not a file`);
  if (Buffer.byteLength(path) > 1024 || parts.some((p) => Buffer.byteLength(p) > 255)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is too long`);
  return parts;
}

/** The nearest existing ancestor of `target` (itself included), resolved, must be inside `realRoot`. */
async function assertInside(realRoot: string, target: string, original: string): Promise<void> {
  let at = target;
  for (;;) {
    try {
      const real = await realpath(at);
      if (real !== realRoot && !real.startsWith(realRoot + sep)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(original)} resolves outside the sandbox (through a symbolic link)`);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      const up = dirname(at);
      if (up === at) return;
      at = up;
    }
  }
}

/** The absolute path `path` names under `root`, checked (text, then links). */
export async function resolveInside(root: string, path: unknown): Promise<string> {
  const parts = checkPath(path);
  const realRoot = await realpath(root);
  const target = join(realRoot, ...parts);
  await assertInside(realRoot, target, String(path));
  return target;
}

/** Read a file of the project (UTF-8). */
export async function readProjectFile(root: string, path: string): Promise<string> {
  const target = await resolveInside(root, path);
  let handle;
  try {
    handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw sandboxError('SANDBOX_FILE_NOT_FOUND', `no file ${shown(path)} in the sandbox`);
    if (code === 'ELOOP') throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is a symbolic link (not followed)`);
    throw error;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw sandboxError('SANDBOX_FILE_NOT_FOUND', `${shown(path)} is not a file`);
    if (stat.size > MAX_READ_BYTES) throw sandboxError('SANDBOX_INVALID', `${shown(path)} is larger than ${MAX_READ_BYTES} bytes`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** Write a file of the project (folders made as needed), owned by `owner` when given. */
export async function writeProjectFile(root: string, path: string, content: string | Uint8Array, owner?: { uid: number; gid: number }): Promise<void> {
  if (typeof content !== 'string' && !(content instanceof Uint8Array)) throw sandboxError('SANDBOX_INVALID', 'a file content is a string or bytes');
  const target = await resolveInside(root, path);
  const realRoot = await realpath(root);
  // Folders made one at a time, each checked: a link swapped in for one of them is refused, not followed.
  const folders = relative(realRoot, dirname(target)).split(sep).filter((s) => s !== '');
  let at = realRoot;
  for (const name of folders) {
    at = join(at, name);
    try {
      await mkdir(at);
      if (owner) await chown(at, owner.uid, owner.gid);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const stat = await lstat(at);
      if (!stat.isDirectory()) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)}: ${shown(relative(realRoot, at))} is not a folder`);
    }
  }
  let handle;
  try {
    handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is a symbolic link (not followed)`);
    if (code === 'EISDIR') throw sandboxError('SANDBOX_INVALID', `${shown(path)} is a folder`);
    throw error;
  }
  try {
    await handle.writeFile(content);
    if (owner) await handle.chown(owner.uid, owner.gid);
  } finally {
    await handle.close();
  }
}

/** Delete a file of the project (a link is removed, not followed). */
export async function deleteProjectFile(root: string, path: string): Promise<void> {
  const target = await resolveInside(root, path);
  let stat;
  try {
    stat = await lstat(target);
  } catch {
    throw sandboxError('SANDBOX_FILE_NOT_FOUND', `no file ${shown(path)} in the sandbox`);
  }
  if (stat.isDirectory()) throw sandboxError('SANDBOX_INVALID', `${shown(path)} is a folder (deleteFile removes files)`);
  await rm(target, { force: true });
}

/** Every file of the project, relative and sorted, skipping {@link SKIPPED_DIRS} (links are listed, never followed). */
export async function listProjectFiles(root: string, limit = 100_000): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (out.length >= limit) return;
      if (e.isDirectory()) {
        if (!SKIPPED_DIRS.has(e.name)) await walk(join(dir, e.name), `${prefix}${e.name}/`);
      } else out.push(`${prefix}${e.name}`);
    }
  };
  await walk(root, '');
  return out.sort();
}
