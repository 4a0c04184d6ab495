/**
 * Which stores a `svc db` command acts on, and opening them. A store is the
 * configured one (`[scale.database] docdb_uri` / `DOCDB_URI`, else the SQLite
 * files of the data folder, as `svc start` finds them), or one named on the
 * command line: a URI (`postgres://…`, `mongodb://…`, `sqlite:<file>`), a
 * SQLite file (graph and users in one file, as `docdb_uri = "sqlite:<file>"`
 * keeps them) or a folder (a data folder: `anchor_store.db` and `users.db` in it).
 *
 * A URI may hold a password: only {@link StoreLocation.label} ever reaches a
 * message, and errors of a backend are scrubbed of the URI's secrets.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openAnchorStore, parseStoreUri, type AnchorStore } from '../../actors/graph/index.ts';
import { openUsersRepository, type UsersRepository } from '../../actors/identity/index.ts';
import { redactUrl } from '../../stores/index.ts';
import { dataPaths, type SvcConfig } from '../../runtime/index.ts';

/** A `svc db` failure: one line on stderr, exit code 1. */
export class DbError extends Error {}

export interface StoreLocation {
  /** For messages: the SQLite file(s), or the URI with its credentials hidden. */
  label: string;
  /** The backend: `sqlite`, `postgres`, `mongodb`, … */
  backend: string;
  /** What the stores are opened with (undefined: SQLite at the paths below). */
  uri: string | undefined;
  /** SQLite: the graph store's file. */
  anchorPath: string;
  /** SQLite: the users store's file (the same file when one holds both). */
  usersPath: string;
  /** The SQLite files (none with another backend). */
  sqliteFiles: string[];
  /** What tells two locations apart (never shown: it may hold a password). */
  key: string;
}

const ANCHOR_FILE = 'anchor_store.db';
const USERS_FILE = 'users.db';

function sqliteLocation(anchorPath: string, usersPath: string): StoreLocation {
  const files = [...new Set([anchorPath, usersPath])];
  const label = files.length === 1 ? (files[0] as string) : `${anchorPath} + ${usersPath}`;
  return { label, backend: 'sqlite', uri: undefined, anchorPath, usersPath, sqliteFiles: files, key: `sqlite:${files.map(canonicalPath).join('\u0000')}` };
}

/** A path as the file system knows it (symbolic links resolved), so two spellings of one file compare equal. */
function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** A URI without what varies between spellings of one database (the credentials, letter case of scheme and host). */
function uriKey(uri: string): string {
  try {
    const u = new URL(uri);
    return `${u.protocol.toLowerCase()}//${u.host.toLowerCase()}${u.pathname}`;
  } catch {
    return uri;
  }
}

/**
 * The store a project is configured with (what `svc start` would serve).
 *
 * @example
 * configuredLocation(projectRoot, config).label  // '/app/.svc/data/anchor_store.db + /app/.svc/data/users.db'
 */
export function configuredLocation(projectRoot: string, config: SvcConfig): StoreLocation {
  const paths = dataPaths(projectRoot, config);
  if (paths.backend === 'memory') throw new DbError('[scale.database] docdb_uri is memory:, which lives inside one process: there is nothing stored to act on');
  if (paths.backend === 'sqlite') return sqliteLocation(paths.storePath, paths.usersPath);
  return { label: redactUrl(paths.docdbUri), backend: paths.backend, uri: paths.docdbUri, anchorPath: paths.storePath, usersPath: paths.usersPath, sqliteFiles: [], key: uriKey(paths.docdbUri) };
}

/**
 * A store named on the command line: a URI, a SQLite file, or a data folder
 * (an existing folder, or a path ending in `/`). Relative paths are from the
 * working directory.
 *
 * @example
 * namedLocation('.svc/data')            // anchor_store.db and users.db in it
 * namedLocation('backup.db')            // both in one file
 * namedLocation('postgres://u:pw@db/svc').label  // 'postgres://***:***@db/svc'
 */
export function namedLocation(spec: string): StoreLocation {
  const given = spec.trim();
  if (given === '') throw new DbError('an empty store name: give a URI (postgres://…, mongodb://…, sqlite:<file>), a SQLite file or a data folder');
  const uri = parseStoreUri(given, process.cwd());
  if (uri.scheme === 'memory') throw new DbError('memory: stores live inside one process: svc db needs a stored one');
  if (uri.scheme !== 'sqlite') return { label: redactUrl(given), backend: uri.scheme, uri: given, anchorPath: '', usersPath: '', sqliteFiles: [], key: uriKey(given) };
  const path = uri.path ?? '';
  if (path === '' || path === ':memory:') throw new DbError(`${JSON.stringify(given)} names no SQLite file`);
  const folder = /[/\\]$/.test(given) || (existsSync(path) && statSync(path).isDirectory());
  return folder ? sqliteLocation(join(path, ANCHOR_FILE), join(path, USERS_FILE)) : sqliteLocation(path, path);
}

/** Whether two locations are one store (or share a file). */
export function sameStore(a: StoreLocation, b: StoreLocation): boolean {
  if (a.key === b.key) return true;
  const files = new Set(a.sqliteFiles.map(canonicalPath));
  return b.sqliteFiles.some((f) => files.has(canonicalPath(f)));
}

/**
 * The secrets of a location's URI (its password, secret-looking query
 * values), to scrub from a backend's error messages. The user name is left:
 * it is often a plain word (`postgres`) that other text holds too.
 */
function secretsOf(location: StoreLocation): string[] {
  if (!location.uri) return [];
  const out = [location.uri];
  try {
    const u = new URL(location.uri);
    out.push(u.password, decodeURIComponentSafe(u.password));
    for (const [name, value] of u.searchParams) if (/pass|pwd|secret|token|key|cred|sig|auth/i.test(name)) out.push(value);
  } catch {
    // not a URL: only the whole string is hidden
  }
  return out.filter((s) => s.length >= 3).sort((a, b) => b.length - a.length);
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * A message fit to print: one line, the URI redacted and its secrets hidden
 * (the redacted label itself is kept as it is).
 *
 * @example
 * scrub('connect to postgres://u:hunter2@db failed', location)  // 'connect to postgres://***:***@db failed'
 */
export function scrub(message: string, ...locations: StoreLocation[]): string {
  let out = message.replace(/\s*\n\s*/g, ' ').trim();
  for (const location of locations) {
    if (!location.uri) continue;
    const secrets = secretsOf(location);
    out = out
      .split(location.uri)
      .join(location.label)
      .split(location.label)
      .map((part) => secrets.reduce((text, secret) => text.split(secret).join('***'), part))
      .join(location.label);
  }
  return out;
}

/** What a failure to open or reach a store says (the backend's own words, scrubbed). */
function unreachable(what: string, location: StoreLocation, error: unknown): DbError {
  const e = error as { message?: string; code?: string; errors?: { message?: string }[] };
  // An AggregateError (a host with several addresses) has an empty message of its own.
  const why = e.message || e.errors?.map((x) => x.message).filter(Boolean).join('; ') || e.code || String(error);
  const said = scrub(why, location);
  // A backend that names the place itself is not echoed twice.
  return new DbError(said.includes(location.label) ? said : `cannot open the ${what} at ${location.label}: ${said}`);
}

/** SQLite files to read must exist: opening one creates it, and an empty store would answer with nothing. */
function mustExist(path: string): void {
  if (!existsSync(path)) throw new DbError(`no SQLite store at ${path} (nothing stored there yet; another data folder is chosen with --db, SVC_DATA_DIR or [scale.database])`);
}

export interface OpenOptions {
  /** Create what is missing (a copy's destination); otherwise a missing SQLite file is an error. */
  create?: boolean;
}

/** The graph store at a location. */
export async function openAnchors(location: StoreLocation, options: OpenOptions = {}): Promise<AnchorStore> {
  if (location.backend === 'sqlite' && !options.create) mustExist(location.anchorPath);
  try {
    return await openAnchorStore(location.uri, { path: location.anchorPath, baseDir: process.cwd() });
  } catch (error) {
    throw unreachable('graph store', location, error);
  }
}

/** The users repository at a location. */
export async function openUsers(location: StoreLocation, options: OpenOptions = {}): Promise<UsersRepository> {
  if (location.backend === 'sqlite' && !options.create) mustExist(location.usersPath);
  try {
    return await openUsersRepository(location.uri, { path: location.usersPath, baseDir: process.cwd() });
  } catch (error) {
    throw unreachable('users store', location, error);
  }
}

/** Run a store call; a failure becomes one scrubbed line naming the location. */
export async function atStore<T>(location: StoreLocation, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof DbError) throw error;
    throw new DbError(`${what} failed at ${location.label}: ${scrub((error as Error).message ?? String(error), location)}`);
  }
}
