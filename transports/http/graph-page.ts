/**
 * The graph visualizer at `/graph`: one self-contained page (no CDN) over
 * `GET /graph/data` — the caller's graph (token from `localStorage.svc_token`,
 * or a sign-in box), or the public graph without one; a force layout on a
 * canvas with pan and zoom, types coloured, node details on click, search,
 * and "more" to follow the edges of nodes the limit left unexpanded. Data is
 * put in the page with `textContent` only. Its files are in `graph/` ({@link page}).
 */
import { page } from './page.ts';
import type { HttpResponse } from './types.ts';

const visualizer = page('graph', 'graph.css', 'graph.js');

export function graphPage(): HttpResponse {
  return visualizer();
}
