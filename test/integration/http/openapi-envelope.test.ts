// The envelope as /openapi.json documents it is the envelope on the wire: `error` is null on a
// success and `data` null on an error, so the samples ReDoc and Swagger UI make from the
// schemas show `null` as real answers do (not "string" or {}).
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type Server } from '../../kit/index.ts';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';

type Schema = Record<string, unknown>;
interface Spec {
  paths: Record<string, Record<string, { responses: Record<string, { description: string; content?: Record<string, { schema: Schema; example?: unknown }> }> }>>;
  components: { schemas: Record<string, Schema> };
}

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;
let server: Server;
let spec: Spec;
t.before(async () => {
  server = await startServer({ entry });
  spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as Spec;
});
t.teardown(() => server.stop());

/** The JSON Schema keywords the envelope schemas use ($ref, const, type, required, properties, items): where `value` breaks them. */
function violations(schema: Schema, value: unknown, at = '$'): string[] {
  const ref = schema.$ref as string | undefined;
  if (ref) return violations(spec.components.schemas[ref.replace('#/components/schemas/', '')] as Schema, value, at);
  const out: string[] = [];
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) out.push(`${at} is ${JSON.stringify(value)}, not ${JSON.stringify(schema.const)}`);
  if (schema.type !== undefined) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;
    const allowed = ([] as unknown[]).concat(schema.type);
    if (!allowed.includes(kind) && !(kind === 'integer' && allowed.includes('number'))) out.push(`${at} is ${kind}, not ${allowed.join(' or ')}`);
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const name of (schema.required as string[] | undefined) ?? []) if (!(name in object)) out.push(`${at}.${name} is missing`);
    for (const [name, sub] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {})) {
      if (name in object) out.push(...violations(sub, object[name], `${at}.${name}`));
    }
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => out.push(...violations(schema.items as Schema, item, `${at}[${i}]`)));
  return out;
}

t.test('/openapi.json: a success envelope has error null, an error envelope data null', async (t) => {
  const { Envelope, ErrorEnvelope, Error: ErrorBody } = spec.components.schemas;
  t.match(Envelope, { required: ['ok', 'type', 'data', 'error', 'meta'], properties: { ok: { const: true }, error: { type: 'null' } } });
  t.match(ErrorEnvelope, { required: ['ok', 'type', 'data', 'error', 'meta'], properties: { ok: { const: false }, data: { type: 'null' }, error: { $ref: '#/components/schemas/Error' } } });
  t.match(ErrorBody, { required: ['code', 'message'] });
  t.notOk(JSON.stringify(Envelope).includes('oneOf'), 'no oneOf for a sampler to pick a member of');
  let errors = 0;
  let successes = 0;
  const wrong: string[] = [];
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const json = response.content?.['application/json'];
        const ref = json?.schema.$ref;
        if (Number(status) >= 400) {
          errors++;
          if (ref !== '#/components/schemas/ErrorEnvelope') wrong.push(`${where}: ${ref}, not the error envelope`);
          // The example documentation shows for this status: the first code its description names, as on the wire.
          wrong.push(...violations({ $ref: '#/components/schemas/ErrorEnvelope' }, json?.example).map((v) => `${where} example: ${v}`));
          const code = (json?.example as { error?: { code?: string } } | undefined)?.error?.code;
          if (code !== response.description.split(' ')[0]) wrong.push(`${where} example: code ${code} for "${response.description}"`);
        } else if (ref !== undefined) {
          successes++;
          if (ref !== '#/components/schemas/Envelope') wrong.push(`${where}: ${ref}, not the success envelope`);
        }
      }
    }
  }
  t.same(wrong, [], 'every error answer documented as the error envelope (with its own example), every success as the envelope');
  t.ok(errors > 10 && successes > 10, `${errors} error and ${successes} success responses documented`);
});

t.test('real answers match the documented envelopes', async (t) => {
  const call = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, ...init });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const ok = await call('/walker/Echo', { body: JSON.stringify({ msg: 'hi' }) });
  t.equal(ok.status, 200);
  t.equal(ok.body.error, null, 'a success carries error: null');
  t.same(violations({ $ref: '#/components/schemas/Envelope' }, ok.body), [], 'a success matches Envelope');
  t.notSame(violations({ $ref: '#/components/schemas/ErrorEnvelope' }, ok.body), [], 'and not ErrorEnvelope');
  const failures = [
    await call('/walker/Echo', { body: JSON.stringify({ times: 'x' }) }),
    await call('/walker/Whoami'),
    await call('/walker/Nobody'),
    await call('/function/add', { body: '{' }),
  ];
  t.same(failures.map((f) => f.status), [400, 401, 404, 400]);
  for (const f of failures) {
    t.equal(f.body.data, null, `${f.status}: data is null`);
    t.same(violations({ $ref: '#/components/schemas/ErrorEnvelope' }, f.body), [], `${f.status} matches ErrorEnvelope`);
    t.notSame(violations({ $ref: '#/components/schemas/Envelope' }, f.body), [], 'and not Envelope');
  }
});

t.test('ReDoc’s samples show null where answers have it', { skip: chromiumAvailable() ? false : 'Debian chromium is not installed (.ci/run installs it)' }, async (t) => {
  const shots = join(t.testdirName, '..', 'screenshots');
  mkdirSync(shots, { recursive: true });
  const browser = await launch();
  t.teardown(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1400, height: 1600 } });
  await page.goto(`${server.url}/redoc#operation/walker_Echo`);
  const operation = page.locator('[id="operation/walker_Echo"]');
  await operation.waitFor({ timeout: 30_000 });
  // The response samples of POST /walker/Echo, in the right-hand panel: 200 first, then each error.
  const samples = operation.locator('[role=tabpanel]').filter({ hasText: '"ok"' });
  const success = ((await samples.first().textContent({ timeout: 30_000 })) ?? '').replace(/\s+/g, ' ');
  t.match(success, /"error": null/, `200 sample: ${success.slice(0, 200)}`);
  await operation.locator('[role=tab]', { hasText: /^400$/ }).first().click();
  const failed = ((await samples.first().textContent()) ?? '').replace(/\s+/g, ' ');
  t.match(failed, /"ok": false/, `400 sample: ${failed.slice(0, 200)}`);
  t.match(failed, /"data": null/);
  t.match(failed, /"code": "VALIDATION_ERROR"/, 'the error a 400 is');
  t.notMatch(failed, /"string"/, 'no "string" placeholders');
  await operation.screenshot({ path: join(shots, 'redoc-error-sample.png') });
});
