/**
 * The storage room, behind `store()`: files by relative path on a local
 * folder or an object store over the S3 API, one `Storage` interface, chosen
 * by configuration (`createStorage`). Paths are checked before anything is
 * touched (`safeRelative`); uploads are whole or absent; large files stream.
 */
export type { Storage, StorageConfig, StorageType, FileMetadata, UploadedFile, UploadSource } from './types.ts';
export { STORAGE_ERRORS, storageError } from './errors.ts';
export type { StorageErrorCode } from './errors.ts';
export { safeRelative, safePrefix } from './paths.ts';
export { LocalStorage } from './local.ts';
export type { LocalStorageOptions } from './local.ts';
export { ObjectStorage } from './lazy-object.ts';
export type { ObjectStorageOptions } from './object.ts';
export { createStorage, checkStorageConfig, STORAGE_DEFAULTS } from './factory.ts';
