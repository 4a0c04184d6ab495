/**
 * JSON paths as problems name them (`spec.template.spec.containers[0].ports`,
 * `metadata.labels["app.kubernetes.io/name"]`) and small readers of plain
 * JSON objects.
 */

/** A plain JSON object. */
export type Json = Record<string, unknown>;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * The path of `key` inside `path`: `.key` for identifiers, `[n]` for array
 * indexes, `["a.b/c"]` for other keys.
 *
 * @example
 * at('spec', 'containers'); // 'spec.containers'
 * at('spec.containers', 0); // 'spec.containers[0]'
 * at('metadata.labels', 'app.kubernetes.io/name'); // 'metadata.labels["app.kubernetes.io/name"]'
 */
export function at(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (IDENTIFIER.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

/** `value` when it is a plain object (not an array, not null). */
export function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

/** `value` when it is an array, else an empty one. */
export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** `value` when it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A short rendering of a value for a message. */
export function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
