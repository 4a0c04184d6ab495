/**
 * OpenAPI 3.1 for an app: every generated endpoint with its fields (the
 * `has` schemas are JSON Schema already), the response envelope, the
 * built-in routes, and webhook routes with their security schemes (an API
 * key, and the body's HMAC when signatures are verified).
 */
import type { TSchema } from 'typebox';
import { IDENTITY_ERRORS } from '../../actors/identity/index.ts';
import { HTTP_ERRORS } from './errors.ts';
import { RUNTIME_FIELDS } from './params.ts';
import type { EndpointRoute } from './router.ts';
import type { BuiltinRoute } from './types.ts';

type Json = Record<string, unknown>;

/** A TypeBox schema as plain JSON Schema (no symbols, upload markers turned into binary strings). */
function plain(schema: TSchema): Json {
  return JSON.parse(JSON.stringify(schema), (_k, v: unknown) => {
    if (v && typeof v === 'object' && (v as Json)['x-svc-upload']) {
      const max = (v as Json).maxBytes;
      return typeof max === 'number' ? { type: 'string', format: 'binary', maxLength: max, description: `a file of at most ${max} bytes` } : { type: 'string', format: 'binary' };
    }
    return v;
  }) as Json;
}

const META = { type: 'object', properties: { request_id: { type: 'string', examples: ['k2x9fq-1a'] } }, required: ['request_id'] };

/**
 * A success: `error` is `null` (never absent). Success and failure are two schemas rather than one
 * with `oneOf` members, so documentation samples (ReDoc's, Swagger UI's) show `null` where the wire has it.
 */
const ENVELOPE = {
  type: 'object',
  required: ['ok', 'type', 'data', 'error', 'meta'],
  properties: {
    ok: { const: true },
    type: { const: 'response' },
    data: {
      type: ['object', 'null'],
      properties: { result: {}, reports: { type: 'array', items: {} } },
    },
    error: { type: 'null' },
    meta: META,
  },
};

/** A failure: `data` is `null`, `error` says what went wrong. */
const ERROR_ENVELOPE = {
  type: 'object',
  required: ['ok', 'type', 'data', 'error', 'meta'],
  properties: {
    ok: { const: false },
    type: { const: 'response' },
    data: { type: 'null' },
    error: { $ref: '#/components/schemas/Error' },
    meta: META,
  },
};

const ERROR = {
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'string', examples: Object.keys(HTTP_ERRORS) },
    message: { type: 'string' },
    details: { description: 'more about the error where there is more (the fields a VALIDATION_ERROR names); absent otherwise' },
  },
  // The sample documentation shows: a real error (an absent `details` stays absent).
  examples: [{ code: 'UNAUTHORIZED', message: HTTP_ERRORS.UNAUTHORIZED.message }],
};

/**
 * An error answer, its description starting with the code it shows; the example is that error as it is on
 * the wire (without one, documentation samples would show the first code of all for every status).
 */
function errorResponse(description: string, message?: string): Json {
  // A description starts with its code (`NOT_FOUND: …`, `SSO_NOT_CONFIGURED (…)`); the example's message is the catalogue's.
  const code = /^[A-Z][A-Z0-9_]+/.exec(description)?.[0] ?? 'ERROR';
  const catalogue = { ...HTTP_ERRORS, ...IDENTITY_ERRORS } as Record<string, { message: string }>;
  const text = message ?? catalogue[code]?.message ?? description;
  const example = { ok: false, type: 'response', data: null, error: { code, message: text }, meta: { request_id: 'k2x9fq-1a' } };
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' }, example } } };
}

/** What the document says of webhooks: `[scale.webhook]`'s header names and checks. */
export interface OpenApiWebhookOptions {
  signatureHeader: string;
  timestampHeader: string;
  verifySignature: boolean;
  requireTimestamp: boolean;
  toleranceSeconds: number;
}

/** Options of {@link openApiDocument}. */
export interface OpenApiOptions {
  /** How webhook routes authenticate (default: the `[scale.webhook]` defaults). */
  webhook?: OpenApiWebhookOptions;
  /**
   * The app's WebSocket walkers (served at `/ws/<name>`). OpenAPI cannot
   * describe a WebSocket: they are listed under the document's
   * `x-svc-websockets` extension, which the microservice gateway routes by.
   */
  websockets?: { name: string; access: string; broadcast: boolean }[];
}

const WEBHOOK_DEFAULTS: OpenApiWebhookOptions = {
  signatureHeader: 'X-Webhook-Signature',
  timestampHeader: 'X-Webhook-Timestamp',
  verifySignature: true,
  requireTimestamp: false,
  toleranceSeconds: 300,
};

/** `POST /webhook/<Name>`: a JSON body of the walker's fields (more are accepted and ignored), an API key and, when verified, a signature. */
function webhookOperation(route: EndpointRoute, w: OpenApiWebhookOptions): Json {
  const props = (route.schema.properties ?? {}) as Record<string, TSchema>;
  const required = new Set<string>((route.schema as { required?: string[] }).required ?? []);
  const fields = Object.keys(props).filter((k) => !RUNTIME_FIELDS.has(k));
  const body = {
    type: 'object',
    properties: Object.fromEntries(fields.map((k) => [k, plain(props[k] as TSchema)])),
    required: fields.filter((k) => required.has(k)),
    additionalProperties: true,
    description: 'the walker\'s fields; other fields are accepted and ignored',
  };
  // One status, several codes: each with its example as on the wire.
  const refusals: [string, string][] = [
    ['UNAUTHORIZED', 'a valid API key is required in the X-API-Key header'],
    ...(w.verifySignature ? [['INVALID_SIGNATURE', 'the webhook signature is missing or does not match the body'] as [string, string]] : []),
    ['INVALID_TIMESTAMP', 'the webhook timestamp is missing, malformed, or outside the allowed window'],
  ];
  const unauthorized = {
    description: `${refusals.map(([code]) => code).join(', ')}: a missing, unknown, expired or revoked API key is UNAUTHORIZED (one answer for all)`,
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/ErrorEnvelope' },
        examples: Object.fromEntries(refusals.map(([code, message]) => [code, { value: { ok: false, type: 'response', data: null, error: { code, message }, meta: { request_id: 'k2x9fq-1a' } } }])),
      },
    },
  };
  return {
    operationId: `webhook_${route.name}`,
    summary: `Webhook ${route.name}`,
    description:
      `Runs walker ${route.name} on the root of the API key's owner. Content-Type must be application/json. ` +
      (w.verifySignature ? `The ${w.signatureHeader} header carries the HMAC-SHA256 of the raw body, keyed with the server's webhook secret. ` : '') +
      `Served only here, never under /walker/.`,
    tags: ['webhooks'],
    parameters: [
      {
        name: w.timestampHeader,
        in: 'header',
        required: w.requireTimestamp,
        schema: { type: 'string', pattern: '^[0-9]+$' },
        description: `Unix seconds, within ${w.toleranceSeconds} s of the server's clock${w.verifySignature ? `; the signature then covers "<timestamp>.<raw body>"` : ''}`,
      },
    ],
    requestBody: { required: true, content: { 'application/json': { schema: body } } },
    responses: {
      '200': { description: 'success', content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } } },
      '400': errorResponse('VALIDATION_ERROR or INVALID_JSON'),
      '401': unauthorized,
      '403': errorResponse('FORBIDDEN', `this API key may not run ${route.name}`),
      '413': errorResponse('PAYLOAD_TOO_LARGE'),
      '415': errorResponse('UNSUPPORTED_MEDIA_TYPE', 'a webhook takes a JSON body: send Content-Type: application/json'),
      '500': errorResponse('EXECUTION_ERROR'),
      '503': errorResponse('SERVICE_UNAVAILABLE or SVC_ERR_MAILBOX_FULL'),
    },
    security: [w.verifySignature ? { apiKeyAuth: [], webhookSignature: [] } : { apiKeyAuth: [] }],
  };
}

/** The security schemes of webhook routes. */
function webhookSchemes(w: OpenApiWebhookOptions): Json {
  const schemes: Json = { apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'an API key from POST /api-key/create' } };
  if (w.verifySignature) {
    schemes.webhookSignature = {
      type: 'apiKey',
      in: 'header',
      name: w.signatureHeader,
      description:
        'HMAC-SHA256 of the raw request body (the bytes as sent, not a re-serialised JSON), keyed with the server\'s webhook secret ' +
        '([scale.webhook] secret / WEBHOOK_SECRET, never the API key), as 64 hex characters, optionally prefixed "sha256=". ' +
        `With the ${w.timestampHeader} header (Unix seconds, within ${w.toleranceSeconds} s), the HMAC may cover "<timestamp>.<raw body>"` +
        (w.requireTimestamp ? '; here the header is required and only that form is accepted.' : ', or the bare body.'),
    };
  }
  return schemes;
}

function operation(route: EndpointRoute): Json {
  const props = (route.schema.properties ?? {}) as Record<string, TSchema>;
  const required = new Set<string>((route.schema as { required?: string[] }).required ?? []);
  const parameters: Json[] = [];
  for (const name of route.pathParams) {
    const schema = name === 'node_id' && route.spawnAt ? { type: 'string', pattern: '^[0-9a-f]{32}$' } : props[name] ? plain(props[name]) : { type: 'string' };
    parameters.push({ name, in: 'path', required: true, schema, description: name === 'node_id' && route.spawnAt ? 'spawn the walker at this node' : undefined });
  }
  const rest = Object.keys(props).filter((k) => !route.pathParams.includes(k) && !RUNTIME_FIELDS.has(k));
  const files = rest.filter((k) => route.fileFields.includes(k));
  const isGet = route.method === 'GET' || route.method === 'HEAD';
  const op: Json = {
    operationId: `${route.kind}_${route.name}${route.spawnAt ? '_at_node' : ''}`,
    summary: `${route.kind === 'walker' ? 'Walker' : 'Function'} ${route.name}${route.spawnAt ? ' (spawned at a node)' : ''}`,
    tags: [route.kind === 'walker' ? 'walkers' : 'functions'],
    parameters,
    responses: {
      '200': route.envelope
        ? { description: 'success', content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } } }
        : { description: 'the return value as the body', content: { [route.produces ?? 'text/plain']: { schema: { type: 'string' } } } },
      '400': errorResponse('VALIDATION_ERROR or INVALID_JSON'),
      ...(route.access === 'pub' ? {} : { '401': errorResponse('UNAUTHORIZED') }),
      '404': errorResponse('NOT_FOUND'),
      '413': errorResponse('PAYLOAD_TOO_LARGE'),
      '500': errorResponse('EXECUTION_ERROR'),
      '503': errorResponse('SERVICE_UNAVAILABLE or SVC_ERR_MAILBOX_FULL'),
    },
  };
  if (route.access !== 'pub') op.security = [{ bearerAuth: [] }];
  if (isGet) {
    for (const name of rest) parameters.push({ name, in: 'query', required: required.has(name), schema: plain(props[name] as TSchema) });
  } else if (rest.length > 0) {
    const body = { type: 'object', properties: Object.fromEntries(rest.map((k) => [k, plain(props[k] as TSchema)])), required: rest.filter((k) => required.has(k)) };
    op.requestBody = {
      required: body.required.length > 0,
      content: files.length ? { 'multipart/form-data': { schema: body } } : { 'application/json': { schema: body } },
    };
  }
  return op;
}

/** A route the runtime serves itself (users, admin). */
function builtinOperation(route: BuiltinRoute): Json {
  const doc = route.doc ?? { summary: `${route.method} ${route.path}` };
  const status = String(doc.status ?? 200);
  const op: Json = {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    summary: doc.summary,
    tags: [doc.tag ?? (route.path.startsWith('/admin') ? 'admin' : 'users')],
    parameters: [
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
      ...(doc.query ?? []).map((q) => ({ name: q.name, in: 'query', required: false, schema: q.schema, ...(q.description ? { description: q.description } : {}) })),
    ],
    responses: {
      [status]: doc.produces
        ? { description: 'success', content: { [doc.produces]: { schema: { type: 'string' } } } }
        : {
            description: 'success',
            content: {
              'application/json': {
                schema: doc.data ? { allOf: [{ $ref: '#/components/schemas/Envelope' }, { type: 'object', properties: { data: doc.data } }] } : { $ref: '#/components/schemas/Envelope' },
              },
            },
          },
      ...(doc.body || doc.query ? { '400': errorResponse('VALIDATION_ERROR or INVALID_JSON') } : {}),
      ...(route.auth === 'none'
        ? {}
        : route.authFailure === 'forbidden'
          ? { '403': errorResponse('FORBIDDEN (no token, a bad or expired one, or not an admin) or PASSWORD_CHANGE_REQUIRED') }
          : { '401': errorResponse('UNAUTHORIZED'), '403': errorResponse('FORBIDDEN or PASSWORD_CHANGE_REQUIRED') }),
      '429': errorResponse('TOO_MANY_REQUESTS (where rate-limited)', 'too many attempts; wait and retry'),
      ...Object.fromEntries(Object.entries(doc.errors ?? {}).map(([status, what]) => [status, errorResponse(what)])),
    },
  };
  if (route.auth !== 'none') op.security = [{ bearerAuth: [] }];
  if (doc.body) op.requestBody = { required: true, content: { 'application/json': { schema: doc.body } } };
  return op;
}

/**
 * The OpenAPI 3.1 document: the app's endpoints, then the runtime's own (`builtins`).
 *
 * @example
 * openApiDocument(buildRoutes(registry), { title: 'shop', version: '1.0.0' }, builtinRoutes, {
 *   webhook: { signatureHeader: 'X-Webhook-Signature', timestampHeader: 'X-Webhook-Timestamp', verifySignature: true, requireTimestamp: false, toleranceSeconds: 300 },
 * });
 */
export function openApiDocument(routes: EndpointRoute[], info: { title: string; version: string }, builtins: BuiltinRoute[] = [], options: OpenApiOptions = {}): Json {
  const paths: Record<string, Json> = {};
  const webhook = options.webhook ?? WEBHOOK_DEFAULTS;
  for (const route of routes) {
    const entry = (paths[route.template] ??= {});
    entry[route.method.toLowerCase()] = route.webhook ? webhookOperation(route, webhook) : operation(route);
  }
  for (const route of builtins) {
    const entry = (paths[route.path] ??= {});
    entry[route.method.toLowerCase()] = builtinOperation(route);
  }
  const builtin = (summary: string, schema: Json = { type: 'object' }) => ({
    get: { summary, tags: ['built-in'], responses: { '200': { description: summary, content: { 'application/json': { schema } } } } },
  });
  Object.assign(paths, {
    '/health': builtin('liveness'),
    '/ready': builtin('readiness (503 while starting or draining)'),
    '/healthz': builtin('liveness', { type: 'object', properties: { status: { const: 'ok' } } }),
    '/healthz/live': builtin('liveness', { type: 'object', properties: { status: { const: 'alive' } } }),
    '/healthz/ready': builtin('readiness (503 while starting or draining)', { type: 'object', properties: { status: { type: 'string' } } }),
    '/svc/live.js': {
      get: {
        summary: 'the reconnecting WebSocket client for browsers (an ES module: LiveSocket — rooms, rejoin, resume)',
        tags: ['built-in'],
        responses: { '200': { description: 'JavaScript', content: { 'application/javascript': { schema: { type: 'string' } } } } },
      },
    },
  });
  return {
    openapi: '3.1.0',
    info,
    paths,
    'x-svc-websockets': (options.websockets ?? []).map((w) => ({ path: `/ws/${w.name}`, walker: w.name, access: w.access, broadcast: w.broadcast })),
    components: {
      schemas: { Envelope: ENVELOPE, ErrorEnvelope: ERROR_ENVELOPE, Error: ERROR },
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, ...(routes.some((r) => r.webhook) ? webhookSchemes(webhook) : {}) },
    },
  };
}
