/**
 * Paths inside a sandbox's project. Refused as text, before anything is
 * touched: a `..` segment, an absolute path, the shell metacharacters `;`,
 * `|`, `&` and backtick, a backslash or control character, an empty path.
 *
 * Then the file system: the project's own code runs beside these calls and
 * may make links and swap folders for links at any moment, while svc reads
 * and writes as a more privileged user than that code. So a path is walked
 * one folder at a time from an open handle on the project folder, each step
 * opened without following a link (`O_NOFOLLOW`) through
 * `/proc/self/fd/<handle>/<name>` — openat(2) as Node can reach it: the
 * kernel resolves the handle to the folder already open, not to a path that
 * may have been swapped since. A link anywhere on the path is refused; a
 * file is opened non-blocking and must be a regular file (a FIFO the code
 * made does not hang svc). Where /proc is missing (not Linux) each step is
 * checked with realpath instead, which leaves a window a swap can win.
 */
import { constants, existsSync } from 'node:fs';
import { type FileHandle, lchown, lstat, mkdir, open, readdir, realpath, unlink } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { sandboxError } from './errors.ts';

/** Directories `listFiles` never lists (nor descends into). */
export const SKIPPED_DIRS = new Set(['.svc', 'node_modules', '__pycache__', 'dist', '.git']);

/** The largest file `readFile` answers and `writeFile` takes (bytes). */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

/** Files `listFiles` answers at most. */
const MAX_LISTED = 100_000;

const FORBIDDEN = /[;|&`\0-\x1f\x7f\\]/;
/** Whether /proc/self/fd anchors paths here (asked when first needed: a process under Node's permission model may not look). */
let anchoredHere: boolean | undefined;
function anchoredPaths(): boolean {
  if (anchoredHere === undefined) {
    try {
      anchoredHere = process.platform === 'linux' && existsSync('/proc/self/fd');
    } catch {
      anchoredHere = false;
    }
  }
  return anchoredHere;
}
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

function shown(path: unknown): string {
  const text = JSON.stringify(String(path));
  return text.length > 200 ? `${text.slice(0, 197)}..."` : text;
}

/** `path` checked as text: its `/`-separated segments (`.` and empty ones dropped). */
export function checkPath(path: unknown): string[] {
  if (typeof path !== 'string' || path === '') throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is not a path (a non-empty string relative to the project)`);
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is absolute (paths are relative to the project)`);
  if (FORBIDDEN.test(path)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} holds a character refused in sandbox paths (; | & \` \\ or a control character)`);
  const parts = path.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} has a ".." segment (it would leave the sandbox)`);
  if (parts.length === 0) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} names the project folder itself, not a file`);
  if (Buffer.byteLength(path) > 1024 || parts.some((p) => Buffer.byteLength(p) > 255)) throw sandboxError('SANDBOX_BAD_PATH', `${shown(path)} is too long`);
  return parts;
}

/** What a failed step means, in the sandbox's words (never the host's path). */
function refused(error: unknown, path: string): Error {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return sandboxError('SANDBOX_FILE_NOT_FOUND', `no file ${shown(path)} in the sandbox`);
    case 'ELOOP':
    case 'EMLINK':
      return sandboxError('SANDBOX_BAD_PATH', `${shown(path)} goes through a symbolic link (links are not followed)`);
    case 'ENOTDIR':
      return sandboxError('SANDBOX_BAD_PATH', `${shown(path)}: a folder on the path is not a folder`);
    case 'EISDIR':
      return sandboxError('SANDBOX_INVALID', `${shown(path)} is a folder`);
    case 'ENXIO':
    case 'EAGAIN':
      return sandboxError('SANDBOX_INVALID', `${shown(path)} is not a regular file`);
    case 'EACCES':
    case 'EPERM':
      return sandboxError('SANDBOX_INVALID', `${shown(path)} cannot be reached (permission denied)`);
    default:
      return (error as { code?: string }).code?.startsWith('SANDBOX_') ? (error as Error) : sandboxError('SANDBOX_INVALID', `${shown(path)}: ${(error as NodeJS.ErrnoException).code ?? 'the file operation failed'}`);
  }
}

/** An open folder of the project: where its entries are reached from. */
interface Dir {
  /** `/proc/self/fd/<n>`, or (not Linux) the folder's checked real path. */
  at: string;
  close(): Promise<void>;
}

async function openRoot(root: string): Promise<Dir> {
  if (!anchoredPaths()) {
    const real = await realpath(root);
    return { at: real, close: async () => undefined };
  }
  const handle = await open(root, constants.O_RDONLY | constants.O_DIRECTORY);
  return anchored(handle);
}

function anchored(handle: FileHandle): Dir {
  return { at: `/proc/self/fd/${handle.fd}`, close: () => handle.close() };
}

/** The folder `name` inside `dir`, not through a link; made (owned by `owner`) when `create` and missing. */
async function step(dir: Dir, name: string, create: boolean, owner: { uid: number; gid: number } | undefined, realRoot: string): Promise<Dir> {
  const at = join(dir.at, name);
  const openIt = async (): Promise<Dir> => {
    if (anchoredPaths()) return anchored(await open(at, DIR_FLAGS));
    const stat = await lstat(at);
    if (stat.isSymbolicLink()) throw Object.assign(new Error('link'), { code: 'ELOOP' });
    if (!stat.isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    const real = await realpath(at);
    if (real !== realRoot && !real.startsWith(realRoot + sep)) throw Object.assign(new Error('outside'), { code: 'ELOOP' });
    return { at: real, close: async () => undefined };
  };
  try {
    return await openIt();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !create) throw error;
    try {
      await mkdir(at, { mode: 0o755 });
      if (owner) await lchown(at, owner.uid, owner.gid);
    } catch (made) {
      if ((made as NodeJS.ErrnoException).code !== 'EEXIST') throw made;
    }
    return openIt();
  }
}

/** The folder holding the last segment of `parts`, walked from `root`; the caller closes it. */
async function parentOf(root: string, parts: string[], create = false, owner?: { uid: number; gid: number }): Promise<Dir> {
  const realRoot = anchoredPaths() ? '' : await realpath(root);
  let dir = await openRoot(root);
  try {
    for (const name of parts.slice(0, -1)) {
      const next = await step(dir, name, create, owner, realRoot);
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    await dir.close();
    throw error;
  }
}

/** Read a file of the project (UTF-8). */
export async function readProjectFile(root: string, path: string): Promise<string> {
  const parts = checkPath(path);
  try {
    const dir = await parentOf(root, parts);
    let handle: FileHandle;
    try {
      handle = await open(join(dir.at, parts[parts.length - 1] as string), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } finally {
      await dir.close();
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw sandboxError(stat.isDirectory() ? 'SANDBOX_INVALID' : 'SANDBOX_INVALID', `${shown(path)} is not a regular file`);
      if (stat.size > MAX_FILE_BYTES) throw sandboxError('SANDBOX_INVALID', `${shown(path)} is larger than ${MAX_FILE_BYTES} bytes`);
      return await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw refused(error, path);
  }
}

/** Write a file of the project (folders made as needed), owned by `owner` when given. */
export async function writeProjectFile(root: string, path: string, content: string | Uint8Array, owner?: { uid: number; gid: number }): Promise<void> {
  const parts = checkPath(path);
  if (typeof content !== 'string' && !(content instanceof Uint8Array)) throw sandboxError('SANDBOX_INVALID', 'a file content is a string or bytes');
  const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.byteLength;
  if (bytes > MAX_FILE_BYTES) throw sandboxError('SANDBOX_INVALID', `${shown(path)}: ${bytes} bytes is more than a sandbox file may hold (${MAX_FILE_BYTES})`);
  try {
    const dir = await parentOf(root, parts, true, owner);
    let handle: FileHandle;
    try {
      // Not truncated before it is known to be a regular file of the project.
      handle = await open(join(dir.at, parts[parts.length - 1] as string), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
    } finally {
      await dir.close();
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw sandboxError('SANDBOX_INVALID', `${shown(path)} is not a regular file`);
      await handle.truncate(0);
      await handle.writeFile(content);
      if (owner) await handle.chown(owner.uid, owner.gid);
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw refused(error, path);
  }
}

/** Delete a file of the project (a link is removed, never followed). */
export async function deleteProjectFile(root: string, path: string): Promise<void> {
  const parts = checkPath(path);
  try {
    const dir = await parentOf(root, parts);
    try {
      const at = join(dir.at, parts[parts.length - 1] as string);
      if ((await lstat(at)).isDirectory()) throw sandboxError('SANDBOX_INVALID', `${shown(path)} is a folder (deleteFile removes files)`);
      await unlink(at);
    } finally {
      await dir.close();
    }
  } catch (error) {
    throw refused(error, path);
  }
}

/** Every file of the project, relative and sorted, skipping {@link SKIPPED_DIRS} (links are listed, never followed). */
export async function listProjectFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const realRoot = anchoredPaths() ? '' : await realpath(root);
  const walk = async (dir: Dir, prefix: string): Promise<void> => {
    for (const e of await readdir(dir.at, { withFileTypes: true })) {
      if (out.length >= MAX_LISTED) return;
      if (!e.isDirectory()) {
        out.push(`${prefix}${e.name}`);
        continue;
      }
      if (SKIPPED_DIRS.has(e.name)) continue;
      let child: Dir;
      try {
        child = await step(dir, e.name, false, undefined, realRoot);
      } catch {
        continue; // swapped for a link, or gone, meanwhile
      }
      try {
        await walk(child, `${prefix}${e.name}/`);
      } finally {
        await child.close();
      }
    }
  };
  const top = await openRoot(root);
  try {
    await walk(top, '');
  } finally {
    await top.close();
  }
  return out.sort();
}
