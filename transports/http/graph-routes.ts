/**
 * The graph as JSON and as a page: `POST /traverse` (a token), `GET
 * /graph/data` (an optional token: the caller's graph, or the public one
 * without), `GET /graph` (the visualizer). Both JSON routes run the
 * runtime's traversal walker ({@link TRAVERSE_WALKER}) in the caller's
 * partition, so they see exactly what the caller's walkers would.
 */
import type { Graph } from '../../actors/graph/index.ts';
import { type Authenticator, bearer } from '../../actors/identity/index.ts';
import { type Caller, Root, TRAVERSE_MAX_NODES, TRAVERSE_WALKER } from '../../actors/walker/index.ts';
import { httpError, HttpError, unauthorizedAsHttp } from './errors.ts';
import { graphPage } from './graph-page.ts';
import type { BuiltinRoute } from './types.ts';

const ID = '^[0-9a-f]{32}$';

const NODE = { type: 'object', required: ['id', 'type'], properties: { id: { type: 'string', pattern: ID }, type: { type: 'string' }, context: { type: 'object', description: 'its fields (detailed)' } } };
const EDGE = { ...NODE, required: ['id', 'type', 'source', 'target'], properties: { ...NODE.properties, source: { type: 'string', pattern: ID }, target: { type: 'string', pattern: ID } } };

/** The `data` of both JSON routes. */
const TRAVERSAL = {
  type: 'object',
  required: ['source', 'depth', 'nodes', 'edges', 'truncated', 'frontier'],
  properties: {
    source: { type: 'string', description: 'the id of the node the walk started at' },
    depth: { type: 'integer' },
    nodes: { type: 'array', items: NODE, description: 'breadth-first from the source (first)' },
    edges: { type: 'array', items: EDGE, description: 'outgoing edges between listed nodes' },
    truncated: { type: 'boolean', description: 'the node limit cut the walk short' },
    frontier: { type: 'array', items: { type: 'string' }, description: 'listed nodes whose edges were not followed: traverse from one to see further' },
  },
};

const TRAVERSE_BODY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    source: { type: 'string', default: 'root', description: '`root` (the caller’s root) or a node id' },
    depth: { type: 'integer', minimum: 0, maximum: 100, default: 1 },
    detailed: { type: 'boolean', default: false, description: 'include each node’s and edge’s fields (context)' },
    node_types: { type: 'array', items: { type: 'string' }, default: [], description: 'only nodes of these types (all when empty)' },
    edge_types: { type: 'array', items: { type: 'string' }, default: [], description: 'only edges of these types (all when empty)' },
    limit: { type: 'integer', minimum: 1, maximum: TRAVERSE_MAX_NODES, default: 1000, description: 'most nodes answered' },
  },
};

const FIELDS = new Set(Object.keys(TRAVERSE_BODY.properties));

/** Where a traversal starts: `root` (or nothing) is the caller's root. */
function startAt(source: unknown, route: string): string | undefined {
  if (source === undefined || source === 'root') return undefined;
  if (typeof source !== 'string' || source === '') throw invalid(route, 'source', 'must be "root" or a node id');
  if (!/^[0-9a-f]{32}$/.test(source)) throw httpError('NOT_FOUND', `no node ${JSON.stringify(source.slice(0, 64))} readable by this caller`);
  return source;
}

/** A 400 in the shape of the walkers' field errors: `details` lists `{field, message}`. */
function invalid(route: string, field: string, message: string): HttpError {
  return httpError('VALIDATION_ERROR', `${route}: field "${field}" ${message}`, [{ field, message }]);
}

/** Query values of `GET /graph/data` as traversal fields: integers and booleans as such, lists comma-separated. */
function fromQuery(query: string): Record<string, unknown> {
  const params = new URLSearchParams(query);
  const out: Record<string, unknown> = {};
  for (const [key, value] of params) {
    // `_=<time>`: a cache-buster, as the app's GET endpoints allow.
    if (key === '_') continue;
    if (!FIELDS.has(key)) throw httpError('VALIDATION_ERROR', `graph data: unknown query parameter "${key}"`, [{ field: key, message: 'is not a parameter of /graph/data' }]);
    if (key in out) throw invalid('graph data', key, 'is given more than once');
    if (key === 'depth' || key === 'limit') {
      if (!/^-?\d{1,9}$/.test(value)) throw invalid('graph data', key, 'must be a whole number');
      out[key] = Number(value);
    } else if (key === 'detailed') {
      if (value !== 'true' && value !== 'false') throw invalid('graph data', key, 'must be true or false');
      out[key] = value === 'true';
    } else if (key === 'node_types' || key === 'edge_types') {
      out[key] = value.split(',').filter((v) => v !== '');
    } else out[key] = value;
  }
  return out;
}

export interface GraphRoutesOptions {
  graph: Graph;
  auth: Authenticator;
  timeoutMs: number;
  /** `/graph/data` without a token answers the public (guest) graph (default); false: a token is needed. */
  publicGraph?: boolean;
}

export function graphRoutes({ graph, auth, timeoutMs, publicGraph = true }: GraphRoutesOptions): BuiltinRoute[] {
  const run = async (route: string, caller: Caller, given: Record<string, unknown>, traceId: string): Promise<{ json: string }> => {
    const unknown = Object.keys(given).filter((k) => !FIELDS.has(k));
    if (unknown.length > 0) {
      throw httpError(
        'VALIDATION_ERROR',
        `${route}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}`,
        unknown.map((field) => ({ field, message: 'is not a field of this route' })),
      );
    }
    const { source, ...fields } = given;
    const at = startAt(source, route);
    let json: string;
    try {
      ({ json } = await graph.spawnJson(TRAVERSE_WALKER, fields, { caller, timeoutMs, traceId, ...(at === undefined ? {} : { at }) }));
    } catch (error) {
      // Field errors name the walker: here it is the route.
      if (error instanceof Error && error.message.startsWith(`${TRAVERSE_WALKER}:`)) error.message = `${route}${error.message.slice(TRAVERSE_WALKER.length)}`;
      throw error;
    }
    // The walker's one report, as it is: `[{…}]` → `{…}`.
    return { json: json.slice(1, -1) };
  };
  /** The caller of a request with an optional token: a bad token is refused, none is the guest. */
  const optionalCaller = async (header: string | undefined): Promise<Caller> => {
    if (!header) {
      if (publicGraph) return { rootId: Root.SHARED_ID };
      throw httpError('UNAUTHORIZED', 'GET /graph/data needs a bearer token here ([scale.graph] public = false)');
    }
    const token = bearer(header);
    if (token === undefined) throw httpError('UNAUTHORIZED', 'the Authorization header must be "Bearer <token>"');
    const wait = auth.prepare(token);
    if (wait) await wait;
    try {
      const who = auth.authenticate(token);
      if (who.mustChangePassword) throw new HttpError(403, { code: 'PASSWORD_CHANGE_REQUIRED', message: 'change the password first (PUT /user/password)' });
      return who.caller;
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw unauthorizedAsHttp(error);
    }
  };
  return [
    {
      method: 'POST',
      path: '/traverse',
      auth: 'token',
      hooks: true,
      doc: { summary: 'Walk the caller’s graph from a node along outgoing edges, as the caller’s walkers see it (404 NOT_FOUND: a source the caller may not read)', body: TRAVERSE_BODY, data: TRAVERSAL, tag: 'graph', errors: { '404': 'NOT_FOUND (a source the caller may not read, whether it exists or not)' } },
      handler: async ({ body, req, traceId }) => {
        const given = body();
        if (typeof given !== 'object' || given === null || Array.isArray(given)) throw httpError('VALIDATION_ERROR', 'traverse: the body must be a JSON object');
        return run('traverse', await optionalCaller(req.headers.authorization), given, traceId);
      },
    },
    {
      method: 'GET',
      path: '/graph/data',
      auth: 'none',
      hooks: true,
      doc: {
        summary: 'The graph as nodes and edges: the caller’s with a token, the public (guest) graph without; bounded by depth and limit',
        data: TRAVERSAL,
        tag: 'graph',
        errors: { '401': 'UNAUTHORIZED (a bad or expired token; or none where [scale.graph] public is false)', '404': 'NOT_FOUND (a source the caller may not read)' },
        query: [
          { name: 'source', schema: { type: 'string', default: 'root' }, description: '`root` or a node id' },
          { name: 'depth', schema: { type: 'integer', minimum: 0, maximum: 100, default: 3 } },
          { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: TRAVERSE_MAX_NODES, default: 1000 }, description: 'most nodes answered' },
          { name: 'detailed', schema: { type: 'boolean', default: true }, description: 'include fields' },
          { name: 'node_types', schema: { type: 'string' }, description: 'comma-separated node types (all when absent)' },
          { name: 'edge_types', schema: { type: 'string' }, description: 'comma-separated edge types (all when absent)' },
        ],
      },
      handler: async ({ req, traceId }) => run('graph data', await optionalCaller(req.headers.authorization), { depth: 3, detailed: true, ...fromQuery(req.query) }, traceId),
    },
    {
      method: 'GET',
      path: '/graph',
      auth: 'none',
      doc: { summary: 'The graph visualizer (a page; reads the token from localStorage.svc_token)', produces: 'text/html', tag: 'graph' },
      handler: () => ({ raw: graphPage() }),
    },
  ];
}
