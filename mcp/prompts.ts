/**
 * The tool server's nine prompts, for writing svc code:
 * each takes string arguments and renders one instruction that states the
 * svc API shape, names the resources to read, and ends by asking to check the
 * result with the `validate_svc` tool. Plain data; the server registers them.
 *
 * @example
 * const prompt = PROMPTS.find((p) => p.name === 'write_walker')!;
 * prompt.render({ name: 'ListTodos', purpose: 'list the caller\'s todos', node_types: 'Todo' });
 */

/**
 * One argument of a prompt (all arguments are strings).
 * @example const a: PromptArgument = { name: 'purpose', description: 'What the module should do', required: true };
 */
export type PromptArgument = { name: string; description: string; required: boolean };

/**
 * A prompt: its arguments and how it renders.
 * @example const text = (PROMPTS[0] as Prompt).render({ name: 'shop', purpose: 'a small shop' });
 */
export type Prompt = {
  name: string;
  title: string;
  description: string;
  arguments: readonly PromptArgument[];
  /** The instruction for these arguments; a missing optional argument takes its default. */
  render(args: Record<string, string>): string;
};

/**
 * The sentence every rendered prompt ends with.
 * @example prompt.render(args).endsWith(VALIDATE_REQUEST) // true
 */
export const VALIDATE_REQUEST =
  'Finally, call the `validate_svc` tool with the complete module and fix every error and warning it reports, repeating until it answers `valid: true`.';

const SHAPE = `The svc programming model (TypeScript, imports from 'svc'):
- A node type: \`export class Todo extends Node { static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) }); declare title: string; declare done: boolean; }\` — fields are a TypeBox schema in \`static has\` and are declared with \`declare\`, never initialised.
- A walker is an endpoint, POST /walker/<Name>: \`export class AddTodo extends Walker { static has = T.Object({ title: T.String() }); declare title: string; @entry(Root) async add(here: Root) { this.report(await here.connect(new Todo({ title: this.title }))); } }\`. Its \`has\` fields are the request body. Private by default (token needed); \`static access = 'pub' as const\` makes it public.
- Abilities are methods decorated \`@entry(Type)\` / \`@exit(Type)\` (standard decorators). In them: \`this.visit(await here.out(Todo))\`, \`this.report(value)\`, \`this.skip()\`, \`this.disengage()\`, \`await this.spawn(Other, fields)\`, \`this.root\`, \`this.caller\`.
- Graph operations are async — always \`await\` them: \`here.connect(node, edge?)\`, \`here.out(Type?, filter?)\`, \`here.in(...)\`, \`here.outEdges(EdgeType?)\`, \`here.disconnect(node)\`, \`node.destroy()\`.
- A function is an endpoint, POST /function/<name>: \`export const add = fn({ access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => a + b);\` — the handler's second argument is \`ctx\` (\`ctx.root\`, \`ctx.caller\`, \`ctx.spawn\`, \`ctx.log\`).
- Errors: \`throw new SvcError('CODE', 'message', { status: 404 })\`. A run is a transaction: nothing of a failed run is committed.
- Export every node, edge and walker class from the entry module; values are validated, never coerced.
- The exact signatures of everything svc exports are in \`svc://grammar/spec\`; its vocabulary in \`svc://grammar/tokens\`.`;

const READ = (...uris: string[]) => `Before writing, read ${uris.map((u) => `\`${u}\``).join(', ')} (with \`get_resource\`), and \`search_docs\` for anything else you need.`;

const arg = (name: string, description: string, required = true): PromptArgument => ({ name, description, required });

function given(args: Record<string, string>, name: string, fallback = '(not given)'): string {
  const v = args[name];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : fallback;
}

function block(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}

function compose(...parts: string[]): string {
  return [...parts, VALIDATE_REQUEST].join('\n\n');
}

/**
 * The nine prompts, in the order a client lists them.
 * @example PROMPTS.map((p) => p.name) // ['write_module', 'write_impl', 'write_walker', …, 'migrate_python']
 */
export const PROMPTS: readonly Prompt[] = [
  {
    name: 'write_module',
    title: 'Write an svc module',
    description: 'Write a complete svc app module (nodes, edges, walkers, functions) for a purpose.',
    arguments: [arg('name', 'The module\'s name (its file is <name>.ts)'), arg('purpose', 'What the module should do'), arg('has_impl', 'Write the implementations too ("true", default) or only the declarations ("false")', false)],
    render(args) {
      const withImpl = given(args, 'has_impl', 'true').toLowerCase() !== 'false';
      return compose(
        `Write the svc module \`${given(args, 'name')}.ts\`. Purpose: ${given(args, 'purpose')}`,
        SHAPE,
        READ('svc://grammar/spec', 'svc://docs/cheatsheet', 'svc://guide/pitfalls', 'svc://guide/patterns'),
        withImpl
          ? 'Write the whole module: node and edge classes with their schemas, the walkers and functions with complete abilities and handlers. Choose public or private access for each endpoint on purpose, validate inputs in the schemas (limits, defaults), and answer errors with SvcError and a fitting status. Add a short TSDoc comment per export naming its route.'
          : 'Write the declarations only: node and edge classes with their schemas, walker classes with their `has` fields, access and restspec, and each ability as a decorated method whose body is `// TODO: <what it does>` (functions: `fn(options, () => { throw new Error(\'TODO\'); })`). The implementations come later (prompt write_impl).',
      );
    },
  },
  {
    name: 'write_impl',
    title: 'Implement svc declarations',
    description: 'Fill in the bodies of declared svc nodes, walkers, abilities and functions.',
    arguments: [arg('declarations', 'The module with declarations whose bodies are TODO')],
    render(args) {
      return compose(
        'Implement every TODO of these svc declarations. Keep the declarations as they are (class names, `has` schemas, access, restspec, ability signatures); write the bodies.',
        block(given(args, 'declarations'), 'ts'),
        SHAPE,
        READ('svc://docs/osp', 'svc://guide/patterns', 'svc://guide/pitfalls'),
        'Await every graph operation, check lookups that may find nothing, keep writes within the schemas, and throw SvcError for conditions the client should see.',
      );
    },
  },
  {
    name: 'write_walker',
    title: 'Write an svc walker',
    description: 'Write a walker that traverses the given node types for a purpose.',
    arguments: [arg('name', 'The walker\'s class name (its route is /walker/<name>)'), arg('purpose', 'What the walker should do'), arg('node_types', 'The node types it visits, comma-separated (with their fields if they do not exist yet)')],
    render(args) {
      return compose(
        `Write the svc walker \`${given(args, 'name')}\`. Purpose: ${given(args, 'purpose')}. Node types it works with: ${given(args, 'node_types')}.`,
        SHAPE,
        READ('svc://docs/osp', 'svc://docs/walker-responses', 'svc://guide/pitfalls'),
        'Give the walker `static has` fields for its inputs, an `@entry(Root)` ability that starts the traversal (or the `@entry(NodeType)` it needs when it is meant to be spawned at a node id), `@entry(NodeType)` abilities for each node type it visits, and `report` what the client needs. The walk is breadth first: `@exit(Root)` runs before the visited nodes, and a cyclic graph needs a set of visited ids. Include any node class that does not exist yet, and export everything.',
      );
    },
  },
  {
    name: 'write_node',
    title: 'Write an svc node type',
    description: 'Write a node class with the given fields.',
    arguments: [arg('name', 'The node\'s class name'), arg('fields', 'Its fields, e.g. "title: string (1-200 chars), done: boolean = false, tags: string[]"')],
    render(args) {
      return compose(
        `Write the svc node class \`${given(args, 'name')}\` with these fields: ${given(args, 'fields')}.`,
        SHAPE,
        READ('svc://docs/primitives', 'svc://docs/functions-objects', 'svc://guide/pitfalls'),
        'Map each field to a TypeBox schema in `static has` (T.String with limits, T.Integer or T.Number, T.Boolean, T.Array, T.Optional, T.Union of T.Literal for enumerations; defaults with `{ default: … }`) and `declare` each field with the matching TypeScript type (optional fields as `field?: Type`). No initializers, no field named `id` or starting with `_`; dates as ISO strings. Export the class; add getters or methods only for derived values.',
      );
    },
  },
  {
    name: 'write_test',
    title: 'Write tests for an svc module',
    description: 'Write in-process tests (svc/testing) for the given walkers and functions.',
    arguments: [arg('module_name', 'The module under test (its file, e.g. app.ts)'), arg('functions_to_test', 'The walkers and functions to test, comma-separated')],
    render(args) {
      return compose(
        `Write tests for the svc module \`${given(args, 'module_name')}\`, covering: ${given(args, 'functions_to_test')}.`,
        "Use `testApp` from 'svc/testing' with `node:test` and `node:assert/strict`: `const app = await testApp({ entry: new URL('./app.ts', import.meta.url).pathname })`, then `await app.inject({ method: 'POST', url: '/walker/Name', headers, body })` → `{ status, json() }`; close with `await app.close()`. Get a token by POSTing `/user/register` ({identities: [{type: 'username', value}], credential: {type: 'password', password}}) and `/user/login` ({identity, credential}) → `data.token`; send `authorization: Bearer <token>`.",
        READ('svc://docs/testing', 'svc://docs/walker-responses', 'svc://docs/errors'),
        'Test the success path (the envelope `data.reports` / `data.result`), validation (400 VALIDATION_ERROR for wrong or missing fields), access (401 without a token on private endpoints; users do not see each other\'s data) and each SvcError the code throws. Match errors on `error.code`, not on message text. Run with `node --import tsx --test`.',
      );
    },
  },
  {
    name: 'write_ability',
    title: 'Write an svc ability',
    description: 'Write one ability (an @entry/@exit method) with the given signature and purpose.',
    arguments: [arg('name', 'The ability\'s method name'), arg('signature', 'Where it runs, e.g. "@entry(Todo) on walker Tidy" or "@entry(Visitor) on node Room"'), arg('purpose', 'What it should do')],
    render(args) {
      return compose(
        `Write the svc ability \`${given(args, 'name')}\` — ${given(args, 'signature')}. Purpose: ${given(args, 'purpose')}.`,
        SHAPE,
        READ('svc://docs/osp', 'svc://guide/pitfalls'),
        'On a walker, the ability receives the node (`@entry(Todo) async tidy(here: Todo)`; `this` is the walker). On a node class it reacts to a walker type and receives the walker (`@entry(() => Visitor) greet(visitor: Visitor)`; `this` is the node). Make it `async` when it awaits, await every graph operation, and use `this.skip()` / `this.disengage()` to stop early. Show the ability inside its class, with the imports.',
      );
    },
  },
  {
    name: 'debug_error',
    title: 'Debug an svc error',
    description: 'Find and fix the cause of an error in svc code.',
    arguments: [arg('error_output', 'The error as printed (an envelope, a log line, a stack trace)'), arg('code', 'The module that produced it')],
    render(args) {
      return compose(
        'Find the cause of this error in the svc module below and fix it.',
        `Error:\n${block(given(args, 'error_output'))}`,
        `Code:\n${block(given(args, 'code'), 'ts')}`,
        'First call the `explain_error` tool with the error text; read the `docs_uri` it names and svc://guide/pitfalls. Common causes: a missing `await` on a graph operation, a field not in `static has`, a class-field initializer instead of `declare`, a private endpoint called without a token, a string sent for a number (values are never coerced), a class not exported.',
        'Explain the cause in one or two sentences, then give the corrected module in full.',
      );
    },
  },
  {
    name: 'fix_type_error',
    title: 'Fix a TypeScript error in svc code',
    description: 'Fix a TypeScript diagnostic in an svc module.',
    arguments: [arg('error_output', 'The TypeScript diagnostics (tsc or validate_svc output)'), arg('code', 'The module')],
    render(args) {
      return compose(
        'Fix these TypeScript errors in the svc module below without changing what it does.',
        `Diagnostics:\n${block(given(args, 'error_output'))}`,
        `Code:\n${block(given(args, 'code'), 'ts')}`,
        READ('svc://grammar/spec', 'svc://docs/cheatsheet'),
        'Call `explain_error` for each TS code you do not recognise. Keep each `declare` in line with its `static has` schema, pass classes to queries (`here.out(Todo)` is `Todo[]`), type ability parameters, check possibly-undefined lookups, and never silence errors with `any` or `@ts-ignore`. Give the corrected module in full.',
      );
    },
  },
  {
    name: 'migrate_python',
    title: 'Migrate Python code to svc',
    description: 'Rewrite Python code (classes, functions, a Python walker-service module) as an idiomatic svc TypeScript module.',
    arguments: [arg('python_code', 'The Python code to migrate')],
    render(args) {
      return compose(
        'Rewrite this Python code as an idiomatic svc TypeScript module.',
        block(given(args, 'python_code'), 'python'),
        SHAPE,
        READ('svc://docs/python-integration', 'svc://docs/primitives', 'svc://guide/patterns'),
        'You may start from the `py_to_svc` tool\'s output, then make it idiomatic. Map data classes to Node (or Edge) classes with TypeBox schemas (int → T.Integer, float → T.Number, str → T.String, bool → T.Boolean, list[X] → T.Array, Optional[X] → T.Optional, datetime → ISO string), relationships to edges, request handlers to walkers or `fn(...)` functions, and Python exceptions meant for clients to SvcError with a status. Python libraries have no svc equivalent: use a Node package or call a Python service over HTTP, and say so in a comment.',
      );
    },
  },
];
