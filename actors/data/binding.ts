/**
 * What `store()` and `kvstore()` read of the runtime they run in: the project
 * folder, the data folder, the storage and database settings, and (for
 * `findNodes`) the graph's store and registry. `svc start` binds it on every
 * worker thread (and `testApp` for its run); outside a runtime — a script, a
 * test — it is read from the current folder: its `svc.toml` and the
 * environment, with the data folder `.svc/data`.
 */
import { join } from 'node:path';
import type { AnchorStore } from '../graph/index.ts';
import type { Registry } from '../walker/index.ts';
import { STORAGE_DEFAULTS } from './storage-backends.ts';
import type { StorageConfig } from './storage-types.ts';

export interface DataBinding {
  /** Relative storage paths resolve against it. */
  projectRoot: string;
  /** Where the embedded document store lives (`docdb.db`). */
  dataDir: string;
  /** `[storage]` / `[scale.storage]`, environment applied. */
  storage: StorageConfig;
  /** `[scale.database] docdb_uri` and `kv_url` as configured (environment applied at start). */
  docdbUri: string;
  kvUrl: string;
  /** The graph of this thread, for `findNodes` (absent: `findNodes` refuses). */
  graph?: { store: AnchorStore; registry: Registry };
}

const bindings: DataBinding[] = [];
let fallback: DataBinding | undefined;
let loadFallback: (() => DataBinding) | undefined;

/** Bind this thread's runtime; returns the unbinding. */
export function bindData(binding: DataBinding): () => void {
  bindings.push(binding);
  return () => {
    const i = bindings.lastIndexOf(binding);
    if (i >= 0) bindings.splice(i, 1);
  };
}

/** How the binding outside a runtime is made (the runtime room registers it: it owns the config loader). */
export function setDataFallback(load: () => DataBinding): void {
  loadFallback = load;
  fallback = undefined;
}

/** The environment a fallback binding was read with: read again when it changes. */
function envKey(): string {
  const env = process.env;
  return Object.keys(env)
    .filter((k) => k.startsWith('SVC_STORAGE') || k === 'DOCDB_URI' || k === 'KV_URL' || k === 'SVC_DATA_DIR')
    .sort()
    .map((k) => `${k}=${env[k]}`)
    .join('\n');
}
let fallbackEnv = '';

/** The binding in force: the runtime's, else the current folder's (read again when the environment changes). */
export function dataBinding(): DataBinding {
  const bound = bindings[bindings.length - 1];
  if (bound) return bound;
  const key = `${process.cwd()}\n${envKey()}`;
  if (fallback === undefined || key !== fallbackEnv) {
    fallbackEnv = key;
    fallback = loadFallback?.() ?? {
      projectRoot: process.cwd(),
      dataDir: join(process.cwd(), '.svc', 'data'),
      storage: { ...STORAGE_DEFAULTS },
      docdbUri: '',
      kvUrl: '',
    };
  }
  return fallback;
}
