// explain_error: every code docs/errors.md documents is explained from that file (not by the
// fallback), the TypeScript diagnostics svc code meets have svc-specific advice, and messages the
// running server really answers are recognised.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { testApp } from 'svc/testing';
import { createResources } from '../../mcp/resources.ts';
import { errorCatalogue, explainError, websocketCloseCodes } from '../../mcp/tools/explain.ts';
import { ToolInputError } from '../../mcp/types.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const uris = new Set(createResources({ grammar: { spec: async () => '', tokens: () => '' } }).list().map((r) => r.uri));
const FALLBACK = /does not recognise/;

/** The codes of docs/errors.md, found independently of the explainer's parser: table rows and every SVC_ERR_ code named. */
function documentedCodes(): Set<string> {
  const codes = new Set<string>();
  for (const m of doc.matchAll(/^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|\s*\d{3}\s*\|/gm)) codes.add(m[1] as string);
  for (const m of doc.matchAll(/`(SVC_ERR_[A-Z0-9_]+)`/g)) codes.add(m[1] as string);
  return codes;
}

t.test('every code of docs/errors.md is explained from the file', async (t) => {
  const codes = documentedCodes();
  t.ok(codes.size >= 90, `${codes.size} codes in docs/errors.md`);
  t.same([...errorCatalogue().keys()].sort(), [...codes].sort(), 'the explainer parsed exactly the documented codes');
  for (const code of codes) {
    const e = explainError({ error_message: `request failed: ${code}` });
    t.notMatch(e.title, FALLBACK, `${code}: not the fallback`);
    t.match(e.title, code, `${code}: named in the title`);
    const row = new RegExp(`^\\|\\s*\`${code}\`\\s*\\|\\s*(\\d{3})\\s*\\|`, 'm').exec(doc);
    if (row) t.match(e.title, `HTTP ${row[1]}`, `${code}: its status`);
    t.ok(e.explanation.length > 20 && e.suggestion.length > 20 && e.example.length > 10, `${code}: explanation, suggestion, example`);
    t.ok(uris.has(e.docs_uri), `${code}: docs_uri ${e.docs_uri} is a resource`);
  }
});

t.test('the meaning comes from the file, so it cannot drift', async (t) => {
  const e = explainError({ error_message: 'SVC_ERR_BAD_WRITE' });
  t.match(e.explanation, 'the app\'s mistake, not the client\'s');
  t.match(explainError({ error_message: 'SVC_ERR_NODE_NOT_FOUND' }).title, 'answered as NOT_FOUND');
  t.match(explainError({ error_message: 'SVC_ERR_GATEWAY_CONFIG' }), { title: /SVC_ERR_GATEWAY_CONFIG \(at start\)/, explanation: /bad options/ });
  t.match(explainError({ error_message: 'INVALID_TOPIC' }).explanation, /Event streaming/);
});

t.test('WebSocket close codes', async (t) => {
  const closes = [...doc.matchAll(/^\|\s*(\d{4})\s*\|/gm)].map((m) => m[1] as string);
  t.ok(closes.length >= 7);
  t.same([...websocketCloseCodes().keys()].sort(), [...closes].sort());
  for (const code of closes) {
    const e = explainError({ error_message: `WebSocket closed with code ${code}` });
    t.equal(e.title, `WebSocket close code ${code}`);
    t.ok(uris.has(e.docs_uri));
  }
});

t.test('TypeScript diagnostics, by code number, with svc advice', async (t) => {
  const cases: [string, RegExp][] = [
    ["app.ts(3,10): error TS2304: Cannot find name 'Walker'.", /import \{ Walker \} from 'svc'/],
    ["error TS2322: Type 'string' is not assignable to type 'boolean'.", /static has/],
    ["error TS2339: Property 'done' does not exist on type 'Node'.", /declare/],
    ["error TS2345: Argument of type 'Promise<Todo[]>' is not assignable to parameter of type 'Node | readonly Node[]'.", /await/],
    ['error TS2554: Expected 2 arguments, but got 1.', /fn\(options, handler\)/],
    ["error TS2551: Property 'outEdge' does not exist on type 'Root'. Did you mean 'outEdges'?", /suggested name/],
    ["error TS1005: ';' expected.", /TypeScript/],
    ["error TS7006: Parameter 'here' implicitly has an 'any' type.", /here: Todo/],
    ["error TS2307: Cannot find module 'svc' or its corresponding type declarations.", /not installed/],
    ["error TS18048: 'todo' is possibly 'undefined'.", /Check it/],
    ['error TS2532: Object is possibly \'undefined\'.', /Check it/],
    ["error TS2564: Property 'title' has no initializer and is not definitely assigned in the constructor.", /declare title/],
    ["error TS2449: Class 'Visitor' used before its declaration.", /\(\) => Later/],
    ["error TS2610: 'root' is defined as an accessor in class 'Walker', but is overridden here in 'Share' as an instance property.", /Rename/],
  ];
  for (const [message, advice] of cases) {
    const code = /TS(\d+)/.exec(message)?.[1] as string;
    const e = explainError({ error_message: message });
    t.match(e.title, new RegExp(`^TS${code}: `), `TS${code} recognised`);
    t.notMatch(e.title, /TypeScript error$/, `TS${code} has its own entry`);
    t.match(e.suggestion, advice, `TS${code}: svc advice`);
    t.ok(uris.has(e.docs_uri), `TS${code}: docs_uri ${e.docs_uri} is a resource`);
  }
  const other = explainError({ error_message: 'error TS9999: something new' });
  t.match(other.title, /^TS9999: TypeScript error/, 'an unknown TS code still gets a TypeScript answer');
});

t.test('messages the running server really answers are recognised', async (t) => {
  const app = await testApp({ entry: new URL('../../mcp/examples/basic-walker/app.ts', import.meta.url).pathname });
  t.teardown(() => app.close());
  const noToken = await app.inject({ method: 'POST', url: '/walker/Greetings' });
  t.equal(noToken.status, 401);
  const e401 = explainError({ error_message: `${noToken.status} ${noToken.body}` });
  t.match(e401, { title: /private walker or function was called without a token/, suggestion: /Authorization: Bearer/, docs_uri: 'svc://docs/tutorial-fullstack-auth' });
  const wrongType = await app.inject({ method: 'POST', url: '/walker/Greet', body: { name: 5 } });
  t.match(explainError({ error_message: wrongType.body }).explanation, /never coerced/);
  const unknownField = await app.inject({ method: 'POST', url: '/walker/Greet', body: { name: 'a', nmae: 'b' } });
  t.match(explainError({ error_message: unknownField.body }).title, /does not declare/);
  const missing = await app.inject({ method: 'POST', url: '/walker/Nope' });
  t.match(explainError({ error_message: missing.body }).title, /No endpoint/);
  const notJson = await app.inject({ method: 'POST', url: '/walker/Greet', body: '{', headers: { 'content-type': 'application/json' } });
  t.match(explainError({ error_message: notJson.body }).title, /not JSON/);
});

t.test('runtime messages of the programming model', async (t) => {
  const cases: [string, RegExp][] = [
    ['{"code":"VALIDATION_ERROR","message":"visit() takes nodes"}', /visit\(\) was given/],
    ['SVC_ERR_BAD_ARCHETYPE: Todo.title is a class field, so writes to it are not seen; declare it with `declare title: …`', /initializer/],
    ['Todo abc can only change inside a walker run', /outside a walker run/],
    ['Note.text: 5 does not match its schema', /schema refuses/],
    ["Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'svc' imported from /x/app.ts", /not installed/],
    ['svc: another svc process (pid 42) is serving the data in /x/.svc/data', /already served/],
  ];
  for (const [message, title] of cases) t.match(explainError({ error_message: message }).title, title, message);
});

t.test('a bare HTTP status, the fallback, and bad input', async (t) => {
  t.match(explainError({ error_message: 'the server answered HTTP 403' }).title, /^HTTP 403: most likely FORBIDDEN/);
  const unknown = explainError({ error_message: 'the moon is made of cheese' });
  t.match(unknown, { title: FALLBACK, docs_uri: 'svc://guide/pitfalls' });
  t.ok(uris.has(unknown.docs_uri));
  t.throws(() => explainError({ error_message: '' }), ToolInputError);
  t.throws(() => explainError({ error_message: 42 as unknown as string }), ToolInputError);
  t.throws(() => explainError({ error_message: 'x'.repeat(101 * 1024) }), ToolInputError);
});

t.test("messages as validate_svc and run_svc show them (no TS code in the text)", async (t) => {
  const { explainError: explain } = await import('../../mcp/tools/explain.ts');
  t.match(explain({ error_message: "Property 'name' does not exist on type 'Node'." }).title, /^TS2339/);
  t.match(explain({ error_message: "Type 'Promise<Tag>' is missing the following properties from type 'Tag': name, id" }).title, /^TS2739.*await/);
  t.match(explain({ error_message: 'timed out after 3 s: the run was killed' }).title, /timeout/);
  t.match(explain({ error_message: 'svc/field-initializer' }).title, /initializer/);
  t.notMatch(explain({ error_message: 'SVC_ERR_ACCESS_DENIED' }).title, /sandbox/, 'an svc code is not the sandbox message');
});

t.test('a message built to make the TypeScript templates backtrack is answered at once (it froze the server for 36 s)', async (t) => {
  // TS2713's template, its placeholders filled with one character and its middle repeated without its end: a regular
  // expression of lazy gaps per template tried every way to split it.
  const template = "Cannot access '{0}.{1}' because '{0}' is a type, but not a namespace. Did you mean to retrieve the type of the property '{1}' in '{0}' with '{0}[\"{1}\"]'?";
  const parts = template.split(/\{\d+\}/);
  const attack = (m: number) => `${parts[0]}x${parts.slice(1, -1).map((p) => `${p}x`).join('').repeat(m)}`;
  for (const m of [55, 700]) {
    const input = attack(m);
    const started = performance.now();
    const e = explainError({ error_message: input });
    const ms = performance.now() - started;
    t.ok(ms < 2000, `${input.length} characters answered in ${ms.toFixed(0)} ms`);
    t.match(e.title, FALLBACK, 'not a message TypeScript prints');
  }
  // The same template, whole: still recognised without its code.
  const real = "Cannot access 'Todo.title' because 'Todo' is a type, but not a namespace. Did you mean to retrieve the type of the property 'title' in 'Todo' with 'Todo[\"title\"]'?";
  t.match(explainError({ error_message: real }).title, /^TS2713/);
  t.match(explainError({ error_message: `app.ts(3,7): ${real}` }).title, /^TS2713/, 'after a file(line,col) prefix');
  t.match(explainError({ error_message: "Property 'x' does not exist on type 'Root'." }).title, /^TS2339/, 'a placeholder at the end of a piece');
  t.match(explainError({ error_message: "Cannot find name 'Walker'." }).title, /^TS2304/);
});

t.test("the code first: the server's own SVC_ERR_BAD_WRITE is the app's mistake, not a client's wrong JSON type", async (t) => {
  // An app whose walker writes a number into a string field: the server answers its own envelope.
  const dir = t.testdir({
    'app.ts': `import { entry, Node, Root, T, Walker } from 'svc';
export class Bookmark extends Node {
  static has = T.Object({ title: T.String() });
  declare title: string;
}
export class Save extends Walker {
  static access = 'pub' as const;
  @entry(Root) async save(here: Root) {
    this.report(await here.connect(new Bookmark({ title: 5 as unknown as string })));
  }
}
`,
  });
  const app = await testApp({ entry: `${dir}/app.ts` });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/walker/Save', body: {} });
  t.equal(res.status, 500);
  const envelope = res.body as string;
  t.match(envelope, /SVC_ERR_BAD_WRITE/);
  t.match(envelope, /must be a string/, 'its message reads like a client type error');
  const bookmark = 'new Bookmark: field "title" must be a string';
  for (const message of [envelope, `${res.status} ${envelope}`, JSON.stringify({ code: 'SVC_ERR_BAD_WRITE', message: bookmark }), `SVC_ERR_BAD_WRITE: ${bookmark}`]) {
    const e = explainError({ error_message: message });
    t.match(e.title, /^SVC_ERR_BAD_WRITE \(HTTP 500\)/, `by its code: ${message.slice(0, 60)}`);
    t.notMatch(e.title, /wrong JSON type/);
    t.match(e.explanation, "the app's mistake, not the client's");
    t.match(e.suggestion, /Your code wrote a value/);
  }
  t.match(explainError({ error_message: JSON.stringify({ code: 'SVC_ERR_BAD_WRITE', message: bookmark }) }).explanation, /Message: new Bookmark: field "title" must be a string/, 'the message is kept');
  // The same words under the client's code are the client's wrong type; without any code, the words decide.
  t.match(explainError({ error_message: JSON.stringify({ ok: false, error: { code: 'VALIDATION_ERROR', message: 'title: must be a string' } }) }).title, /wrong JSON type/);
  t.match(explainError({ error_message: 'title: must be a string' }).title, /wrong JSON type/);
  // A code the message's words belong to still refines it; one they do not belong to does not.
  t.match(explainError({ error_message: JSON.stringify({ code: 'SVC_ERR_BAD_WRITE', message: 'Note.text: 5 does not match its schema' }) }).title, /schema refuses/);
  t.match(explainError({ error_message: JSON.stringify({ code: 'EXECUTION_ERROR', message: 'visit() takes nodes' }) }).title, /^EXECUTION_ERROR/);
});

t.test("without its code, the runtime's own BAD_WRITE message is still the app's write; a client's field message stays the client's", async (t) => {
  // A real app: one walker builds a node with a wrong field (the runtime's message), another takes a string (the client's).
  const dir = t.testdir({
    'app.ts': `import { entry, Node, Root, T, Walker } from 'svc';
export class Bookmark extends Node {
  static has = T.Object({ title: T.String() });
  declare title: string;
}
export class Save extends Walker {
  static access = 'pub' as const;
  @entry(Root) async save(here: Root) {
    this.report(await here.connect(new Bookmark({ title: 5 as unknown as string })));
  }
}
export class Name extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ title: T.String() });
  declare title: string;
  @entry(Root) go() {
    this.report(this.title);
  }
}
`,
  });
  const app = await testApp({ entry: `${dir}/app.ts` });
  t.teardown(() => app.close());
  const messageOf = (body: unknown) => (JSON.parse(body as string) as { error: { code: string; message: string } }).error;
  const write = messageOf((await app.inject({ method: 'POST', url: '/walker/Save', body: {} })).body);
  const client = messageOf((await app.inject({ method: 'POST', url: '/walker/Name', body: { title: 5 } })).body);
  t.match(write, { code: 'SVC_ERR_BAD_WRITE', message: 'new Bookmark: field "title" must be a string' });
  t.match(client, { code: 'VALIDATION_ERROR', message: 'Name: field "title" must be a string' });

  // The messages alone, as a log line or a copy without the envelope shows them.
  const runtime = [write.message, `Error: ${write.message}`, 'new Bookmark: missing required field "title"', 'new Bookmark takes an object of fields', 'Bookmark no longer fits its schema: title must be string', 'Bookmark holds a value that is not JSON (a function, BigInt, Date, undefined or a cycle)'];
  for (const message of runtime) {
    const e = explainError({ error_message: message });
    t.match(e.title, /^SVC_ERR_BAD_WRITE \(HTTP 500\)/, `the app's write: ${message}`);
    t.match(e.explanation, "the app's mistake, not the client's");
    t.notMatch(e.title, /wrong JSON type|required field is missing/);
  }
  for (const message of [client.message, 'Name: missing required field "title"', 'title: must be a string']) {
    t.notMatch(explainError({ error_message: message }).title, /SVC_ERR_BAD_WRITE/, `the client's: ${message}`);
  }
  t.match(explainError({ error_message: client.message }).title, /wrong JSON type/);
  t.match(explainError({ error_message: 'Name: missing required field "title"' }).title, /required field is missing/);
});
