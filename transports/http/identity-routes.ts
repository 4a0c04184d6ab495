/**
 * The `/user/*` and `/admin/*` endpoints (README *Users, tokens and the admin*): the HTTP binding of
 * the identity service (which knows nothing of HTTP). The front verifies
 * tokens (and the admin role) before these run, and wraps what they return
 * in the envelope. Each JSON body is documented by the schema that validates
 * it (`IDENTITY_BODIES`: the service checks its bodies with them).
 */
import { type Authenticator, bearer, IDENTITY_BODIES as BODY, type IdentityService, invalid } from '../../actors/identity/index.ts';
import { adminPortal } from './admin-portal.ts';
import { unauthorizedAsHttp } from './errors.ts';
import type { BuiltinRoute } from './types.ts';

/**
 * @example
 * const routes = identityRoutes(identityService, new Authenticator(jwt));
 * new Front({ builtinRoutes: routes, ... });
 */
export function identityRoutes(service: IdentityService, auth: Authenticator): BuiltinRoute[] {
  return [
    {
      method: 'POST',
      path: '/user/register',
      auth: 'none',
      needsAddress: true,
      doc: { summary: 'Register a user (their own graph root is created)', status: 201, body: BODY.register.doc },
      handler: async (c) => ({ status: 201, data: await service.register(c.body(), c.req.remoteAddress) }),
    },
    {
      method: 'POST',
      path: '/user/login',
      auth: 'none',
      doc: { summary: 'Log in with any identity: a JWT', body: BODY.login.doc },
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
      doc: { summary: 'A fresh token for a valid one', body: BODY.refreshToken.doc },
      handler: async (c) => {
        const raw = BODY.refreshToken.parse(c.body()).token;
        // The body's token may come with its `Bearer ` scheme, and spaces (trimmed off: spaces alone are no token).
        if (raw.trim() === '') throw invalid('token', 'must be a non-empty string');
        let claims;
        try {
          claims = auth.authenticate(bearer(raw) ?? raw.trim()).claims;
        } catch (error) {
          throw unauthorizedAsHttp(error);
        }
        return { data: { token: await service.refresh(claims), message: 'token refreshed' } };
      },
    },
    { method: 'GET', path: '/user/me', auth: 'token', duringPasswordChange: true, doc: { summary: 'The signed-in user' }, handler: async (c) => ({ data: await service.me(c.claims.user_id) }) },
    { method: 'PUT', path: '/user/password', auth: 'token', duringPasswordChange: true, doc: { summary: 'Change the password (older tokens stop working)', body: BODY.changePassword.doc }, handler: async (c) => ({ data: await service.changePassword(c.claims.user_id, c.body()) }) },
    { method: 'POST', path: '/user/add-identity', auth: 'token', doc: { summary: 'Add a username or email', body: BODY.addIdentity.doc }, handler: async (c) => ({ data: await service.addIdentity(c.claims.user_id, c.body()) }) },
    { method: 'POST', path: '/user/send-verification', auth: 'token', doc: { summary: 'Mail a verification link to an email identity', status: 202, body: BODY.sendVerification.doc }, handler: (c) => service.sendVerification(c.claims.user_id, c.body()) },
    { method: 'POST', path: '/user/verify-identity', auth: 'none', doc: { summary: 'Verify an email with the token from the mail', body: BODY.verifyIdentity.doc }, handler: async (c) => ({ data: await service.verifyIdentity(c.body()) }) },
    { method: 'POST', path: '/user/forgot-password', auth: 'none', needsAddress: true, doc: { summary: 'Mail a reset link (always the same answer)', body: BODY.forgotPassword.doc }, handler: async (c) => ({ data: await service.forgotPassword(c.body(), c.req.remoteAddress) }) },
    { method: 'POST', path: '/user/reset-password', auth: 'none', doc: { summary: 'Set a new password with the token from the mail', body: BODY.resetPassword.doc }, handler: async (c) => ({ data: await service.resetPassword(c.body()) }) },

    { method: 'GET', path: '/admin', auth: 'none', doc: { summary: 'The admin portal (a page)', produces: 'text/html' }, handler: () => ({ raw: adminPortal() }) },
    {
      method: 'POST',
      path: '/admin/login',
      auth: 'none',
      doc: { summary: 'Log in as an admin', body: BODY.adminLogin.doc },
      needsAddress: true,
      handler: async (c) => {
        const { user, token } = await service.login(c.body(), c.req.remoteAddress, true);
        return { data: { user_id: user.user_id, token, role: user.role, must_change_password: user.must_change_password } };
      },
    },
    { method: 'GET', path: '/admin/users', auth: 'admin', doc: { summary: 'List users (?search=&limit=&offset=)' }, handler: async (c) => ({ data: await service.listUsers(new URLSearchParams(c.req.query)) }) },
    { method: 'POST', path: '/admin/users', auth: 'admin', doc: { summary: 'Create a user (a temporary password when none is given)', status: 201, body: BODY.createUser.doc }, handler: async (c) => ({ status: 201, data: await service.createUser(c.body()) }) },
    { method: 'GET', path: '/admin/users/{username}', auth: 'admin', doc: { summary: 'One user' }, handler: async (c) => ({ data: await service.getUser(c.params.username as string) }) },
    { method: 'PUT', path: '/admin/users/{username}', auth: 'admin', doc: { summary: 'Edit role, status or profile', body: BODY.updateUser.doc }, handler: async (c) => ({ data: await service.updateUser(c.params.username as string, c.body(), c.claims.user_id) }) },
    { method: 'DELETE', path: '/admin/users/{username}', auth: 'admin', doc: { summary: 'Delete a user and their graph (their tokens stop working)' }, handler: async (c) => ({ data: await service.deleteUser(c.params.username as string, c.claims.user_id) }) },
    { method: 'POST', path: '/admin/users/{username}/force-password-reset', auth: 'admin', doc: { summary: 'Void their tokens; the next login must change the password' }, handler: async (c) => ({ data: await service.forcePasswordReset(c.params.username as string) }) },
  ];
}
