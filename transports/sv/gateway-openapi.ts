/**
 * The gateway's own `/openapi.json`: one document of every route, merged
 * from the modules' documents (components merged by name, clashes renamed).
 */
import { isGenerated, operations, type TableRoute, websocketsOf, WS_EXTENSION } from './gateway-routes.ts';
import type { Json, Upstream } from './gateway-upstream.ts';

/**
 * One OpenAPI document of every route: `main`'s built-ins and each module's
 * generated endpoints (tagged `x-svc-module`). Components are merged by name;
 * equal ones are kept once. A name two modules define differently keeps the
 * first module's definition (`main` first, then the modules in declared
 * order) and the later one is renamed `<module>_<Name>`, its `$ref`s (and
 * security requirements, for security schemes) rewritten to match — nothing
 * is overwritten.
 */
export function mergeOpenApi(upstreams: Map<string, Upstream>, table: TableRoute[], main: string, title: string): Json {
  const order = [main, ...[...upstreams.keys()].filter((n) => n !== main)];
  const mainDoc = (upstreams.get(main) as Upstream).doc;
  const paths: Json = {};
  const components: Json = {};
  const owned = new Set(table.map((r) => `${r.module} ${r.method} ${r.path}`));
  const websockets: Json[] = [];
  for (const name of order) {
    const doc = (upstreams.get(name) as Upstream).doc;
    const renames = mergeComponents(components, doc.components ?? {}, name);
    const listed = new Set(websocketsOf(doc));
    for (const w of Array.isArray(doc[WS_EXTENSION]) ? (doc[WS_EXTENSION] as Json[]) : []) if (listed.delete(w?.path)) websockets.push({ ...w, module: name });
    for (const [path, m, op] of operations(doc)) {
      const generated = owned.has(`${name} ${m.toUpperCase()} ${path}`);
      if (!generated && (name !== main || isGenerated(path, op))) continue;
      const item = (paths[path] ??= {});
      const pathParams = (doc.paths as Json)[path].parameters;
      if (pathParams !== undefined && item.parameters === undefined) item.parameters = rewrite(pathParams, renames);
      item[m] = { ...rewrite(op, renames), ...(generated ? { 'x-svc-module': name } : {}) };
    }
  }
  // `/openapi.json` is the gateway's own.
  return { ...mainDoc, openapi: mainDoc.openapi ?? '3.1.0', info: { ...mainDoc.info, title }, paths, [WS_EXTENSION]: websockets, components };
}

/** Merge one module's components into `into`; returns the renames (`schemas/Name` → new name). */
function mergeComponents(into: Json, from: Json, module: string): Map<string, string> {
  const renames = new Map<string, string>();
  for (const [kind, entries] of Object.entries(from)) {
    if (!entries || typeof entries !== 'object') continue;
    const target = (into[kind] ??= {});
    for (const [name, value] of Object.entries(entries as Json)) {
      if (!(name in target)) continue;
      if (canonical(target[name]) === canonical(value)) continue;
      let renamed = `${module}_${name}`;
      for (let i = 2; renamed in target || renamed in (entries as Json); i++) renamed = `${module}_${name}_${i}`;
      renames.set(`${kind}/${name}`, renamed);
    }
  }
  for (const [kind, entries] of Object.entries(from)) {
    if (!entries || typeof entries !== 'object') continue;
    const target = into[kind] as Json;
    for (const [name, value] of Object.entries(entries as Json)) {
      const renamed = renames.get(`${kind}/${name}`);
      if (renamed !== undefined) target[renamed] = rewrite(value, renames);
      else if (!(name in target)) target[name] = rewrite(value, renames);
    }
  }
  return renames;
}

/** A deep copy of `value` with renamed components' `$ref`s and security requirement names rewritten. */
function rewrite(value: unknown, renames: Map<string, string>, key?: string): any {
  if (Array.isArray(value)) {
    if (key === 'security') {
      return value.map((req: Json) => Object.fromEntries(Object.entries(req).map(([k, v]) => [renames.get(`securitySchemes/${k}`) ?? k, v])));
    }
    return value.map((v) => rewrite(v, renames));
  }
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string' && renames.size > 0) {
      const m = /^#\/components\/([^/]+)\/(.+)$/.exec(v);
      const renamed = m && renames.get(`${m[1]}/${m[2]}`);
      out[k] = renamed ? `#/components/${m[1]}/${renamed}` : v;
    } else out[k] = rewrite(v, renames, k);
  }
  return out;
}

/** JSON with sorted keys: equal schemas compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}
