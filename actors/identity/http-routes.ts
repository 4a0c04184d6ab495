/**
 * The `/user/*` and `/admin/*` endpoints (seed 000 §4.3), bound to the
 * identity service. The front verifies tokens (and the admin role) before
 * these run, and wraps what they return in the envelope.
 */
import type { BuiltinRoute } from '../../transports/http/index.ts';
import { adminPortal } from './admin-portal.ts';
import { unauthorized } from './errors.ts';
import type { IdentityService } from './service.ts';

export function identityRoutes(service: IdentityService, verify: (token: string) => { user_id: string }): BuiltinRoute[] {
  return [
    { method: 'POST', path: '/user/register', auth: 'none', handler: async (c) => ({ status: 201, data: await service.register(c.body()) }) },
    {
      method: 'POST',
      path: '/user/login',
      auth: 'none',
      needsAddress: true,
      handler: async (c) => {
        const { user, token } = await service.login(c.body(), c.req.remoteAddress);
        return { data: { user_id: user.user_id, token, root_id: user.root_id, role: user.role, ...(user.must_change_password ? { must_change_password: true } : {}) } };
      },
    },
    {
      method: 'POST',
      path: '/user/refresh-token',
      auth: 'none',
      handler: async (c) => {
        const raw = c.body().token;
        if (typeof raw !== 'string' || raw === '') throw unauthorized('send the token to refresh');
        const claims = verify(raw.replace(/^Bearer\s+/i, '').trim());
        return { data: { token: await service.refresh(claims.user_id), message: 'token refreshed' } };
      },
    },
    { method: 'GET', path: '/user/me', auth: 'token', duringPasswordChange: true, handler: (c) => ({ data: service.me(c.claims.user_id) }) },
    { method: 'PUT', path: '/user/password', auth: 'token', duringPasswordChange: true, handler: async (c) => ({ data: await service.changePassword(c.claims.user_id, c.body()) }) },
    { method: 'POST', path: '/user/add-identity', auth: 'token', handler: (c) => ({ data: service.addIdentity(c.claims.user_id, c.body()) }) },
    { method: 'POST', path: '/user/send-verification', auth: 'token', handler: (c) => service.sendVerification(c.claims.user_id, c.body()) },
    { method: 'POST', path: '/user/verify-identity', auth: 'none', handler: (c) => ({ data: service.verifyIdentity(c.body()) }) },
    { method: 'POST', path: '/user/forgot-password', auth: 'none', needsAddress: true, handler: async (c) => ({ data: await service.forgotPassword(c.body(), c.req.remoteAddress) }) },
    { method: 'POST', path: '/user/reset-password', auth: 'none', handler: async (c) => ({ data: await service.resetPassword(c.body()) }) },

    { method: 'GET', path: '/admin', auth: 'none', handler: () => ({ raw: adminPortal() }) },
    {
      method: 'POST',
      path: '/admin/login',
      auth: 'none',
      needsAddress: true,
      handler: async (c) => {
        const { user, token } = await service.login(c.body(), c.req.remoteAddress, true);
        return { data: { user_id: user.user_id, token, role: user.role, must_change_password: user.must_change_password } };
      },
    },
    { method: 'GET', path: '/admin/users', auth: 'admin', handler: (c) => ({ data: service.listUsers(new URLSearchParams(c.req.query)) }) },
    { method: 'POST', path: '/admin/users', auth: 'admin', handler: async (c) => ({ status: 201, data: await service.createUser(c.body()) }) },
    { method: 'GET', path: '/admin/users/{username}', auth: 'admin', handler: (c) => ({ data: service.getUser(c.params.username as string) }) },
    { method: 'PUT', path: '/admin/users/{username}', auth: 'admin', handler: async (c) => ({ data: await service.updateUser(c.params.username as string, c.body(), c.claims.user_id) }) },
    { method: 'DELETE', path: '/admin/users/{username}', auth: 'admin', handler: async (c) => ({ data: await service.deleteUser(c.params.username as string, c.claims.user_id) }) },
    { method: 'POST', path: '/admin/users/{username}/force-password-reset', auth: 'admin', handler: async (c) => ({ data: await service.forcePasswordReset(c.params.username as string) }) },
  ];
}
