/**
 * The MongoDB driver, loaded on first use: an app that never names a
 * `mongodb://` URI never loads it (it costs ~0.4 s and tens of MB at start).
 * Loaded with `require` so the backends' synchronous paths (a
 * `MongoDocBackend` made by `kvstore()`) stay synchronous; a driver error can
 * only exist once the driver is loaded, so {@link loadedMongo} answers the
 * `instanceof` checks of error paths without loading it.
 */
import { createRequire } from 'node:module';
import type * as Mongo from 'mongodb';

const load = createRequire(import.meta.url);
let driver: typeof Mongo | undefined;

/**
 * The driver (loaded now if it was not).
 *
 * @example
 * const client = new (mongo().MongoClient)(uri);
 */
export function mongo(): typeof Mongo {
  return (driver ??= load('mongodb') as typeof Mongo);
}

/**
 * The driver if it was loaded, else undefined (no driver error exists then).
 *
 * @example
 * if (error instanceof (loadedMongo()?.MongoError ?? NotLoaded)) retry();
 */
export function loadedMongo(): typeof Mongo | undefined {
  return driver;
}

/** A class nothing is an instance of: what `instanceof` tests against while the driver is not loaded. */
export class NotLoaded {}
