/**
 * The endpoints an app gets: `POST /walker/<Name>`,
 * `/walker/<Name>/{node_id}` (spawn at a node, always served),
 * `POST /function/<name>`, or the method and path a `restspec` gives; webhook
 * walkers at `POST /webhook/<Name>` only. Hook walkers (`_Name`) and
 * WebSocket walkers are not served here.
 */
import type { TObject, TSchema } from 'typebox';
import { APIProtocol, type EndpointAccess, type FunctionDef, type Registry, takesAnyFields, type WalkerClass, walkerInfo } from '../../actors/walker/index.ts';

export interface EndpointRoute {
  kind: 'walker' | 'function';
  name: string;
  method: string;
  /** The path as declared, `{name}` for parameters. */
  template: string;
  pathParams: string[];
  /** The `/walker/<Name>/{node_id}` variant. */
  spawnAt: boolean;
  access: EndpointAccess;
  schema: TObject;
  /** Fields of type `T.Upload()` (multipart parts). */
  fileFields: string[];
  /** Undeclared fields from the client are not refused (webhooks, walkers reading the raw body): `takesAnyFields`. */
  takesAny?: boolean;
  /** A webhook walker (`protocol: APIProtocol.WEBHOOK`): `POST /webhook/<Name>`, an API key and a signature instead of a token. */
  webhook?: boolean;
  envelope: boolean;
  produces: string | undefined;
  /** Literal segments, or null where a parameter goes. */
  segments: (string | null)[];
}

/** What the router needs of a route. */
export interface Routable {
  method: string;
  template: string;
  pathParams: string[];
  /** Literal segments, or null where a parameter goes. */
  segments: (string | null)[];
}

export interface RouteMatch<R extends Routable = EndpointRoute> {
  route: R;
  params: Record<string, string>;
}

function isUpload(schema: TSchema | undefined): boolean {
  return !!schema && (schema as { 'x-svc-upload'?: boolean })['x-svc-upload'] === true;
}

export function parseTemplate(template: string): { segments: (string | null)[]; params: string[] } {
  const params: string[] = [];
  const segments = template
    .split('/')
    .slice(1)
    .map((seg) => {
      const m = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(seg);
      if (m) {
        params.push(m[1] as string);
        return null;
      }
      if (seg.includes('{') || seg.includes('}')) throw new Error(`path ${template}: a {parameter} must be a whole segment`);
      return seg;
    });
  return { segments, params };
}

function route(partial: Omit<EndpointRoute, 'segments' | 'pathParams' | 'fileFields'>): EndpointRoute {
  if (!partial.template.startsWith('/')) throw new Error(`path of ${partial.name} must start with /: ${partial.template}`);
  const { segments, params } = parseTemplate(partial.template);
  const props = partial.schema.properties as Record<string, TSchema>;
  const fileFields = Object.keys(props).filter((k) => isUpload(props[k]));
  return { ...partial, segments, pathParams: params, fileFields };
}

/** Every HTTP endpoint of an app. Throws on two endpoints with one method and path. */
export function buildRoutes(registry: Registry): EndpointRoute[] {
  const routes: EndpointRoute[] = [];
  for (const [name, def] of registry.functions) routes.push(functionRoute(name, def));
  for (const [name, cls] of registry.walkers) {
    if (name.startsWith('_')) continue; // hook walkers run before routes; they are not routes
    const spec = cls.spec ?? {};
    if (spec.protocol === APIProtocol.WEBHOOK) {
      routes.push(webhookRoute(name, cls));
      continue;
    }
    if (spec.protocol && spec.protocol !== APIProtocol.HTTP) continue;
    const method = spec.method ?? 'POST';
    const base = {
      kind: 'walker' as const,
      name,
      method,
      access: cls.access ?? 'priv',
      schema: walkerInfo(cls).schema,
      envelope: true,
      produces: undefined,
      takesAny: takesAnyFields(walkerInfo(cls).schema, spec.protocol),
    };
    routes.push(route({ ...base, template: spec.path ?? `/walker/${name}`, spawnAt: false }));
    routes.push(route({ ...base, template: `/walker/${name}/{node_id}`, spawnAt: true }));
  }
  const seen = new Map<string, string>();
  for (const r of routes) {
    const key = `${r.method} ${r.segments.map((s) => s ?? '{}').join('/')}`;
    const other = seen.get(key);
    if (other) throw new Error(`${r.kind} ${r.name} and ${other} are both served at ${r.method} ${r.template}`);
    seen.set(key, `${r.kind} ${r.name}`);
  }
  return routes;
}

/**
 * A webhook walker: `POST /webhook/<Name>` only — no
 * `/walker/<Name>`, no `/{node_id}` variant (a sender cannot pick where on
 * the key owner's graph the walker starts). Senders post more than a walker
 * declares, so undeclared fields are taken (and dropped), never refused.
 */
function webhookRoute(name: string, cls: WalkerClass): EndpointRoute {
  const spec = cls.spec ?? {};
  // Webhooks are served at one place: a path or method given anyway would be silently ignored, so it stops the start.
  if (spec.path !== undefined) throw new Error(`webhook walker ${name}: restspec path does not apply (webhooks are served at POST /webhook/${name})`);
  if (spec.method !== undefined && spec.method !== 'POST') throw new Error(`webhook walker ${name}: webhooks are served with POST only, not ${spec.method}`);
  const schema = walkerInfo(cls).schema;
  const r = route({
    kind: 'walker',
    name,
    method: 'POST',
    template: `/webhook/${name}`,
    spawnAt: false,
    access: cls.access ?? 'priv',
    schema,
    envelope: true,
    produces: undefined,
    takesAny: true,
    webhook: true,
  });
  // A webhook body is JSON only: no multipart parts, so no upload is ever streamed for it before the key is checked.
  r.fileFields = [];
  return r;
}

function functionRoute(name: string, def: FunctionDef): EndpointRoute {
  return route({
    kind: 'function',
    name,
    method: def.spec.method ?? 'POST',
    template: def.spec.path ?? `/function/${name}`,
    spawnAt: false,
    access: def.access,
    schema: def.params,
    envelope: def.spec.envelope !== false,
    produces: def.spec.produces,
    takesAny: takesAnyFields(def.params, def.spec.protocol),
  });
}

/**
 * Finds the route of a method and path: an exact lookup for literal paths,
 * segment matching for the rest.
 */
export class Router<R extends Routable = EndpointRoute> {
  /** Literal paths: method → path → route. */
  private readonly exact = new Map<string, Map<string, R>>();
  private readonly templated: R[] = [];
  /** Methods served per literal path, for 405 answers. */
  private readonly literalMethods = new Map<string, Set<string>>();
  /** First segments of the templated routes, when all are literal: other paths skip the segment matching. */
  private readonly templatedFirst: Set<string> | undefined;

  constructor(readonly routes: R[]) {
    for (const r of routes) {
      if (r.pathParams.length === 0) {
        let byPath = this.exact.get(r.method);
        if (!byPath) this.exact.set(r.method, (byPath = new Map()));
        byPath.set(r.template, r);
        const methods = this.literalMethods.get(r.template) ?? new Set();
        methods.add(r.method);
        this.literalMethods.set(r.template, methods);
      } else {
        this.templated.push(r);
      }
    }
    const firsts = this.templated.map((r) => r.segments[0]);
    this.templatedFirst = firsts.every((f) => typeof f === 'string') ? new Set(firsts as string[]) : undefined;
  }

  /** The route, or the methods allowed on that path (405), or nothing (404). */
  match(method: string, path: string): RouteMatch<R> | { allowed: string[] } | undefined {
    const hit = this.exact.get(method)?.get(path);
    if (hit) return { route: hit, params: {} };
    const literal = this.literalMethods.get(path);
    if (this.templatedFirst) {
      const end = path.indexOf('/', 1);
      if (!this.templatedFirst.has(end < 0 ? path.slice(1) : path.slice(1, end))) return literal ? { allowed: [...literal] } : undefined;
    }
    // Nothing allocated for the routes that do not match: params only for the one that does, `allowed` only for a 405.
    let allowed: Set<string> | undefined;
    const parts = path.split('/');
    const n = parts.length - 1;
    for (const r of this.templated) {
      const segments = r.segments;
      if (segments.length !== n) continue;
      let ok = true;
      for (let i = 0; i < n; i++) {
        const seg = segments[i];
        const part = parts[i + 1] as string;
        if (seg === null ? part === '' : seg !== part) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      if (r.method === method) {
        const params: Record<string, string> = {};
        let p = 0;
        for (let i = 0; i < n; i++) if (segments[i] === null) params[r.pathParams[p++] as string] = parts[i + 1] as string;
        return { route: r, params };
      }
      (allowed ??= new Set(literal)).add(r.method);
    }
    if (allowed === undefined) return literal ? { allowed: [...literal] } : undefined;
    return allowed.size ? { allowed: [...allowed] } : undefined;
  }
}
