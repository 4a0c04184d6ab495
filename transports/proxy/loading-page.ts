/**
 * The page a browser gets while its sandbox is not there yet (unknown, starting, or its dev server restarting):
 * it reloads itself every 2 seconds until the sandbox answers. Status 503 with `Retry-After: 2` and no caching, so
 * neither a cache nor a crawler keeps it as the sandbox's page.
 */

/** Seconds between reloads. */
export const LOADING_REFRESH_SECONDS = 2;

const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The loading page's HTML.
 *
 * @example
 * res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'retry-after': '2' }).end(loadingPage('sbx-0123456789abcdef', 'starting'));
 */
export function loadingPage(sandboxId: string, state: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="${LOADING_REFRESH_SECONDS}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Starting your preview…</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;display:flex;align-items:center;justify-content:center;min-height:100vh;margin:0;background:#f6f7f9;color:#222}
main{text-align:center}.spin{width:32px;height:32px;margin:0 auto 16px;border:3px solid #ccd;border-top-color:#556;border-radius:50%;animation:s 1s linear infinite}
@keyframes s{to{transform:rotate(360deg)}}small{color:#667}
</style>
</head>
<body>
<main>
<div class="spin"></div>
<h1>Starting your preview…</h1>
<p>This page reloads by itself every ${LOADING_REFRESH_SECONDS} seconds.</p>
<small>${escape(sandboxId)}: ${escape(state)}</small>
</main>
</body>
</html>
`;
}
