/**
 * `explain_error`: what an error means in svc terms and how to fix it. It
 * recognises, in this order: an error code of `docs/errors.md` — parsed from
 * the shipped file at first use, so a code added there is explained at once —
 * given as a JSON envelope's `code` or written in the text, refined only by a
 * runtime message raised under that same code; a TypeScript diagnostic
 * (`TS2339`, by its code number); a runtime message svc prints (`visit()
 * takes nodes`, `needs a bearer token`, …); a TypeScript message without its
 * code; a WebSocket close code; a bare HTTP status; anything else gets a
 * general answer.
 *
 * @example
 * explainError({ error_message: '{"code":"UNAUTHORIZED","message":"walker ListTodos needs a bearer token"}' });
 * // { title: 'A private walker or function was called without a token', explanation, suggestion, example, docs_uri }
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import typescript from 'typescript';
import { PACKAGE_ROOT } from '../catalog.ts';
import { checkSize, ToolInputError } from '../types.ts';

/**
 * The answer of `explain_error`.
 * @example const { title, suggestion, docs_uri }: Explanation = explainError({ error_message: 'SVC_ERR_BAD_WRITE' });
 */
export type Explanation = { title: string; explanation: string; suggestion: string; example: string; docs_uri: string };

/**
 * One code of `docs/errors.md`.
 * @example const e: CatalogueEntry = { code: 'CONFLICT', status: 409, meaning: 'A concurrent change conflicted, …', section: 'On the wire' };
 */
export type CatalogueEntry = { code: string; status: number | null; meaning: string; section: string };

const ERRORS_URI = 'svc://docs/errors';

// ---------------------------------------------------------------- docs/errors.md

let catalogue: Map<string, CatalogueEntry> | undefined;
let closeCodes: Map<string, string> | undefined;

function plain(markdown: string): string {
  return markdown.replace(/\s+/g, ' ').trim();
}

function parseCatalogue(): void {
  const text = readFileSync(fileURLToPath(new URL('docs/errors.md', PACKAGE_ROOT)), 'utf8');
  const codes = new Map<string, CatalogueEntry>();
  const closes = new Map<string, string>();
  let section = '';
  let paragraph: string[] = [];
  const flush = () => {
    // Codes told in a sentence rather than a table row (the gateway's start errors): `CODE` (meaning).
    const joined = paragraph.join(' ');
    for (const m of joined.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`\s*\(([^()]*)\)/g)) {
      const code = m[1] as string;
      if (!codes.has(code)) codes.set(code, { code, status: null, meaning: plain(`${m[2]} (raised at start: svc start prints one line and exits 1)`), section });
    }
    paragraph = [];
  };
  for (const line of text.split('\n')) {
    const heading = /^#{1,6}\s+(.+)$/.exec(line);
    if (heading) {
      flush();
      section = (heading[1] as string).replace(/\s*\(`[^`]*`\)\s*$/, '').trim();
      continue;
    }
    // A row's second cell: an HTTP status, or (a command's errors, such as svc start --scale's) the exit code.
    const row = /^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|\s*(\d{3}|\d)\s*\|\s*(.+?)\s*\|\s*$/.exec(line);
    if (row) {
      const exit = (row[2] as string).length === 1;
      const meaning = plain(row[3] as string);
      codes.set(row[1] as string, { code: row[1] as string, status: exit ? null : Number(row[2]), meaning: exit ? `${meaning} (the command exits ${row[2]})` : meaning, section });
      continue;
    }
    const close = /^\|\s*(\d{4})\s*\|\s*(.+?)\s*\|\s*$/.exec(line);
    if (close) {
      closes.set(close[1] as string, plain(close[2] as string));
      continue;
    }
    if (line.trim() === '') flush();
    else if (!line.startsWith('|')) paragraph.push(line);
  }
  flush();
  catalogue = codes;
  closeCodes = closes;
}

/**
 * Every code `docs/errors.md` documents (table rows and codes named in its
 * sentences), as parsed from the shipped file.
 *
 * @example errorCatalogue().get('SVC_ERR_BAD_WRITE')?.status // 500
 */
export function errorCatalogue(): ReadonlyMap<string, CatalogueEntry> {
  if (!catalogue) parseCatalogue();
  return catalogue as Map<string, CatalogueEntry>;
}

/**
 * The WebSocket close codes `docs/errors.md` documents (4401, 4403, …).
 * @example websocketCloseCodes().get('4401') // 'No token on a private walker's first frame, …'
 */
export function websocketCloseCodes(): ReadonlyMap<string, string> {
  if (!closeCodes) parseCatalogue();
  return closeCodes as Map<string, string>;
}

// ---------------------------------------------------------------- what svc adds to the catalogue

/** The wire code a graph or kernel code is answered as (docs/errors.md, "On the wire"). */
const ON_THE_WIRE: Record<string, string> = {
  SVC_ERR_INVALID_FIELDS: 'VALIDATION_ERROR',
  SVC_ERR_UNKNOWN_WALKER: 'NOT_FOUND',
  SVC_ERR_NODE_NOT_FOUND: 'NOT_FOUND',
  SVC_ERR_ACCESS_DENIED: 'FORBIDDEN',
  SVC_ERR_WALKER_FAILED: 'EXECUTION_ERROR',
  SVC_ERR_CONFLICT: 'CONFLICT',
  SVC_ERR_ASK_TIMEOUT: 'TIMEOUT',
  SVC_ERR_STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
};

const EX = {
  token: `curl -s -X POST localhost:8000/walker/ListTodos -H "Authorization: Bearer $TOKEN"
# or make it public on purpose:
export class ListTodos extends Walker {
  static access = 'pub' as const;
  @entry(Root) async start(here: Root) { this.visit(await here.out(Todo)); }
}`,
  fields: `// Send JSON of the declared types: {"title": "milk", "qty": 3} — not {"qty": "3"}
export class AddItem extends Walker {
  static has = T.Object({ title: T.String(), qty: T.Integer({ default: 1, minimum: 1 }) });
  declare title: string;
  declare qty: number;
  @entry(Root) async add(here: Root) { this.report(await here.connect(new Item({ title: this.title, qty: this.qty }))); }
}`,
  declare: `export class Todo extends Node {
  static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });
  declare title: string;   // not: title = '';
  declare done: boolean;   // the default lives in the schema
}`,
  awaitAll: `@entry(Root) async start(here: Root) {
  const todos = await here.out(Todo);                    // await every graph operation
  this.visit(todos);
  this.report(await here.connect(new Todo({ title: 'x' })));
}`,
  notFound: `@entry(Root) async find(here: Root) {
  const [todo] = await here.out(Todo, (t) => t.id === this.id);
  if (!todo) throw new SvcError('TODO_NOT_FOUND', 'no such todo', { status: 404 });
  this.report(todo);
}`,
  grant: `// The owner grants; then the other root may write:
allowRoot(board, otherRootId, AccessLevel.WRITE);   // or AccessLevel.READ / CONNECT; permGrant(node, level) for everyone`,
  throwOwn: `throw new SvcError('OUT_OF_STOCK', 'none left', { status: 409 });   // answered 409 {"code": "OUT_OF_STOCK"}`,
  badWrite: `todo.done = 'yes';                 // wrong: a string into T.Boolean() → SVC_ERR_BAD_WRITE
todo.done = true;                  // right
note.at = new Date().toISOString(); // dates as ISO strings in a T.String()`,
  notInRun: `@entry(Root) async later(here: Root) {
  // wrong: setTimeout(() => here.connect(new Todo({ title: 'late' })), 10);
  await here.connect(new Todo({ title: 'now' }));      // right: inside the run, awaited
}`,
  kv: `const cache = kvstore('shop', 'kv', process.env.KV_URL);   // at module load; needs Redis
const docs = kvstore('shop', 'docdb');                      // works with no setup`,
  retry: `// 409/503 answers are safe to retry: the run committed nothing.
for (let attempt = 1; ; attempt++) {
  const res = await fetch(url, init);
  if ((res.status !== 409 && res.status !== 503) || attempt === 3) break;
  await new Promise((r) => setTimeout(r, 100 * attempt));
}`,
  login: `curl -s -X POST localhost:8000/user/login \\
  -d '{"identity":{"type":"username","value":"alice"},"credential":{"type":"password","password":"a long passphrase"}}'`,
  sv: `const billing = sv.import<typeof import('./billing.ts')>('billing');
try { await billing.charge({ amount: 5 }); }
catch (e) { if (e instanceof SvCallError) console.error(e.code, e.message); else throw e; }`,
  module: `import { entry, Node, Root, T, Walker } from 'svc';

export class Note extends Node {
  static has = T.Object({ text: T.String() });
  declare text: string;
}

export class AddNote extends Walker {
  static has = T.Object({ text: T.String() });
  declare text: string;
  @entry(Root) async add(here: Root) {
    this.report(await here.connect(new Note({ text: this.text })));
  }
}`,
} as const;

type Advice = { suggestion: string; example?: string; docs?: string };

/** Code-specific advice; codes without an entry get their section's or status's. */
const ADVICE: Record<string, Advice> = {
  UNAUTHORIZED: { suggestion: 'Walkers and functions are private by default. Send `Authorization: Bearer <token>` (from POST /user/login, or `npx svc token --username <name>`), or declare the endpoint public on purpose with `static access = \'pub\' as const` / `fn({ access: \'pub\' }, …)`. An expired or revoked token also answers this: log in again.', example: EX.token, docs: 'svc://docs/tutorial-fullstack-auth' },
  FORBIDDEN: { suggestion: 'The node belongs to another root. Its owner must grant the level you need (`permGrant` for everyone, `allowRoot` for one root): READ to read, CONNECT to connect edges to it, WRITE to change or destroy it.', example: EX.grant, docs: 'svc://docs/osp' },
  SVC_ERR_ACCESS_DENIED: { suggestion: 'Writing, connecting to or destroying another root\'s node needs a grant from its owner (`allowRoot(node, root, AccessLevel.WRITE)` / `CONNECT`), and only the owner changes access.', example: EX.grant, docs: 'svc://docs/osp' },
  NOT_FOUND: { suggestion: 'Check that the walker or function is exported from the entry module under that exact name (`svc start --faux` lists the endpoints), that WebSocket and webhook walkers are called at /ws/<Name> and /webhook/<Name>, and that a node id is one the caller may read.', example: EX.notFound, docs: 'svc://docs/debugging' },
  SVC_ERR_NODE_NOT_FOUND: { suggestion: 'The id does not name a node the caller may read: it was destroyed, belongs to another user without a grant, or is mistyped. Ids are the `id` of a reported node (32 hex characters).', example: EX.notFound, docs: 'svc://docs/osp' },
  SVC_ERR_UNKNOWN_WALKER: { suggestion: 'Export the walker or function from the entry module; the endpoint name is the export name. `svc start --faux` prints what is served.', example: EX.module, docs: 'svc://docs/foundation' },
  VALIDATION_ERROR: { suggestion: 'Fix the fields the message names. Values are validated, never coerced: send JSON of the declared types ("3" is not a number, "true" not a boolean), include required fields, and send no field the walker does not declare (`unknown field`).', example: EX.fields, docs: 'svc://docs/primitives' },
  SVC_ERR_INVALID_FIELDS: { suggestion: 'Fix the fields the message names: declared types, required fields present, no undeclared field. Also raised by `visit()` given something that is not a node (a Promise: add `await`).', example: EX.fields, docs: 'svc://docs/primitives' },
  INVALID_JSON: { suggestion: 'Send a JSON object body (`-d \'{"title":"milk"}\'`), quoted properly for your shell.', example: EX.fields, docs: 'svc://docs/walker-responses' },
  EXECUTION_ERROR: { suggestion: 'Your walker or function threw. Read the message (and `details.stack` with `svc start --dev`, or the server log), fix the code; to answer a status of your own, throw `new SvcError(code, message, { status })`. Nothing of the run was committed.', example: EX.throwOwn, docs: 'svc://docs/debugging' },
  SVC_ERR_WALKER_FAILED: { suggestion: 'Your walker or function threw; nothing it wrote was committed. Fix the cause shown in the message, or throw an SvcError with your own code and status.', example: EX.throwOwn, docs: 'svc://docs/debugging' },
  SVC_ERR_BAD_WRITE: { suggestion: 'Your code wrote a value its node or edge schema refuses (see `details`): keep the values in line with `static has`, store dates as ISO strings, and never store Maps, Sets, bigints or functions.', example: EX.badWrite, docs: 'svc://docs/primitives' },
  SVC_ERR_BAD_ARCHETYPE: { suggestion: 'Fix the class: declare node and edge fields with `declare x: T` (no initializer), do not start a field with `_` or name it like a base member (`id`, `connect`, `out`, `root`, `report`…), give every class a unique name, and export every node and edge class from the entry.', example: EX.declare, docs: 'svc://docs/foundation' },
  SVC_ERR_NOT_IN_RUN: { suggestion: 'Graph work must happen inside the walker run: await every graph operation in the ability, do not touch nodes from timers or callbacks that outlive it, and make kvstore handles at module load.', example: EX.notInRun, docs: 'svc://docs/concurrency' },
  SVC_ERR_DESTROYED: { suggestion: 'Do not use a node or edge after `destroy()` in the same run; look it up again or skip it.', docs: 'svc://docs/osp' },
  SVC_ERR_WALKER_TIMEOUT: { suggestion: 'The run took over 25 s. Look for a traversal that never ends (a cycle: keep a set of visited ids), an await that never settles, or slow I/O (add timeouts, or move it to an event handler).', docs: 'svc://guide/pitfalls' },
  CONFLICT: { suggestion: 'A concurrent change won; nothing of this run was stored. Retry the request.', example: EX.retry, docs: 'svc://docs/concurrency' },
  SVC_ERR_CONFLICT: { suggestion: 'A concurrent writer changed the same anchor; nothing was written. Retry.', example: EX.retry, docs: 'svc://docs/concurrency' },
  PAYLOAD_TOO_LARGE: { suggestion: 'Send less, or raise `[scale.server] max_body_bytes`; for files use `T.Upload({ maxBytes })`, which streams large files to disk.', docs: 'svc://docs/advanced' },
  METHOD_NOT_ALLOWED: { suggestion: 'Use one of the methods in the `Allow` header: walkers and functions are POST unless their restspec says otherwise.', docs: 'svc://docs/advanced' },
  PASSWORD_CHANGE_REQUIRED: { suggestion: 'Change the password first: `PUT /user/password` with `{current_password, new_password}`, then use the new token it answers.', docs: 'svc://docs/tutorial-production-local' },
  INVALID_CREDENTIALS: { suggestion: 'Check the identity (username or email) and the password; a disabled account answers the same on purpose.', example: EX.login, docs: 'svc://docs/tutorial-fullstack-auth' },
  TOO_MANY_REQUESTS: { suggestion: 'Wait for `Retry-After` seconds; behind a proxy set `[scale.server] trusted_proxies` so the client\'s address is counted, not the proxy\'s.', docs: 'svc://docs/config' },
  NOT_IMPLEMENTED: { suggestion: 'Use a method the backend has (`findOne` is docdb, `setWithTtl` is kv; locks need kv), and `findNodes` only inside a running app.', example: EX.kv, docs: 'svc://docs/advanced' },
  KV_NOT_CONFIGURED: { suggestion: 'A `kv` kvstore needs Redis: set `KV_URL` (or pass the URL as the third argument). For documents without Redis use `kvstore(name, \'docdb\')`.', example: EX.kv, docs: 'svc://docs/advanced' },
  RESERVED_COLLECTION: { suggestion: 'Use your own collection names (not `users`, `identities`, nor names starting with `_`) and not the `svc` kv namespace.', example: EX.kv, docs: 'svc://docs/advanced' },
  INVALID_PATH: { suggestion: 'Use a relative path inside the storage base, without `..`, a leading `/`, backslashes or NUL; build names from a slug, not from raw user input.', docs: 'svc://docs/advanced' },
  INVALID_QUERY: { suggestion: 'Use the supported operators ($eq $ne $gt $gte $lt $lte $in $nin $exists $and $or) and updates ($set, $unset), with JSON values.', docs: 'svc://docs/advanced' },
  LOCK_TIMEOUT: { suggestion: 'Another holder kept the lock for the whole retry budget: shorten what runs under the lock, or pass `retry: { timeoutMs }`; always release in `finally`.', docs: 'svc://docs/concurrency' },
  INVALID_TOPIC: { suggestion: 'Use a fixed topic name of 1–200 characters without spaces; do not build topics from request input.', docs: 'svc://docs/scale' },
  SV_BOUNDARY: { suggestion: 'Send plain JSON-like values to another app: an id or the fields instead of a node, no functions, handles or binary data.', example: EX.sv, docs: 'svc://docs/advanced' },
  SV_UNKNOWN_SERVICE: { suggestion: 'Register the provider (`sv.register(name, url)` or `SVC_SV_<NAME>_URL`), or put `<name>.ts` beside the entry so it is started in development.', example: EX.sv, docs: 'svc://docs/advanced' },
  SV_CALL_FAILED: { suggestion: 'Look at `details.provider` (the provider\'s own status and code) or `details.transport`; fix the call or the provider.', example: EX.sv, docs: 'svc://docs/advanced' },
  STORE_UNAVAILABLE: { suggestion: 'The shared database is down or unreachable; svc recovers by itself when it is back. Retry after `Retry-After`; check `DOCDB_URI` and the database.', example: EX.retry, docs: 'svc://docs/scale' },
  SVC_ERR_MAILBOX_FULL: { suggestion: 'Too many requests wait on one graph (or frames on one WebSocket): slow down, retry later, or make the walker faster.', example: EX.retry, docs: 'svc://docs/concurrency' },
};

/** Advice for a section of docs/errors.md, when its code has none of its own. */
function sectionAdvice(entry: CatalogueEntry): Advice {
  const s = entry.section.toLowerCase();
  if (s.includes('kernel')) return { suggestion: 'A kernel error: in a served app it usually means the server is busy, restarting a part, or shutting down — retry; in code that uses svc/kernel directly, check the actor\'s mailbox, supervision and timeouts.', docs: 'svc://docs/library-mode' };
  if (s.includes('cluster')) return { suggestion: 'A cluster error: check `KV_URL` (Redis reachable, same `JWT_SECRET` on every member); transient ones (503) are retried by clients after `Retry-After`.', docs: 'svc://docs/scale' };
  if (s.includes('store')) return { suggestion: 'A store error: check `DOCDB_URI` / the data folder (disk, permissions); transient ones (503) recover by themselves — retry.', docs: 'svc://docs/scale' };
  if (s.includes('between svc apps')) return { suggestion: 'A service-to-service call failed: check the provider\'s URL (`SVC_SV_<MODULE>_URL`), that it is running and that the function or walker is public.', example: EX.sv, docs: 'svc://docs/advanced' };
  if (s.includes('users') || s.includes('token')) return { suggestion: 'An account or sign-in error: read the message; the `/user/*` routes answer it with the status shown.', example: EX.login, docs: 'svc://docs/tutorial-fullstack-auth' };
  if (s.includes('files')) return { suggestion: 'A `store()` error: check the path and the `[storage]` settings.', docs: 'svc://docs/advanced' };
  if (s.includes('documents')) return { suggestion: 'A `kvstore()` error: check the names, the backend and its URL.', example: EX.kv, docs: 'svc://docs/advanced' };
  if (s.includes('event')) return { suggestion: 'An event streaming error: check the topic and `[scale.events]`.', docs: 'svc://docs/scale' };
  if (s.includes('runtime')) return { suggestion: 'The runtime is wired wrongly at start; this is a bug of svc or of a custom module: report it with the message.', docs: 'svc://docs/debugging' };
  if (entry.status === null) return { suggestion: 'Fix the configuration the message names and start again.', docs: 'svc://docs/config' };
  if (entry.status >= 500) return { suggestion: 'A server-side failure: transient ones (503, 504) can be retried; for others read the server log.', example: EX.retry, docs: ERRORS_URI };
  return { suggestion: 'Fix the request as the message says; the same request gives the same answer.', docs: ERRORS_URI };
}

function fromCatalogue(entry: CatalogueEntry, message?: string): Explanation {
  const advice = ADVICE[entry.code] ?? sectionAdvice(entry);
  const wire = ON_THE_WIRE[entry.code];
  const status = entry.status === null ? 'at start' : `HTTP ${entry.status}`;
  return {
    title: `${entry.code} (${status}${wire ? `, answered as ${wire}` : ''})`,
    explanation: `${entry.meaning}${entry.section ? ` [${entry.section}]` : ''}${message ? ` Message: ${plain(message).slice(0, 500)}` : ''}`,
    suggestion: advice.suggestion,
    example: advice.example ?? EX.throwOwn,
    docs_uri: advice.docs ?? ERRORS_URI,
  };
}

// ---------------------------------------------------------------- runtime messages

/** A runtime message svc prints; `codes`: the error codes it is raised (or answered) under, when it has any. */
type Pattern = { re: RegExp; codes?: readonly string[]; title: string; explanation: string; suggestion: string; example: string; docs: string };

const FIELDS = ['VALIDATION_ERROR', 'SVC_ERR_INVALID_FIELDS'] as const;

const RUNTIME: readonly Pattern[] = [
  { re: /needs a bearer token|private walkers need a token/i, codes: ['UNAUTHORIZED'], title: 'A private walker or function was called without a token', explanation: 'Walkers and functions are private unless declared `pub`; without `Authorization: Bearer <token>` they answer 401 UNAUTHORIZED.', suggestion: ADVICE.UNAUTHORIZED?.suggestion ?? '', example: EX.token, docs: 'svc://docs/tutorial-fullstack-auth' },
  { re: /visit\(\) takes nodes/, codes: FIELDS, title: 'visit() was given something that is not a node', explanation: 'Usually a Promise: `this.visit(here.out(Todo))` without `await`.', suggestion: 'Await the query: `this.visit(await here.out(Todo))`, and make the ability `async`.', example: EX.awaitAll, docs: 'svc://guide/pitfalls' },
  { re: /is a class field, so writes to it are not seen/, codes: ['SVC_ERR_BAD_ARCHETYPE'], title: 'A node or edge field has an initializer', explanation: 'A class field (`title = \'\'`) hides the stored value, so svc refuses the class at start (SVC_ERR_BAD_ARCHETYPE).', suggestion: 'Write `declare title: string;` and put the default in the schema: `T.String({ default: \'\' })`.', example: EX.declare, docs: 'svc://docs/foundation' },
  { re: /a name reserved by svc/, codes: ['SVC_ERR_BAD_ARCHETYPE'], title: 'A field takes a reserved name', explanation: 'A `has` field may not start with `_` nor take the name of a base member (`id`, `connect`, `out`, `in`, `destroy` on nodes; `report`, `visit`, `root`, `caller`, `log` on walkers).', suggestion: 'Rename the field (e.g. `id` → `ref`, `root` → `rootId`).', example: EX.declare, docs: 'svc://docs/foundation' },
  { re: /two different classes are named/, codes: ['SVC_ERR_BAD_ARCHETYPE'], title: 'Two classes share one name', explanation: 'Stored documents are typed by class name, so every node and edge class needs a unique one.', suggestion: 'Rename one class (and `svc db alias add Old New` if documents were stored under the old name).', example: EX.declare, docs: 'svc://docs/code-organization' },
  { re: /can only change inside a walker run|needs a node that belongs to a walker run|needs a walker run|is not running/, codes: ['SVC_ERR_NOT_IN_RUN'], title: 'Graph work outside a walker run', explanation: 'Nodes change only inside the run that loaded them; this ran before it started or after it ended (SVC_ERR_NOT_IN_RUN).', suggestion: ADVICE.SVC_ERR_NOT_IN_RUN?.suggestion ?? '', example: EX.notInRun, docs: 'svc://docs/concurrency' },
  { re: /unknown field \\?"/, codes: FIELDS, title: 'The request carries a field the endpoint does not declare', explanation: 'svc refuses undeclared fields (400 VALIDATION_ERROR), often a typo of a declared one.', suggestion: 'Fix the field name, or declare it in `static has` (or `params`). `[scale.server] strict_fields = false` accepts and ignores unknown fields.', example: EX.fields, docs: 'svc://docs/primitives' },
  { re: /must be an? (number|integer|boolean|string|array|object)/, codes: FIELDS, title: 'A field has the wrong JSON type', explanation: 'JSON bodies are validated, never coerced: "3" is not a number and "true" is not a boolean. Only path and query strings are converted.', suggestion: 'Send the declared JSON type (3, true), converting form input on the client.', example: EX.fields, docs: 'svc://docs/primitives' },
  { re: /missing required field \\?"/, codes: FIELDS, title: 'A required field is missing', explanation: 'The body lacks a field the schema requires.', suggestion: 'Send it, or give it a default in the schema (`T.String({ default: \'\' })`) or make it `T.Optional(...)`.', example: EX.fields, docs: 'svc://docs/primitives' },
  { re: /does not match its schema/, codes: ['SVC_ERR_BAD_WRITE'], title: 'Your code wrote a value its schema refuses', explanation: 'An assignment to a node or edge field, or `new Node({...})`, with a value the `has` schema does not allow: SVC_ERR_BAD_WRITE (500), nothing committed.', suggestion: ADVICE.SVC_ERR_BAD_WRITE?.suggestion ?? '', example: EX.badWrite, docs: 'svc://docs/primitives' },
  { re: /no (WRITE|CONNECT) access to that/, codes: ['FORBIDDEN', 'SVC_ERR_ACCESS_DENIED'], title: 'No grant for that change', explanation: 'The node belongs to another root, which has not granted the level this change needs (403 FORBIDDEN).', suggestion: ADVICE.FORBIDDEN?.suggestion ?? '', example: EX.grant, docs: 'svc://docs/osp' },
  { re: /no node [0-9a-f]{32} readable/, codes: ['NOT_FOUND', 'SVC_ERR_NODE_NOT_FOUND'], title: 'The node does not exist or may not be read', explanation: 'Spawning at a node the caller may not read answers 404, exactly like a missing node.', suggestion: ADVICE.SVC_ERR_NODE_NOT_FOUND?.suggestion ?? '', example: EX.notFound, docs: 'svc://docs/osp' },
  { re: /no route (GET|POST|PUT|PATCH|DELETE) /, codes: ['NOT_FOUND'], title: 'No endpoint at that method and path', explanation: 'Nothing the app exports is served there.', suggestion: ADVICE.NOT_FOUND?.suggestion ?? '', example: EX.module, docs: 'svc://docs/debugging' },
  { re: /not valid JSON|the body is not valid JSON/, codes: ['INVALID_JSON'], title: 'The body is not JSON', explanation: 'Walkers and functions read a JSON object body (400 INVALID_JSON).', suggestion: ADVICE.INVALID_JSON?.suggestion ?? '', example: EX.fields, docs: 'svc://docs/walker-responses' },
  { re: /Cannot find (package|module) 'svc'|ERR_MODULE_NOT_FOUND[^\n]*'svc'/, title: 'svc is not installed in this project', explanation: 'The project has no `svc` dependency, so `import … from \'svc\'` cannot resolve. svc is not on the npm registry under that name.', suggestion: 'Install it from a checkout (`npx svc init` there makes a project that depends on it, or `npm install <path to the checkout or svc-x.y.z.tgz>`).', example: 'npm install ../svc   # a checkout, or the tarball `npm pack` made there', docs: 'svc://docs/install' },
  { re: /no entry file given and no main\.ts/, title: 'No entry file', explanation: '`svc` commands look for main.ts, else app.ts, in the current folder when no entry is named.', suggestion: 'Name the entry (`svc start app.ts`) or run from the project folder.', example: 'npx svc start app.ts', docs: 'svc://docs/cli' },
  { re: /another svc process \(pid \d+\) is serving/, title: 'The data folder is already served', explanation: 'One process serves a data folder; the operating system holds the lock for the life of that process.', suggestion: 'Stop the other process, or give this one its own `SVC_DATA_DIR`. For several processes on one service use a cluster (`KV_URL` + `DOCDB_URI`).', example: 'SVC_DATA_DIR=/tmp/other npx svc start app.ts --port 8001', docs: 'svc://docs/scale' },
  { re: /JWT_SECRET/, title: 'A real JWT secret is required', explanation: 'With `--profile prod` (or NODE_ENV=production) svc refuses to start without `JWT_SECRET`.', suggestion: 'Set `JWT_SECRET` (e.g. `openssl rand -hex 32`) and keep it: tokens are signed with it.', example: 'export JWT_SECRET="$(openssl rand -hex 32)"', docs: 'svc://docs/tutorial-production-local' },
  { re: /timed out after \d+ s: the run was killed/, title: 'run_svc stopped the run at its timeout', explanation: 'The module (its top level, or the entry point) was still running when `timeout` seconds were up: an endless loop, an await that never settles, or slow work.', suggestion: 'Look for loops without an end and promises nobody resolves; a walker visiting nodes it already visited loops forever (keep a seen set). Raise `timeout` (up to 60 s) only for slow but finite work.', example: EX.awaitAll, docs: 'svc://docs/debugging' },
  { re: /ran out of memory/, title: 'run_svc stopped the run: out of memory', explanation: 'The run used more than its heap (256 MB) or its cgroup allows.', suggestion: 'Look for data that grows without bound (arrays filled in a loop, a graph built without limit).', example: EX.awaitAll, docs: 'svc://docs/debugging' },
  { re: /(?<!SVC_)ERR_ACCESS_DENIED|Access to this API has been restricted/, title: 'The sandbox refused an operation', explanation: 'run_svc and graph_visualize run modules with no network, reading only their own folder and svc, writing only their folder, and starting no process or thread.', suggestion: 'Keep the module to graph work; try file, network and process code in your own project with `svc start`.', example: EX.module, docs: 'svc://docs/mcp' },
  { re: /svc\/unknown-field|svc\/undeclared-field|svc\/field-not-in-has/, title: 'A field is not declared as svc needs it', explanation: 'A node, edge or walker field lives in `static has` (its schema) **and** a `declare` line (its type). A property outside `has` is not stored nor taken from the request; one without `declare` is untyped.', suggestion: 'Add the field to `static has` and `declare` it with the same type.', example: EX.declare, docs: 'svc://docs/foundation' },
  { re: /svc\/field-initializer|has an initializer: the own property hides/, title: 'A node or edge field has an initializer', explanation: 'A class field (`title = \'\'`) hides the stored value, so svc refuses the class at start (SVC_ERR_BAD_ARCHETYPE).', suggestion: 'Write `declare title: string;` and put the default in the schema: `T.String({ default: \'\' })`.', example: EX.declare, docs: 'svc://docs/foundation' },
  { re: /svc\/ability-type/, title: 'An ability names a class that cannot be its target', explanation: "A walker's `@entry(X)` reacts to node (or Root) classes, a node's `@entry(X)` to walker classes; X must be a class of that kind.", suggestion: 'Name a node class in a walker ability (`@entry(Todo)`), a walker class in a node ability.', example: EX.awaitAll, docs: 'svc://docs/osp' },
  { re: /svc\/walker-without-entry/, title: 'A walker with no entry ability does nothing', explanation: 'Spawned, a walker runs its `@entry` abilities for the node it is at; without one it reports nothing.', suggestion: 'Add `@entry(Root) start(here: Root) { … }` (or an ability for the node type it is spawned at).', example: EX.awaitAll, docs: 'svc://docs/osp' },
  { re: /svc\/public-spawns-private/, title: 'A public endpoint runs a private walker', explanation: 'spawn() does not check access: an anonymous caller of the public walker or function would run the private one, on the shared guest graph.', suggestion: 'Make the spawned walker public on purpose, or the caller private.', example: EX.token, docs: 'svc://docs/advanced' },
  { re: /svc\/access-value/, title: 'An access level svc does not know', explanation: "`static access` is 'pub', 'priv' or 'protect' (with `as const`); anything else is treated as private.", suggestion: "Write `static access = 'pub' as const;`.", example: EX.token, docs: 'svc://docs/core-concepts' },
  { re: /await-graph-op|is used without await: its value is a Promise/, title: 'A graph operation was not awaited', explanation: "`here.connect(…)`, `out(…)` and the other node methods return promises; used as values without `await` they are Promises, reported as `{}` and not nodes.", suggestion: 'Await it, in an `async` ability: `const todo = await here.connect(new Todo({ … }))`.', example: EX.awaitAll, docs: 'svc://guide/pitfalls' },
  { re: /cannot reach (PostgreSQL|MongoDB)/i, title: 'The shared database cannot be reached', explanation: 'svc could not connect to `DOCDB_URI` at start (one line, exit 1).', suggestion: 'Check the URI, the network and the database; the password is hidden in the message.', example: "export DOCDB_URI='postgres://svc:secret@db.internal:5432/svc'", docs: 'svc://docs/scale' },
];

// ---------------------------------------------------------------- TypeScript diagnostics

type Diagnostic = { title: string; explanation: string; suggestion: string; example?: string; docs?: string };

const TS: Record<number, Diagnostic> = {
  1005: { title: 'Syntax error: a token is expected', explanation: 'The parser expected `;`, `,`, `)` or `}` — an unclosed brace or parenthesis, or syntax of another language (a Python `has title: str;` line, `can … with … entry`).', suggestion: 'svc code is TypeScript: fields are `static has = T.Object({...})` plus `declare`, abilities are decorated methods. Check the braces around the reported line.', example: EX.module, docs: 'svc://docs/cheatsheet' },
  1206: { title: 'Decorators are not valid here', explanation: 'A decorator was put on something other than a class method (a function, a property, a variable).', suggestion: 'Put `@entry(...)`/`@exit(...)` on methods of a Walker or Node class.', example: EX.awaitAll, docs: 'svc://docs/osp' },
  1308: { title: '`await` outside an async function', explanation: 'The ability awaits but is not declared `async`.', suggestion: 'Write `@entry(Root) async start(here: Root) { … }`.', example: EX.awaitAll, docs: 'svc://docs/tutorial-coding-primer' },
  1484: { title: 'A type must be imported with `import type`', explanation: 'With `verbatimModuleSyntax`, a name that is only a type (`FnContext`, `Caller`, `UploadStreamed`) needs a type-only import.', suggestion: "Write `import type { FnContext } from 'svc'` or `import { fn, type FnContext } from 'svc'`.", example: "import { fn, T, type FnContext } from 'svc';", docs: 'svc://docs/foundation' },
  2304: { title: 'Cannot find name', explanation: 'A name is used that is neither declared nor imported.', suggestion: "If it is part of svc (Node, Walker, Root, entry, fn, T, …), import it: `import { entry, Node, Root, T, Walker } from 'svc'`. A class declared further down used in a decorator: `@entry(() => Later)`.", example: EX.module, docs: 'svc://docs/cheatsheet' },
  2305: { title: 'svc has no export of that name', explanation: 'The name is not exported by svc (misspelt, or a feature not built yet: `--scale`, sandboxes, client bundling).', suggestion: 'Check the name against svc://grammar/tokens or the cheatsheet.', example: EX.module, docs: 'svc://docs/cheatsheet' },
  2307: { title: 'Cannot find module', explanation: "A module path does not resolve: `'svc'` not installed in the project, or a relative import with a wrong path or without its `.ts` extension.", suggestion: "Install svc in the project (svc://docs/install); import local files as `'./model.ts'`.", example: "import { Todo } from './model.ts';", docs: 'svc://docs/install' },
  2322: { title: 'Type is not assignable', explanation: "A value's type does not fit where it goes — often a node field written with another type than its `declare` says, or a `declare` that disagrees with `static has`.", suggestion: 'Keep each `declare field: Type` equal to its `static has` schema (T.Integer → number, T.Optional(X) → `field?: X`, T.Union of literals → a union type) and write values of that type.', example: EX.badWrite, docs: 'svc://docs/primitives' },
  2339: { title: 'Property does not exist on type', explanation: "The property is not declared on that type: a node field missing from its class, a query result typed `Node` because no class was passed, or `here` typed as `Root` in an ability for another node type.", suggestion: 'Add the field to `static has` **and** `declare` it; pass the class to queries (`here.out(Todo)` gives `Todo[]`); type the ability parameter as the node class (`@entry(Todo) each(here: Todo)`).', example: EX.declare, docs: 'svc://docs/osp' },
  2345: { title: 'Argument type does not fit the parameter', explanation: 'A call got an argument of another type. In svc the usual one is a Promise where nodes are expected: `this.visit(here.out(Todo))`.', suggestion: 'Await graph queries before passing them on (`this.visit(await here.out(Todo))`); give `new Node({...})` the declared field types.', example: EX.awaitAll, docs: 'svc://guide/pitfalls' },
  2353: { title: 'Unknown property in an object literal', explanation: 'An options object has a key the type does not know — a typo such as `acess` in `fn({...})` or `methods` in `restspec({...})`.', suggestion: "Options of fn: `access`, `params`, `method`, `path`, `envelope`, `produces`; restspec: `method`, `path`, `protocol`, `broadcast`.", example: "export const add = fn({ access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => a + b);", docs: 'svc://docs/functions-objects' },
  2416: { title: 'A property clashes with the base class', explanation: 'A field is named like a member of Walker, Node or Edge (`root`, `caller`, `log`, `id`, `out`, …).', suggestion: 'Rename the field; svc also refuses such names at start (SVC_ERR_BAD_ARCHETYPE).', example: EX.declare, docs: 'svc://docs/foundation' },
  2448: { title: 'Used before its declaration', explanation: 'A class is referenced (e.g. in `@entry(Later)`) before the line that declares it.', suggestion: "Use a thunk or the name: `@entry(() => Later)` or `@entry('Later')`.", example: '@entry(() => Visitor) greet(w: Visitor) { … }', docs: 'svc://docs/osp' },
  2449: { title: 'Class used before its declaration', explanation: 'A decorator argument names a class declared further down the file.', suggestion: "Use a thunk or the name: `@entry(() => Later)` or `@entry('Later')`.", example: '@entry(() => Visitor) greet(w: Visitor) { … }', docs: 'svc://docs/osp' },
  2551: { title: 'Property does not exist — did you mean another?', explanation: 'A misspelt member, such as `outEdge` for `outEdges`, `disengaged` for `disengage`, `report` on the wrong object.', suggestion: 'Use the suggested name; the walker and node members are listed in svc://grammar/tokens.', example: EX.awaitAll, docs: 'svc://docs/cheatsheet' },
  2554: { title: 'Wrong number of arguments', explanation: 'A call has more or fewer arguments than its signature: e.g. `fn(handler)` without its options, `new SvcError(code)` without a message.', suggestion: "`fn(options, handler)` (options may be `{}`); `new SvcError(code, message, { status })`; `here.connect(node, edge?)`.", example: EX.throwOwn, docs: 'svc://docs/functions-objects' },
  2564: { title: 'Property has no initializer', explanation: "With `strict`, a field without initializer must be assigned in the constructor — but svc fields must not be initialised.", suggestion: 'Use `declare`: `declare title: string;` (svc fills it from the schema, the request or the store).', example: EX.declare, docs: 'svc://docs/foundation' },
  2610: { title: 'A field overrides an accessor of the base class', explanation: 'A `has` field is named like a getter of Walker or Node (`root`, `caller`, `reports`, `log`, `traceId`, `id`).', suggestion: 'Rename the field (e.g. `root` → `rootId`).', example: EX.declare, docs: 'svc://docs/foundation' },
  2693: { title: 'A type is used as a value', explanation: 'A name imported with `import type` (or only a type) is used at run time, e.g. `extends Node` after `import type { Node }`.', suggestion: "Import classes and functions as values: `import { Node } from 'svc'`.", example: EX.module, docs: 'svc://docs/foundation' },
  2769: { title: 'No overload matches this call', explanation: 'None of the signatures fits — e.g. `out(Type, filter)` with a filter of fields the class does not have, or `fn` options of the wrong shape.', suggestion: 'Read the first overload\'s error; filters are `(node) => boolean` or `{ field: value }` of the class\'s own fields.', example: "const open = await here.out(Todo, { done: false });", docs: 'svc://docs/osp' },
  2835: { title: 'Relative imports need a file extension', explanation: 'With NodeNext modules a relative import names the file.', suggestion: "Write `import { Todo } from './model.ts'`.", example: "import { Todo } from './model.ts';", docs: 'svc://docs/code-organization' },
  5097: { title: 'A `.ts` import needs allowImportingTsExtensions', explanation: 'The tsconfig does not allow importing `.ts` files by name.', suggestion: 'Use the scaffold\'s tsconfig: `"allowImportingTsExtensions": true` with `"noEmit": true`.', docs: 'svc://docs/install' },
  6133: { title: 'Declared but never used', explanation: 'With `noUnusedLocals`/`noUnusedParameters`, an unused name is an error.', suggestion: 'Remove it, or prefix an unused parameter with `_` (`fn({}, async (_args, ctx) => …)`).', example: 'export const stats = fn({}, async (_args, ctx) => (await ctx.root.out(Todo)).length);', docs: 'svc://docs/functions-objects' },
  7006: { title: 'Parameter implicitly has an `any` type', explanation: 'A parameter has no type and none can be inferred — often an ability\'s `here`.', suggestion: 'Type ability parameters (`@entry(Todo) each(here: Todo)`); pass the class to queries so callbacks are typed (`here.out(Todo, (t) => t.done)`).', example: EX.awaitAll, docs: 'svc://docs/osp' },
  18046: { title: 'Value is of type `unknown`', explanation: 'E.g. the reports of `this.spawn(...)` (`unknown[]`) or `event.data` are not typed.', suggestion: 'Check or cast them: `const [n] = (await this.spawn(Count)) as number[]`.', example: 'const [total] = (await this.spawn(CountTodos)) as number[];', docs: 'svc://docs/walker-responses' },
  18048: { title: 'Value is possibly `undefined`', explanation: 'E.g. `const [todo] = await here.out(Todo, …)` — nothing may match — or an optional field.', suggestion: 'Check it first (`if (!todo) throw new SvcError(\'TODO_NOT_FOUND\', …, { status: 404 })`) or use `?.` / `??`.', example: EX.notFound, docs: 'svc://guide/pitfalls' },
  2532: { title: 'Object is possibly `undefined`', explanation: 'A value that may be missing is used directly — typically the first element of a query result.', suggestion: 'Check it before use, or use `?.` / `??`.', example: EX.notFound, docs: 'svc://guide/pitfalls' },
  2739: { title: 'A value lacks properties its type needs — often a Promise that was not awaited', explanation: "`Type 'Promise<Todo>' is missing the following properties from type 'Todo'`: a graph operation's result (`here.connect(…)`, `out(…)`) was used without `await`.", suggestion: 'Await it: `const todo = await here.connect(new Todo({ … }))`, in an `async` ability.', example: EX.awaitAll, docs: 'svc://guide/pitfalls' },
  2740: { title: 'A value lacks properties its type needs — often a Promise that was not awaited', explanation: "`Type 'Promise<…>' is missing the following properties …`: a graph operation's result was used without `await`.", suggestion: 'Await it: `const todos = await here.out(Todo)`.', example: EX.awaitAll, docs: 'svc://guide/pitfalls' },
  2741: { title: 'A required property is missing', explanation: 'An object lacks a property its type requires — e.g. `new Todo({})` without a field `static has` requires.', suggestion: 'Give every required field (or a default in the schema: `T.String({ default: \'\' })`).', example: EX.declare, docs: 'svc://docs/primitives' },
  2531: { title: 'Object is possibly `null`', explanation: 'A value that may be null (`kv.get(key)` answers `string | null`) is used directly.', suggestion: 'Check it or give a fallback: `Number((await kv.get(k)) ?? \'0\')`.', docs: 'svc://guide/pitfalls' },
};

function fromTypeScript(code: number, message: string): Explanation {
  const known = TS[code];
  const name = /Cannot find name '([^']+)'/.exec(message)?.[1];
  let suggestion = known?.suggestion ?? 'Read the message at the reported line; svc code is strict TypeScript (run `tsc --noEmit` or `validate_svc`).';
  if (code === 2304 && name && svcExports().has(name)) suggestion = `\`${name}\` is exported by svc: add it to the import — \`import { ${name} } from 'svc'\`. ${suggestion}`;
  if (code === 2345 && /Promise</.test(message)) suggestion = `A Promise is passed where a value is expected: add \`await\`. ${suggestion}`;
  if (code === 2307 && /'svc(\/[^']*)?'/.test(message)) suggestion = 'svc is not installed in this project (it is not on the npm registry under that name): install it from a checkout or a tarball (svc://docs/install).';
  return {
    title: `TS${code}: ${known?.title ?? 'TypeScript error'}`,
    explanation: `${known?.explanation ?? 'A TypeScript diagnostic.'} Message: ${plain(message).slice(0, 500)}`,
    suggestion,
    example: known?.example ?? EX.module,
    docs_uri: known?.docs ?? 'svc://docs/foundation',
  };
}

/**
 * The most characters of a message the patterns look at: what identifies an
 * error is at its start (a stack or a dump after it is not read), and every
 * pattern's cost is bounded by it.
 */
const EXAMINED_CHARS = 8 * 1024;

let templates: { pieces: string[]; code: number }[] | undefined;

/**
 * Whether `text` starts as the template whose literal pieces (the text
 * between its `{0}`, `{1}`… placeholders) are `pieces`: the first piece at
 * the start, each later one after at least one character of placeholder.
 * Linear: each piece is looked for once, at its earliest place after the
 * previous one (the earliest place leaves the most room for the rest, so
 * nothing is ever tried again — a regular expression of lazy gaps
 * backtracked exponentially on a repeated pattern).
 */
function startsAsTemplate(text: string, pieces: readonly string[]): boolean {
  const [first = '', ...rest] = pieces;
  if (!text.startsWith(first)) return false;
  let at = first.length;
  for (const piece of rest) {
    // A placeholder takes at least one character.
    const found = text.indexOf(piece, at + 1);
    if (found === -1 || found < at + 1) return false;
    at = found + piece.length;
  }
  return true;
}

/**
 * The TypeScript diagnostic a message is, by the compiler's own message
 * table (`Property '{0}' does not exist on type '{1}'.` → 2339): messages
 * shown without their code (validate_svc's, an editor's) are explained too.
 * Longer templates first, so the most specific wins.
 */
function diagnosticCode(message: string): number | undefined {
  if (!templates) {
    const table = (typescript as unknown as { Diagnostics: Record<string, { code: number; message: string; category: number }> }).Diagnostics;
    templates = Object.values(table)
      .filter((d) => d.category === typescript.DiagnosticCategory.Error && d.message.length > 12)
      .sort((a, b) => b.message.length - a.message.length)
      .map((d) => ({ code: d.code, pieces: d.message.split(/\{\d+\}/) }));
  }
  // The message alone, as a compiler prints it after `error TSxxxx: ` or `file(l,c): `.
  const text = message.replace(/^[^\n]*?\(\d+,\d+\):\s*/, '').trim();
  return templates.find((t) => startsAsTemplate(text, t.pieces))?.code;
}

let exportNames: Set<string> | undefined;
/** The value and type names `svc` exports, read from the package's `index.ts`. */
function svcExports(): Set<string> {
  if (exportNames) return exportNames;
  const names = new Set<string>();
  try {
    const src = readFileSync(fileURLToPath(new URL('index.ts', PACKAGE_ROOT)), 'utf8');
    for (const m of src.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) for (const n of (m[1] as string).split(',')) names.add(n.trim().split(/\s+as\s+/).pop() as string);
    for (const m of src.matchAll(/export\s+(?:const|function|class|interface|type)\s+([A-Za-z_$][\w$]*)/g)) names.add(m[1] as string);
  } catch {
    // Without the file, suggestions are only less specific.
  }
  names.delete('');
  exportNames = names;
  return names;
}

// ---------------------------------------------------------------- the tool

/**
 * The error code a message carries, and the envelope's own message when it
 * is one: the `code` of a JSON envelope (`{"code", "message"}` or svc's
 * `{"ok": false, "error": {"code", "message"}}`, after a status or other
 * text too), else a code of docs/errors.md written in the text — unless the
 * text is a TypeScript diagnostic (`TS2339`), whose own code explains it.
 */
function errorCode(message: string): { code: string; message?: string } | undefined {
  const open = message.indexOf('{');
  const close = message.lastIndexOf('}');
  if (open !== -1 && close > open) {
    try {
      const body = JSON.parse(message.slice(open, close + 1)) as { code?: unknown; message?: unknown; error?: { code?: unknown; message?: unknown } };
      const envelope = typeof body?.error === 'object' && body.error !== null ? body.error : body;
      if (typeof envelope?.code === 'string') return { code: envelope.code, ...(typeof envelope.message === 'string' ? { message: envelope.message } : {}) };
    } catch {
      // Not JSON after all: the text is read below.
    }
  }
  const quoted = /"code"\s*:\s*"([A-Z][A-Z0-9_]*)"/.exec(message)?.[1];
  if (quoted) return { code: quoted };
  if (/\bTS\d{4,5}\b/.test(message)) return undefined;
  const codes = errorCatalogue();
  const token = (message.match(/[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*/g) ?? []).find((t) => codes.has(t));
  if (token !== undefined) return { code: token };
  const head = message.slice(0, EXAMINED_CHARS);
  const form = RUNTIME_FORMS.find((f) => f.re.test(head));
  return form && { code: form.code, message: head };
}

/**
 * Messages in a shape only the runtime gives them, with the code it raises
 * them under: read as that code when the code was left out (a log line, a
 * message copied without its envelope). The graph's write checks
 * (actors/walker/archetype.ts, transaction.ts) say `new Bookmark: field
 * "title" must be a string` (the app's own `new Bookmark({…})`),
 * `new Bookmark takes an object of fields`, `Bookmark no longer fits its
 * schema: …`, `Bookmark holds a value that is not JSON (…)`: the app's
 * write, SVC_ERR_BAD_WRITE. A client's fields are told `Greet: field "name"
 * must be a string` (VALIDATION_ERROR) — never after `new `.
 */
const RUNTIME_FORMS: readonly { re: RegExp; code: string }[] = [
  { re: /(?:^|[\s"'`:({[])new [A-Za-z_$][\w$]*(?:: | takes an object of fields)/, code: 'SVC_ERR_BAD_WRITE' },
  { re: / no longer fits its schema: | holds a value that is not JSON \(a function/, code: 'SVC_ERR_BAD_WRITE' },
];

const STATUS_CODE: Record<string, string> = { '400': 'VALIDATION_ERROR', '401': 'UNAUTHORIZED', '403': 'FORBIDDEN', '404': 'NOT_FOUND', '405': 'METHOD_NOT_ALLOWED', '409': 'CONFLICT', '413': 'PAYLOAD_TOO_LARGE', '415': 'UNSUPPORTED_MEDIA_TYPE', '429': 'TOO_MANY_REQUESTS', '500': 'EXECUTION_ERROR', '503': 'SERVICE_UNAVAILABLE', '504': 'TIMEOUT' };

/**
 * `explain_error`: title, explanation, suggestion, an example and the page to
 * read for an error message — a TypeScript diagnostic, an svc error code, a
 * runtime message, a WebSocket close code or an HTTP status.
 *
 * @example
 * explainError({ error_message: "app.ts(12,5): error TS2339: Property 'done' does not exist on type 'Node'." }).title
 * // 'TS2339: Property does not exist on type'
 */
export function explainError(args: { error_message: string }): Explanation {
  const message = args?.error_message;
  if (typeof message !== 'string' || message.trim() === '') throw new ToolInputError('error_message must be a non-empty string');
  checkSize(message, 'error_message');
  const codes = errorCatalogue();
  const asPattern = (p: Pattern): Explanation => ({ title: p.title, explanation: p.explanation, suggestion: p.suggestion, example: p.example, docs_uri: p.docs });

  // The code first: it says whose mistake it is. A message's words refine it only through patterns raised under that
  // code (`must be a string` is the client's wrong JSON under VALIDATION_ERROR, the app's own write under SVC_ERR_BAD_WRITE).
  const coded = errorCode(message);
  const entry = coded ? codes.get(coded.code) : undefined;
  if (coded && entry) {
    const text = (coded.message ?? message).slice(0, EXAMINED_CHARS);
    const refined = RUNTIME.find((p) => p.codes?.includes(coded.code) && p.re.test(text));
    return refined ? asPattern(refined) : fromCatalogue(entry, coded.message);
  }

  // What the patterns read: the message's start (EXAMINED_CHARS), so that none of them costs more than that.
  const head = message.slice(0, EXAMINED_CHARS);
  const ts = /\bTS(\d{4,5})\b/.exec(head);
  if (ts) return fromTypeScript(Number(ts[1]), head);

  for (const p of RUNTIME) {
    if (p.re.test(head)) return asPattern(p);
  }

  const byText = diagnosticCode(head);
  if (byText !== undefined) return fromTypeScript(byText, head);

  if (/close|websocket|\bws\b|socket/i.test(head)) {
    for (const [code, meaning] of websocketCloseCodes()) {
      if (new RegExp(`\\b${code}\\b`).test(head)) {
        return {
          title: `WebSocket close code ${code}`,
          explanation: meaning,
          suggestion: code === '4401' || code === '4403' ? 'Connect with a valid token (`?token=` or a first frame `{"token": "…"}`) of a user who may use the walker; refresh it before it expires (`{"type": "refresh", "token": "…"}`).' : code === '4408' ? 'Send frames or answer pings within `idle_timeout_seconds`, and the token within `auth_timeout_seconds`.' : code === '4413' || code === '1009' ? 'Send smaller frames, or raise `[scale.websocket] max_frame_bytes`.' : 'Reconnect after a short wait.',
          example: "const chat = await WalkerSocket.connect('http://localhost:8000', 'Chat', { token }); // from 'svc/client'",
          docs_uri: 'svc://docs/client',
        };
      }
    }
  }

  const status = /\b(?:HTTP\/\d(?:\.\d)?\s+|status(?: code)?\s*:?\s*)?([45]\d\d)\b/.exec(head)?.[1];
  const byStatus = status ? codes.get(STATUS_CODE[status] ?? '') : undefined;
  if (byStatus) {
    const answer = fromCatalogue(byStatus);
    return { ...answer, title: `HTTP ${status}: most likely ${answer.title}` };
  }

  return {
    title: 'An error svc does not recognise',
    explanation: `No svc error code, TypeScript diagnostic or known runtime message was found in: ${plain(head).slice(0, 300)}`,
    suggestion: 'Check the module with `validate_svc`; search the docs with the message\'s key words (`search_docs`); compare with svc://guide/pitfalls. Errors svc answers over HTTP carry a `code` in the envelope — pass that code for a precise explanation.',
    example: EX.module,
    docs_uri: 'svc://guide/pitfalls',
  };
}
