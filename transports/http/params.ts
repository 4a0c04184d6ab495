/**
 * Where an endpoint's fields come from (seed 000 §4.1 rule 4): path
 * parameters first, then uploaded files, then — for GET — the query string,
 * then the JSON body. Path, query and multipart text values are strings on
 * the wire and are converted to the declared types; JSON bodies are
 * validated as they are, never converted.
 */
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { httpError } from './errors.ts';
import { boundaryOf, parseMultipart } from './multipart.ts';
import type { EndpointRoute } from './router.ts';
import type { HttpRequest } from './types.ts';

function convert(schema: TSchema | undefined, raw: string): unknown {
  if (!schema) return raw;
  return Value.Convert(schema, raw);
}

function decodeSegment(value: string, name: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw httpError('VALIDATION_ERROR', `path parameter ${name} is not valid percent-encoding`);
  }
}

/** The parsed JSON body: an object, `{}` when empty. */
export function jsonBody(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw httpError('INVALID_JSON', `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw httpError('VALIDATION_ERROR', 'the body must be a JSON object of fields');
  }
  return parsed as Record<string, unknown>;
}

export interface Collected {
  fields: Record<string, unknown>;
  /** For `/walker/<Name>/{node_id}`. */
  at: string | undefined;
}

/** The fields of one request for one route. */
export function collectFields(route: EndpointRoute, req: HttpRequest, pathValues: Record<string, string>): Collected {
  const props = route.schema.properties as Record<string, TSchema>;
  const fields: Record<string, unknown> = {};
  let at: string | undefined;

  const boundary = boundaryOf(req.headers['content-type'] ?? '');
  if (boundary) {
    for (const part of parseMultipart(req.body, boundary)) {
      if (!Object.hasOwn(props, part.name)) continue;
      if (route.fileFields.includes(part.name)) {
        fields[part.name] = {
          filename: part.filename ?? '',
          mimetype: part.contentType ?? 'application/octet-stream',
          size: part.data.length,
          data: new Uint8Array(part.data),
        };
      } else {
        fields[part.name] = convert(props[part.name], part.data.toString('utf8'));
      }
    }
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    for (const [k, v] of Object.entries(jsonBody(req.body))) {
      if (Object.hasOwn(props, k) && !route.fileFields.includes(k)) fields[k] = v;
    }
  }

  if (req.method === 'GET' || req.method === 'HEAD') {
    for (const [k, v] of new URLSearchParams(req.query)) {
      if (Object.hasOwn(props, k) && !route.fileFields.includes(k)) fields[k] = convert(props[k], v);
    }
  }

  for (const [name, raw] of Object.entries(pathValues)) {
    const value = decodeSegment(raw, name);
    if (route.spawnAt && name === 'node_id') at = value;
    else fields[name] = convert(props[name], value);
  }
  return { fields, at };
}
