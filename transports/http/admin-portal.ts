/**
 * The admin portal at `/admin`: one self-contained page (no CDN) over the
 * `/admin/*` endpoints — login (and the forced password change, which the
 * server enforces anyway), a searchable users table, create, edit role and
 * status, force a password reset, delete. User data is put in the page with
 * `textContent` only. Its markup, style and script are the files in
 * `portal/` ({@link page}).
 */
import { page } from './page.ts';
import type { HttpResponse } from './types.ts';

const portal = page('portal', 'portal.css', 'portal.js');

/**
 * The portal page, with its CSP and the headers that keep it out of frames and caches.
 *
 * @example
 * { method: 'GET', path: '/admin', auth: 'none', handler: () => ({ raw: adminPortal() }) }
 */
export function adminPortal(): HttpResponse {
  return portal();
}
