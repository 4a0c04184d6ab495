/**
 * A module behind the gateway (its URL, its keep-alive pool, its OpenAPI
 * document) and the reading of its `/openapi.json` at start.
 */
import type { Pool } from 'undici';
import { GatewayError, reason } from './gateway-errors.ts';

export type Json = Record<string, any>;

/** One module: where it is, its pool, its OpenAPI document. */
export interface Upstream {
  name: string;
  url: URL;
  /** Path prefix of the base URL (`''` for an origin). */
  prefix: string;
  pool: Pool;
  doc: Json;
}

/** GET a module's `/openapi.json`, waiting (up to `deadline`) while it answers 503. */
export async function readOpenApi(u: Upstream, deadline: number): Promise<Json> {
  for (let attempt = 1; ; attempt++) {
    let status: number;
    let text: string;
    try {
      const res = await u.pool.request({ path: `${u.prefix}/openapi.json`, method: 'GET', headers: { accept: 'application/json' } });
      status = res.statusCode;
      text = await res.body.text();
    } catch (error) {
      throw new GatewayError('SVC_ERR_GATEWAY_UNREACHABLE', `module ${u.name} is unreachable at ${u.url.href}: ${reason(error)}`, { cause: error });
    }
    if (status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(50 * attempt, 500)));
      continue;
    }
    if (status !== 200) {
      const hint = status === 404 ? ' (are its docs disabled? the gateway needs them)' : '';
      throw new GatewayError('SVC_ERR_GATEWAY_OPENAPI', `module ${u.name} answered ${status} for ${u.prefix}/openapi.json${hint}`);
    }
    try {
      const doc = JSON.parse(text) as Json;
      if (doc && typeof doc.paths === 'object' && doc.paths !== null) return doc;
    } catch {
      // reported below
    }
    throw new GatewayError('SVC_ERR_GATEWAY_OPENAPI', `module ${u.name}: /openapi.json is not an OpenAPI document`);
  }
}
