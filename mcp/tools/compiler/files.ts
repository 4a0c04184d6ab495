/**
 * The files the compiler tools' TypeScript may read from disk. A checked
 * module is a client's text: what it imports (`'/etc/…'`, `'../secret.ts'`,
 * `import j from 'x.json' with { type: 'json' }`), references
 * (`/// <reference path>`) or probes (a "Cannot find module" that depends on
 * whether a path exists) must not reach the machine's files through the
 * server's user.
 *
 * Decisions:
 * - What may be read is learnt, not listed: while the program of svc's
 *   public spec alone is built (trusted input: the spec svc generated), every
 *   file TypeScript finds is recorded; then {@link CompilerFiles.lock} closes
 *   the set. From there on the host serves the files recorded, the whole
 *   folders of the packages they belong to (`node_modules/typebox`,
 *   `node_modules/@types/node`, `node_modules/undici-types`: what the spec's
 *   types are made of, so `import … from 'typebox/value'` still checks), and
 *   TypeScript's own `lib.*.d.ts` (a `/// <reference lib="dom" />`).
 *   Everything else does not exist, whether it exists or not.
 * - A path is judged as written and as its real path (symlinks followed): a
 *   link inside a package folder that points out of it is not served.
 * - Folders answer "exists" only on the way to what may be read (the
 *   ancestors of the package folders) and inside those; directory listings
 *   only inside them.
 */
import { basename, dirname, resolve, sep } from 'node:path';
import ts from 'typescript';

/** The package folder a path is in (`…/node_modules/name` or `…/node_modules/@scope/name`), or undefined. */
function packageFolder(path: string): string | undefined {
  const parts = path.split(sep);
  const at = parts.lastIndexOf('node_modules');
  if (at === -1 || at + 1 >= parts.length - 1) return undefined;
  const scoped = (parts[at + 1] as string).startsWith('@');
  const end = at + (scoped ? 3 : 2);
  return end <= parts.length - 1 ? parts.slice(0, end).join(sep) : undefined;
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

/**
 * A compiler host's file access that learns, then locks (see the file's
 * comment). Its methods have the shapes of `ts.ModuleResolutionHost`'s.
 *
 * @example
 * const files = new CompilerFiles(dirname(ts.getDefaultLibFilePath(options)));
 * // … build the spec's program through files.readFile / fileExists / …
 * files.lock();
 * files.readFile('/etc/passwd'); // undefined
 */
export class CompilerFiles {
  private locked = false;
  /** Files seen to exist while learning. */
  private readonly known = new Set<string>();
  /** Package folders (as written and real) whose files may be read once locked. */
  private readonly packages = new Set<string>();
  /** Folders on the way to a package folder or a known file. */
  private readonly ancestors = new Set<string>();
  private readonly verdicts = new Map<string, boolean>();
  private readonly texts = new Map<string, string | undefined>();

  /** `libFolder`: TypeScript's folder of `lib.*.d.ts` (`dirname(ts.getDefaultLibFilePath(options))`). */
  constructor(private readonly libFolder: string) {}

  /** Whether the set of readable files is closed. */
  get isLocked(): boolean {
    return this.locked;
  }

  /** Close the set: from now on only what was learnt is served. */
  lock(): void {
    if (this.locked) return;
    for (const file of this.known) {
      const folder = dirname(file) === this.libFolder ? undefined : packageFolder(file);
      if (folder !== undefined) this.packages.add(folder);
      const real = this.realOf(file);
      const realFolder = real === undefined || dirname(real) === this.libFolder ? undefined : packageFolder(real);
      if (realFolder !== undefined) this.packages.add(realFolder);
      if (real !== undefined && real !== file) this.known.add(real);
    }
    for (const path of [...this.packages, ...this.known, this.libFolder]) {
      for (let dir = dirname(path); !this.ancestors.has(dir); dir = dirname(dir)) {
        this.ancestors.add(dir);
        if (dirname(dir) === dir) break;
      }
    }
    this.locked = true;
  }

  fileExists = (path: string): boolean => {
    if (!this.locked) {
      const there = ts.sys.fileExists(path);
      if (there) this.known.add(resolve(path));
      return there;
    }
    return this.may(path) && ts.sys.fileExists(path);
  };

  readFile = (path: string): string | undefined => {
    const full = resolve(path);
    if (this.locked && !this.may(full)) return undefined;
    if (!this.texts.has(full)) {
      const text = ts.sys.readFile(full);
      this.texts.set(full, text);
      if (text !== undefined && !this.locked) this.known.add(full);
    }
    return this.texts.get(full);
  };

  directoryExists = (path: string): boolean => {
    const full = resolve(path);
    if (this.locked && !this.ancestors.has(full) && !this.inFolders(full)) return false;
    return ts.sys.directoryExists(full);
  };

  getDirectories = (path: string): string[] => {
    const full = resolve(path);
    if (this.locked && !this.inFolders(full)) return [];
    return ts.sys.getDirectories(full);
  };

  realpath = (path: string): string => {
    if (this.locked && !this.may(path)) return path;
    return this.realOf(resolve(path)) ?? path;
  };

  private realOf(path: string): string | undefined {
    try {
      return ts.sys.realpath?.(path) ?? path;
    } catch {
      return undefined;
    }
  }

  private inPackage(full: string): boolean {
    for (const folder of this.packages) if (inside(full, folder)) return true;
    return false;
  }

  private inFolders(full: string): boolean {
    return this.inPackage(full) || inside(full, this.libFolder);
  }

  /** Whether a path, as written, names what may be served. */
  private allowed(full: string): boolean {
    return this.known.has(full) || this.inPackage(full) || (dirname(full) === this.libFolder && /^lib\..*\.d\.ts$/.test(basename(full)));
  }

  /** Whether a path may be served once locked: as written, and as its real path when it exists. */
  private may(path: string): boolean {
    const full = resolve(path);
    const cached = this.verdicts.get(full);
    if (cached !== undefined) return cached;
    // Not remembered: a client could fill the map with names.
    if (!this.allowed(full)) return false;
    // Nothing there: nothing to serve (not remembered, so a file that appears later is judged then).
    if (!ts.sys.fileExists(full)) return true;
    // A link inside a package folder to a file elsewhere is not that package's file.
    const real = this.realOf(full);
    const verdict = real !== undefined && this.allowed(real);
    this.verdicts.set(full, verdict);
    return verdict;
  }
}
