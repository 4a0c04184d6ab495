/**
 * The store URI (`[scale.database] docdb_uri`, `DOCDB_URI`): which backend
 * holds the graph and the users, read the same way by every store selector
 * (`openAnchorStore`, `openUsersRepository`). Nothing, a file path or
 * `sqlite:<path>` is embedded SQLite; `memory:` keeps everything in the
 * thread (tests); other schemes name a backend a selector has registered.
 */
import { isAbsolute, resolve } from 'node:path';
import type { SvcError } from '../../kernel/index.ts';
import { storeError } from './errors.ts';

export interface StoreUri {
  /** Lower case, without the colon: `sqlite`, `memory`, `postgres`, `mongodb`, … */
  scheme: string;
  /** `sqlite` only: the file, resolved; absent when the URI names none (each store then uses its default file). */
  path?: string;
  /** The URI as configured (it may hold a password: never put it in a message). */
  uri: string;
}

/** Backends a build may lack (a selector that registers none for them): a clear error, not a silent SQLite. */
const PLANNED: Record<string, string> = {
  postgres: 'PostgreSQL',
  postgresql: 'PostgreSQL',
  mongodb: 'MongoDB',
  'mongodb+srv': 'MongoDB',
};

/**
 * Read a store URI; relative SQLite paths resolve from `baseDir` (the project root).
 *
 * @example
 * parseStoreUri('');                        // { scheme: 'sqlite', uri: '' }
 * parseStoreUri('sqlite:data/app.db', root); // { scheme: 'sqlite', path: `${root}/data/app.db`, … }
 * parseStoreUri('postgres://db/svc');        // { scheme: 'postgres', … }
 */
export function parseStoreUri(uri: string | undefined, baseDir = process.cwd()): StoreUri {
  const given = (uri ?? '').trim();
  const file = (path: string): StoreUri => ({ scheme: 'sqlite', uri: given, ...(path ? { path: path === ':memory:' ? path : resolve(baseDir, path) } : {}) });
  if (given === '') return { scheme: 'sqlite', uri: given };
  // Two letters at least: `C:\data\app.db` is a path, not a scheme.
  const m = /^([a-z][a-z0-9+.-]+):(.*)$/is.exec(given);
  if (!m || isAbsolute(given)) return file(given);
  const scheme = (m[1] as string).toLowerCase();
  if (scheme === 'sqlite') return file((m[2] as string).replace(/^\/\/(?=\/|[^/])/, ''));
  return { scheme, uri: given };
}

/**
 * The URLs of the scheme a URI was written with, for a message: `"amqp:" URLs`,
 * or `a URL without a scheme` for text the store URI reads as a file path
 * (`127.0.0.1:6379` is no `sqlite:` URL to a user who meant Redis). Never the
 * URI itself.
 *
 * @example
 * schemeWritten(parseStoreUri('amqp://u:p@h/x')); // '"amqp:" URLs'
 * schemeWritten(parseStoreUri('127.0.0.1:6379')); // 'a URL without a scheme'
 */
export function schemeWritten(uri: StoreUri): string {
  return uri.uri.toLowerCase().startsWith(`${uri.scheme}:`) ? `${JSON.stringify(`${uri.scheme}:`)} URLs` : 'a URL without a scheme';
}

/**
 * The error for a URI no registered backend answers: a backend announced for
 * a later release, or an unknown scheme. Names the scheme, never the URI.
 */
export function unavailableBackend(uri: StoreUri, what: string, known: readonly string[]): SvcError {
  const planned = PLANNED[uri.scheme];
  const choices = `use ${known.map((s) => `${s}:`).join(', ')} or a file path (or leave docdb_uri empty for SQLite in the data folder)`;
  if (planned) return storeError('SVC_ERR_STORE_BACKEND', `the ${planned} ${what} is not available yet (docdb_uri ${uri.scheme}://…); ${choices}`, { details: { scheme: uri.scheme } });
  return storeError('SVC_ERR_STORE_BACKEND', `unknown ${what} backend ${JSON.stringify(`${uri.scheme}:`)} in docdb_uri; ${choices}`, { details: { scheme: uri.scheme } });
}

/**
 * Backends of one kind (anchor stores, users repositories) by URI scheme,
 * as emailers are by name: `open` reads the URI and asks the scheme's factory.
 *
 * @example
 * const stores = new BackendRegistry<AnchorStore, OpenAnchorStoreOptions>('anchor store');
 * stores.register('memory', () => new MemoryStore());
 * await stores.open(config['scale.database'].docdb_uri, { baseDir: projectRoot });
 */
export class BackendRegistry<T, O extends { baseDir?: string }> {
  private readonly factories = new Map<string, (uri: StoreUri, options: O) => T | Promise<T>>();

  /** `unavailable`: the error for a scheme no backend is registered for (default `SVC_ERR_STORE_BACKEND`, {@link unavailableBackend}). */
  constructor(
    private readonly what: string,
    private readonly unavailable: (uri: StoreUri, what: string, known: readonly string[]) => Error = unavailableBackend,
  ) {}

  /** A later registration of a scheme replaces the earlier one. */
  register(scheme: string, factory: (uri: StoreUri, options: O) => T | Promise<T>): void {
    this.factories.set(scheme.toLowerCase(), factory);
  }

  /** The schemes registered, in registration order. */
  schemes(): string[] {
    return [...this.factories.keys()];
  }

  /** Read `uri` and find its backend: the parsed URI and its factory, or the registry's error for an unknown scheme (thrown). */
  resolve(uri: string | undefined, baseDir?: string): { uri: StoreUri; factory: (uri: StoreUri, options: O) => T | Promise<T> } {
    const parsed = parseStoreUri(uri, baseDir);
    const factory = this.factories.get(parsed.scheme);
    if (!factory) throw this.unavailable(parsed, this.what, this.schemes());
    return { uri: parsed, factory };
  }

  /** An unknown scheme, or one whose backend is not in this build, rejects (`SVC_ERR_STORE_BACKEND` by default). */
  async open(uri: string | undefined, options: O): Promise<T> {
    const found = this.resolve(uri, options.baseDir);
    return found.factory(found.uri, options);
  }
}
