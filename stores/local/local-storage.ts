/**
 * `store()` on a local folder (`[storage] type = "local"`). Paths are
 * relative to the base folder; each one is checked (`safeRelative`) and its
 * real path kept under the real base (`assertInside`: a symbolic link inside
 * the base that points outside is refused with `INVALID_PATH`).
 *
 * Decisions, and why:
 * - The base folder is made on first use when `createDirs` is on; when it is
 *   off a missing base is `STORAGE_CONFIG` (a volume that is not mounted
 *   should not be papered over with an empty folder). Folders *inside* the
 *   base are always made as uploads, copies and moves need them, with either
 *   setting: object storage has no folders, and both backends pass one suite.
 * - Files are written whole or not at all (`writeAtomic`: a temporary file
 *   in the destination's folder, renamed into place). A file source is copied
 *   by the kernel (`copyFile`), a stream piped; nothing is held whole in
 *   memory except bytes the caller already holds.
 * - `metadata` given to `upload` is not kept: user metadata and content types
 *   are kept by object storage only (no sidecar files to drift out of step).
 * - Files only: `exists`, `delete`, `copy` and `move` see regular files;
 *   a folder is not a file (`exists` false, `delete` false, never recursive).
 *   `getMetadata` of a folder answers with `is_dir: true`.
 * - `listFiles` lists regular files, sorted as S3 sorts keys (UTF-8 byte
 *   order of the whole path); symbolic links are neither listed nor followed
 *   (no cycles, no escapes); temporary upload files are skipped.
 * - Errors of the file system become storage errors with the cause kept
 *   (`fsErrorCode` in actors/data/storage-errors.ts): permission refused is `STORAGE_CONFIG`;
 *   what the caller's path asks and the file system cannot do (a folder or
 *   file in the way — a file moved onto its own folder too —, a name too
 *   long, a loop of links) is `INVALID_PATH`; the rest (EIO, a full disk, …)
 *   `STORAGE_UNAVAILABLE`. An upload stream's own
 *   error is rethrown as it is. `download` to the app's own destination (a
 *   path or a stream) lets that destination's errors through unchanged.
 */
import { createReadStream, type Dirent } from 'node:fs';
import { lstat, mkdir, readdir, readFile, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { SvcError } from '../../kernel/index.ts';
import { isTempFile, writeAtomic } from './atomic-file.ts';
import { checkExpiry, checkMetadata, fsErrorCode, storageError, assertInside, safePrefix, safeRelative, guarded, isSourceFailure, openSource, type FileMetadata, type Storage, type UploadSource } from '../../actors/data/index.ts';

export interface LocalStorageOptions {
  /** The base folder, absolute (`createStorage` resolves `base_path` against the project folder). */
  basePath: string;
  /** Make the base folder when it is missing (else `STORAGE_CONFIG` on first use). */
  createDirs: boolean;
}

/** A storage error for a failure of the file system (`what`: the operation and path, for the message), classed by {@link fsErrorCode}. */
function fsFailure(err: unknown, what: string): unknown {
  if (err instanceof SvcError || isSourceFailure(err)) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string') return err;
  const kind = fsErrorCode(code);
  const why =
    kind === 'FILE_NOT_FOUND' ? 'no such file'
    : kind === 'STORAGE_CONFIG' ? `the storage folder refuses it (${code})`
    : kind === 'INVALID_PATH' ? `the path cannot be used there: ${PATH_FAULT[code] ?? 'the file system refuses it'} (${code})`
    : `the storage folder failed (${code})`;
  return storageError(kind, `${what}: ${why}`, { cause: err });
}

/** What each path fault of the file system means, for the message. */
const PATH_FAULT: Record<string, string> = {
  EISDIR: 'a folder is in the way',
  ENOTDIR: 'a file is in the way of a folder',
  EEXIST: 'a file or folder is in the way',
  ENOTEMPTY: 'a folder is in the way (a file cannot take the place of its own folder)',
  EINVAL: 'the file system cannot make this move or take this name',
  ENAMETOOLONG: 'the path is too long for the file system',
  ELOOP: 'it runs through a loop of symbolic links',
};

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Compare as S3 orders keys: by UTF-8 bytes. */
function byteOrder(a: Buffer, b: Buffer): number {
  return Buffer.compare(a, b);
}

/**
 * @example
 * const storage = new LocalStorage({ basePath: '/srv/app/storage', createDirs: true });
 * await storage.upload(Buffer.from('hi'), 'notes/a.txt');
 * for await (const path of storage.listFiles('notes/')) console.log(path); // notes/a.txt
 */
export class LocalStorage implements Storage {
  readonly type = 'local' as const;
  readonly basePath: string;
  private readonly createDirs: boolean;
  private base: Promise<string> | undefined;

  constructor(options: LocalStorageOptions) {
    if (typeof options.basePath !== 'string' || !isAbsolute(options.basePath)) {
      throw storageError('STORAGE_CONFIG', `the local storage folder must be an absolute path (got ${JSON.stringify(options.basePath)})`);
    }
    this.basePath = resolve(options.basePath);
    this.createDirs = options.createDirs;
  }

  /** The real path of the base folder, made first when `createDirs` is on; a failure is not remembered (the next call tries again). */
  private realBase(): Promise<string> {
    this.base ??= this.openBase().catch((err: unknown) => {
      this.base = undefined;
      throw err;
    });
    return this.base;
  }

  private async openBase(): Promise<string> {
    const shown = JSON.stringify(this.basePath);
    try {
      if (this.createDirs) await mkdir(this.basePath, { recursive: true });
      const s = await stat(this.basePath);
      if (!s.isDirectory()) throw storageError('STORAGE_CONFIG', `the storage folder ${shown} is not a folder`);
      return await realpath(this.basePath);
    } catch (err) {
      if (err instanceof SvcError) throw err;
      if (isMissing(err)) throw storageError('STORAGE_CONFIG', `the storage folder ${shown} does not exist (create_dirs is off)`, { cause: err });
      throw storageError('STORAGE_CONFIG', `the storage folder ${shown} cannot be used (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err });
    }
  }

  /** The checked relative path and its absolute path under the real base. */
  private async locate(path: string): Promise<{ rel: string; abs: string }> {
    const rel = safeRelative(path);
    const base = await this.realBase();
    const abs = join(base, ...rel.split('/'));
    await assertInside(base, abs, path);
    return { rel, abs };
  }

  /** Whether `abs` is a regular file (following a link already checked to stay inside). */
  private async isFile(abs: string, rel: string): Promise<boolean> {
    try {
      return (await stat(abs)).isFile();
    } catch (err) {
      if (isMissing(err)) return false;
      throw fsFailure(err, `reading ${JSON.stringify(rel)}`);
    }
  }

  private async requireFile(abs: string, rel: string): Promise<void> {
    if (!(await this.isFile(abs, rel))) throw storageError('FILE_NOT_FOUND', `no such file ${JSON.stringify(rel)} in the storage`);
  }

  /**
   * @example
   * await storage.upload('/tmp/report.pdf', 'reports/2026.pdf')   // 'reports/2026.pdf'
   */
  async upload(source: UploadSource, destination: string, metadata?: Record<string, string>): Promise<string> {
    // Not kept here, but checked as object storage checks it: what works locally works on S3.
    checkMetadata(metadata);
    const { rel, abs } = await this.locate(destination);
    const src = await openSource(source);
    try {
      await mkdir(dirname(abs), { recursive: true });
      await writeAtomic(abs, src.kind === 'bytes' ? src.bytes : src.kind === 'file' ? { copyFrom: src.path } : guarded(src.stream));
    } catch (err) {
      throw fsFailure(err, `storing ${JSON.stringify(rel)}`);
    }
    return rel;
  }

  /**
   * @example
   * const bytes = await storage.download('a.txt');
   * await storage.download('a.txt', './copy-of-a.txt');   // null
   */
  download(source: string): Promise<Buffer>;
  download(source: string, destination: string | Writable): Promise<null>;
  async download(source: string, destination?: string | Writable): Promise<Buffer | null> {
    const { rel, abs } = await this.locate(source);
    await this.requireFile(abs, rel);
    const what = `reading ${JSON.stringify(rel)}`;
    if (destination === undefined) {
      try {
        return await readFile(abs);
      } catch (err) {
        throw fsFailure(err, what);
      }
    }
    if (typeof destination === 'string') {
      await writeAtomic(resolve(destination), { copyFrom: abs });
      return null;
    }
    try {
      await pipeline(guarded(createReadStream(abs)), destination);
    } catch (err) {
      throw isSourceFailure(err) ? fsFailure(err, what) : err;
    }
    return null;
  }

  /**
   * @example
   * await storage.delete('a.txt')   // true, then false
   */
  async delete(path: string): Promise<boolean> {
    const { rel, abs } = await this.locate(path);
    try {
      if (!(await lstat(abs)).isFile() && !(await this.isFile(abs, rel))) return false;
      await unlink(abs);
      return true;
    } catch (err) {
      if (isMissing(err)) return false;
      throw fsFailure(err, `deleting ${JSON.stringify(rel)}`);
    }
  }

  /**
   * @example
   * await storage.exists('a.txt')   // true
   */
  async exists(path: string): Promise<boolean> {
    const { rel, abs } = await this.locate(path);
    return this.isFile(abs, rel);
  }

  /**
   * @example
   * for await (const path of storage.listFiles('docs/', true)) console.log(path);
   */
  async *listFiles(prefix = '', recursive = false): AsyncGenerator<string> {
    const p = safePrefix(prefix);
    const base = await this.realBase();
    const cut = p.lastIndexOf('/') + 1;
    const folder = p.slice(0, cut);
    const folderAbs = folder === '' ? base : join(base, ...folder.slice(0, -1).split('/'));
    await assertInside(base, folderAbs, prefix);
    yield* this.walk(folderAbs, folder, p.slice(cut), recursive);
  }

  /** Files of `abs` (shown as `rel` + name) whose name starts with `start`; with `recursive`, and inside matching folders. */
  private async *walk(abs: string, rel: string, start: string, recursive: boolean): AsyncGenerator<string> {
    let entries: Dirent[];
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return;
      throw fsFailure(err, `listing ${JSON.stringify(rel)}`);
    }
    const items: { name: string; dir: boolean; key: Buffer }[] = [];
    for (const e of entries) {
      if (!e.name.startsWith(start)) continue;
      if (e.isFile() && !isTempFile(e.name)) items.push({ name: e.name, dir: false, key: Buffer.from(e.name) });
      else if (recursive && e.isDirectory()) items.push({ name: e.name, dir: true, key: Buffer.from(`${e.name}/`) });
    }
    // A folder sorts as `name/`: every path below it starts so, which keeps the walk in whole-path byte order.
    items.sort((a, b) => byteOrder(a.key, b.key));
    for (const item of items) {
      if (item.dir) yield* this.walk(join(abs, item.name), `${rel}${item.name}/`, '', true);
      else yield `${rel}${item.name}`;
    }
  }

  /**
   * @example
   * await storage.getMetadata('a.txt')   // { name: 'a.txt', size: 2, modified, created, is_dir: false }
   */
  async getMetadata(path: string): Promise<FileMetadata> {
    const { rel, abs } = await this.locate(path);
    try {
      const s = await stat(abs);
      // birthtime is 0 where the file system does not record it: ctime is the nearest there is.
      const created = s.birthtimeMs > 0 ? s.birthtime : s.ctime;
      return { name: basename(rel), size: s.size, modified: s.mtime.toISOString(), created: created.toISOString(), is_dir: s.isDirectory() };
    } catch (err) {
      if (isMissing(err)) throw storageError('FILE_NOT_FOUND', `no such file ${JSON.stringify(rel)} in the storage`, { cause: err });
      throw fsFailure(err, `reading ${JSON.stringify(rel)}`);
    }
  }

  /**
   * @example
   * await storage.copy('a.txt', 'backup/a.txt')   // true (false when a.txt does not exist)
   */
  async copy(source: string, destination: string): Promise<boolean> {
    const from = await this.locate(source);
    const to = await this.locate(destination);
    if (!(await this.isFile(from.abs, from.rel))) return false;
    if (from.abs === to.abs) return true;
    try {
      await mkdir(dirname(to.abs), { recursive: true });
      await writeAtomic(to.abs, { copyFrom: from.abs });
      return true;
    } catch (err) {
      throw fsFailure(err, `copying ${JSON.stringify(from.rel)} to ${JSON.stringify(to.rel)}`);
    }
  }

  /**
   * @example
   * await storage.move('inbox/a.txt', 'done/a.txt')   // true
   */
  async move(source: string, destination: string): Promise<boolean> {
    const from = await this.locate(source);
    const to = await this.locate(destination);
    if (!(await this.isFile(from.abs, from.rel))) return false;
    if (from.abs === to.abs) return true;
    const what = `moving ${JSON.stringify(from.rel)} to ${JSON.stringify(to.rel)}`;
    try {
      await mkdir(dirname(to.abs), { recursive: true });
      await rename(from.abs, to.abs);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw fsFailure(err, what);
      // Another file system mounted inside the base: copy, then remove the source.
      try {
        await writeAtomic(to.abs, { copyFrom: from.abs });
        await unlink(from.abs);
      } catch (e) {
        throw fsFailure(e, what);
      }
    }
    return true;
  }

  /**
   * A `file://` URL of the path (checked; the file need not exist). `expiresIn` has no meaning here.
   *
   * @example
   * await storage.getUrl('a.txt')   // 'file:///srv/app/storage/a.txt'
   */
  async getUrl(path: string, expiresIn = 3600): Promise<string> {
    checkExpiry(expiresIn); // not used by a file:// URL, but refused as object storage refuses it
    const { abs } = await this.locate(path);
    return pathToFileURL(abs).href;
  }

  /**
   * Always `STORAGE_CONFIG`: a browser cannot PUT to a local folder.
   *
   * @example
   * await storage.getUploadUrl('a.txt')   // rejects STORAGE_CONFIG
   */
  async getUploadUrl(path: string, _expiresIn = 3600): Promise<string> {
    safeRelative(path);
    throw storageError('STORAGE_CONFIG', 'pre-signed upload URLs need object storage');
  }

  /** Nothing to release. */
  async close(): Promise<void> {}
}
