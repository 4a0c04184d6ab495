/**
 * `/api-key/*` (README *API keys*): a signed-in user creates, lists and
 * revokes the API keys their webhooks authenticate with. The key itself is
 * in the creation answer only; the list shows no secret, not even a hash.
 */
import { API_KEY_BODY, type ApiKeys } from '../../actors/identity/index.ts';
import type { BuiltinRoute } from './types.ts';

const LISTED = {
  type: 'object',
  properties: {
    api_key_id: { type: 'string', description: '32 hex characters' },
    name: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    expires_at: { type: ['string', 'null'], format: 'date-time', description: 'null: never expires' },
    walkers: { type: ['array', 'null'], items: { type: 'string' }, description: 'the webhook walkers the key may run; null: every one' },
  },
};

/**
 * @example
 * const routes = apiKeyRoutes(new ApiKeys({ users, expiryDays: 365, maxPerUser: 100 }));
 * new Front({ builtinRoutes: [...identityRoutes(service, auth), ...routes], ... });
 */
export function apiKeyRoutes(keys: ApiKeys): BuiltinRoute[] {
  return [
    {
      method: 'POST',
      path: '/api-key/create',
      auth: 'token',
      doc: {
        summary: 'Create an API key for your webhooks (the key is shown in this answer only)',
        status: 201,
        body: API_KEY_BODY.doc,
        tag: 'api-keys',
        data: { type: 'object', properties: { api_key: { type: 'string', description: 'the key: send it as X-API-Key; it is never shown again' }, ...LISTED.properties } },
        errors: { '400': 'VALIDATION_ERROR (a field is missing, of the wrong type or unknown; `walkers` must name webhook walkers of this app)', '404': 'NOT_FOUND (the user is gone)', '409': 'TOO_MANY_API_KEYS (revoke one first)' },
      },
      handler: async (c) => ({ status: 201, data: await keys.create(c.claims.user_id, c.body()) }),
    },
    {
      method: 'GET',
      path: '/api-key/list',
      auth: 'token',
      doc: {
        summary: 'Your API keys, oldest first, without secrets',
        tag: 'api-keys',
        data: { type: 'object', properties: { api_keys: { type: 'array', items: { ...LISTED, properties: { ...LISTED.properties, expired: { type: 'boolean' } } } }, total: { type: 'integer' } } },
      },
      handler: async (c) => {
        const list = await keys.list(c.claims.user_id);
        return { data: { api_keys: list, total: list.length } };
      },
    },
    {
      method: 'DELETE',
      path: '/api-key/{api_key_id}',
      auth: 'token',
      doc: {
        summary: 'Revoke one of your API keys (refused on every server at once)',
        tag: 'api-keys',
        data: { type: 'object', properties: { revoked: { type: 'boolean' }, api_key_id: { type: 'string' } } },
        errors: { '404': 'NOT_FOUND (you have no key with this id, or it was revoked already)' },
      },
      handler: async (c) => ({ data: await keys.revoke(c.claims.user_id, c.params.api_key_id as string) }),
    },
  ];
}
