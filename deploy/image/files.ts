/**
 * Files of a build context: copied into the staging folder (hard links where
 * the file system allows — the context is only read, and a staged
 * `node_modules` of 27,000 files is linked in a second where a copy takes
 * several), and hashed into the image's tag.
 */
import type { Hash } from 'node:crypto';
import { chmodSync, copyFileSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Whether a name (a file or folder's own name, with the path relative to the copy's root) is left out. */
export type Skip = (name: string, rel: string, isDir: boolean) => boolean;

/**
 * Copy the tree at `from` to `to` (made), leaving out what `skip` names; symbolic links are copied as links, sockets
 * and other special files are left out. Files are hard-linked when they can be (same file system), else copied.
 *
 * @example
 * copyTree('/srv/app', '/tmp/ctx/app', (name) => name === 'node_modules');
 */
export function copyTree(from: string, to: string, skip: Skip = () => false, rel = ''): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const name = entry.name;
    const childRel = rel === '' ? name : `${rel}/${name}`;
    if (skip(name, childRel, entry.isDirectory())) continue;
    const src = join(from, name);
    const dst = join(to, name);
    if (entry.isDirectory()) copyTree(src, dst, skip, childRel);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(src), dst);
    else if (entry.isFile()) copyFile(src, dst);
  }
}

let linking = true;

/** One file: a hard link, or a copy (another file system, or links refused). */
export function copyFile(src: string, dst: string): void {
  mkdirSync(dirname(dst), { recursive: true });
  // A file only its owner may read (0600) would be unreadable to the image's user (1000): such a file is copied, and
  // the copy made readable — a link would change the original's mode.
  const mode = statSync(src).mode;
  if ((mode & 0o004) === 0) {
    copyFileSync(src, dst);
    chmodSync(dst, (mode & 0o777) | 0o444);
    return;
  }
  if (linking) {
    try {
      linkSync(src, dst);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK' && code !== 'ENOTSUP') throw error;
      if (code === 'EXDEV' || code === 'ENOTSUP') linking = false;
    }
  }
  copyFileSync(src, dst);
}


/**
 * Add a source tree (or one file) to a hash as it would be copied by {@link copyTree} with `skip`: paths under
 * `prefix`, kind, executable bit and bytes, in sorted order. Nothing is written.
 *
 * @example
 * const h = createHash('sha256'); hashTree(h, '/srv/app', 'app', (name) => name === 'node_modules');
 */
export function hashTree(hash: Hash, path: string, prefix: string, skip: Skip = () => false, rel = ''): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) {
    hash.update(`l\0${prefix}\0${readlinkSync(path)}\0`);
  } else if (st.isFile()) {
    hash.update(`f\0${prefix}\0${st.mode & 0o111 ? 'x' : '-'}\0${st.size}\0`);
    hash.update(readFileSync(path));
  } else if (st.isDirectory()) {
    hash.update(`d\0${prefix}\0`);
    for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (skip(entry.name, childRel, entry.isDirectory())) continue;
      hashTree(hash, join(path, entry.name), `${prefix}/${entry.name}`, skip, childRel);
    }
  }
}
