/**
 * The patch types the API server accepts: JSON merge patch (RFC 7386), a strategic merge patch (a merge patch,
 * except that lists of objects carrying a merge key — `name` for containers, env, volumes and most lists, the
 * port for ports, `mountPath` for volume mounts — merge item by item, with `$patch: delete|replace`), and JSON
 * patch (RFC 6902). Server-side apply is a merge patch here (see the entry file).
 */
import { clone, isObj, KubeStatusError, same, type Obj } from './types.ts';

/**
 * RFC 7386: objects merge recursively, `null` removes a key, anything else replaces.
 *
 * @example
 * mergePatch({ a: 1, b: { c: 2 } }, { b: { c: null, d: 3 } }); // { a: 1, b: { d: 3 } }
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  const out: Obj = isObj(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** The merge key of a list at `key` whose items are objects, or undefined to replace the list. */
function mergeKey(key: string, items: Obj[]): string | undefined {
  const candidates =
    key === 'ports' ? ['containerPort', 'port', 'name']
    : key === 'volumeMounts' || key === 'volumeDevices' ? ['mountPath', 'devicePath']
    : key === 'conditions' ? ['type']
    : ['name'];
  return candidates.find((c) => items.length > 0 && items.every((i) => i[c] !== undefined));
}

/**
 * A strategic merge patch, good enough for what clients send: maps merge as in a merge patch, lists of objects
 * with a merge key merge by it (an item with `$patch: delete` removes its match), other lists are replaced.
 *
 * @example
 * strategicMergePatch({ containers: [{ name: 'a', image: 'x:1' }, { name: 'b', image: 'y' }] }, { containers: [{ name: 'a', image: 'x:2' }] });
 * // { containers: [{ name: 'a', image: 'x:2' }, { name: 'b', image: 'y' }] }
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return clone(rest);
  }
  if (patch.$patch === 'delete') return undefined;
  const out: Obj = isObj(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) {
      delete out[key];
      continue;
    }
    const current = out[key];
    if (Array.isArray(value) && Array.isArray(current) && value.every(isObj) && current.every(isObj)) {
      const mk = mergeKey(key, [...(value as Obj[]).filter((v) => v.$patch !== 'replace'), ...(current as Obj[])]);
      if (value.some((v) => (v as Obj).$patch === 'replace')) {
        out[key] = value.filter((v) => (v as Obj).$patch !== 'replace').map((v) => strategicMergePatch(undefined, v));
        continue;
      }
      if (mk) {
        const merged: Obj[] = clone(current as Obj[]);
        for (const item of value as Obj[]) {
          const at = merged.findIndex((m) => same(m[mk], item[mk]));
          if (item.$patch === 'delete') {
            if (at >= 0) merged.splice(at, 1);
          } else if (at >= 0) merged[at] = strategicMergePatch(merged[at], item) as Obj;
          else merged.push(strategicMergePatch(undefined, item) as Obj);
        }
        out[key] = merged;
        continue;
      }
    }
    const next = strategicMergePatch(current, value);
    if (next === undefined) delete out[key];
    else out[key] = next;
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw invalid(`invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function invalid(message: string): KubeStatusError {
  return new KubeStatusError(422, 'Invalid', message);
}

/** The parent of a pointer's target and the last key. */
function locate(doc: unknown, parts: string[], op: string, path: string): { parent: Obj | unknown[]; key: string } {
  let parent: unknown = doc;
  for (const part of parts.slice(0, -1)) {
    parent =
      Array.isArray(parent) ? parent[Number(part)]
      : isObj(parent) ? parent[part]
      : undefined;
    if (parent === undefined || parent === null || typeof parent !== 'object') throw invalid(`${op} operation does not apply: doc is missing path: "${path}": missing value`);
  }
  return { parent: parent as Obj | unknown[], key: parts[parts.length - 1] as string };
}

function getAt(doc: unknown, path: string): unknown {
  let value = doc;
  for (const part of pointer(path))
    value =
      Array.isArray(value) ? value[Number(part)]
      : isObj(value) ? value[part]
      : undefined;
  return value;
}

function remove(doc: unknown, path: string, op: string): unknown {
  const { parent, key } = locate(doc, pointer(path), op, path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!(i >= 0 && i < parent.length)) throw invalid(`${op} operation does not apply: doc is missing path: "${path}": missing value`);
    return parent.splice(i, 1)[0];
  }
  if (!Object.hasOwn(parent, key)) throw invalid(`${op} operation does not apply: doc is missing path: "${path}": missing value`);
  const value = (parent as Obj)[key];
  delete (parent as Obj)[key];
  return value;
}

function add(doc: unknown, path: string, value: unknown, replace: boolean): unknown {
  const parts = pointer(path);
  if (parts.length === 0) return clone(value);
  const { parent, key } = locate(doc, parts, replace ? 'replace' : 'add', path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!(i >= 0 && i <= parent.length) || (replace && i >= parent.length)) throw invalid(`${replace ? 'replace' : 'add'} operation does not apply: doc is missing path: "${path}"`);
    if (replace) parent[i] = clone(value);
    else parent.splice(i, 0, clone(value));
  } else {
    if (replace && !Object.hasOwn(parent, key)) throw invalid(`replace operation does not apply: doc is missing key: ${path}: missing value`);
    (parent as Obj)[key] = clone(value);
  }
  return doc;
}

/**
 * RFC 6902 on a copy of `target`: add, remove, replace, move, copy, test. A failed test or a missing path is a 422.
 *
 * @example
 * jsonPatch({ spec: { replicas: 1 } }, [{ op: 'replace', path: '/spec/replicas', value: 3 }]); // { spec: { replicas: 3 } }
 */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new KubeStatusError(400, 'BadRequest', 'json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = clone(target);
  for (const raw of ops) {
    if (!isObj(raw)) throw new KubeStatusError(400, 'BadRequest', 'json: cannot unmarshal into Go value of type jsonpatch.Operation');
    const path = String(raw.path ?? '');
    switch (raw.op) {
      case 'add':
        doc = add(doc, path, raw.value, false);
        break;
      case 'replace':
        doc = add(doc, path, raw.value, true);
        break;
      case 'remove':
        remove(doc, path, 'remove');
        break;
      case 'move': {
        const value = remove(doc, String(raw.from), 'move');
        doc = add(doc, path, value, false);
        break;
      }
      case 'copy':
        doc = add(doc, path, getAt(doc, String(raw.from)), false);
        break;
      case 'test':
        if (!same(getAt(doc, path), raw.value)) throw invalid(`testing value ${path} failed: test failed`);
        break;
      default:
        throw new KubeStatusError(400, 'BadRequest', `Unexpected kind: ${String(raw.op)}`);
    }
  }
  return doc;
}
