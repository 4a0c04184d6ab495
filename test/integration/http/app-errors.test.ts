// Errors of app code as clients and operators see them: own codes kept, bad writes blamed on the app,
// every 500 logged with the app's source-mapped frames, and those frames in `--dev` answers.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { testApp } from 'svc/testing';

const entry = new URL('../../fixtures/errors-app/app.ts', import.meta.url).pathname;
const lineOf = (file: string, text: string): number => readFileSync(new URL(`../../fixtures/errors-app/${file}`, import.meta.url), 'utf8').split('\n').findIndex((l) => l.includes(text)) + 1;

t.test('an app error with its own code and status keeps them; other values are EXECUTION_ERROR 500', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  const teapot = await app.inject({ method: 'POST', url: '/walker/Teapot', body: {} });
  t.equal(teapot.status, 418, 'a plain Error with code and status');
  t.match(teapot.json(), { ok: false, data: null, error: { code: 'TEAPOT', message: 'I am a teapot' } });
  const missing = await app.inject({ method: 'POST', url: '/walker/Missing', body: { id: 'n1' } });
  t.equal(missing.status, 404, 'throw new SvcError(code, message, { status })');
  t.match(missing.json().error, { code: 'NOTE_NOT_FOUND', message: 'no note n1' });
  for (const [kind, message] of [['lower', 'lower-case code'], ['status', 'status out of range'], ['nostatus', 'no status'], ['svcerror', 'an SvcError with a bad code']] as const) {
    const res = await app.inject({ method: 'POST', url: '/walker/BadCode', body: { kind } });
    t.equal(res.status, 500, kind);
    t.match(res.json().error, { code: 'EXECUTION_ERROR', message }, kind);
  }
});

t.test('a walker writing a value its schema refuses is the app’s fault: 500 SVC_ERR_BAD_WRITE, nothing stored', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  await app.inject({ method: 'POST', url: '/walker/Teapot', body: {} }); // the guest graph's root exists from here on
  const before = await app.store.count();
  const pin = await app.inject({ method: 'POST', url: '/walker/Pin', body: {} });
  t.equal(pin.status, 500);
  t.match(pin.json().error, { code: 'SVC_ERR_BAD_WRITE', message: /Note\.pinned: "yes"/ });
  const make = await app.inject({ method: 'POST', url: '/walker/MakeBad', body: {} });
  t.equal(make.status, 500, 'new Note({...}) with a wrong field in app code');
  t.match(make.json().error, { code: 'SVC_ERR_BAD_WRITE', message: /Note/ });
  t.equal(await app.store.count(), before, 'nothing of either run was stored');
  t.match(app.output(), /"code":"SVC_ERR_BAD_WRITE"/, 'logged as a failure of the app');
});

t.test('every 500 is logged with its message, the route and the app’s source-mapped frames; the answer has no stack outside --dev', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/walker/Crash', body: {} });
  t.equal(res.status, 500);
  t.match(res.json().error, { code: 'EXECUTION_ERROR', message: 'the helper failed' });
  t.notMatch(res.body, /at .*\.ts:\d+/, 'no stack in the answer');
  const line = JSON.parse(await app.waitFor(/the helper failed/));
  t.match(line, { level: 50, msg: 'request failed', route: /Crash/, walker: 'Crash', trace_id: /^[0-9a-f]{32}$/, code: 'SVC_ERR_WALKER_FAILED', err: { message: 'the helper failed' } });
  t.equal(line.err.type, 'Error', 'the type the app threw, not the runtime’s wrapper');
  t.match(line.err.stack, new RegExp(`helper\\.ts:${lineOf('helper.ts', 'throw new Error')}:\\d+`), 'the throwing line of the app’s module, in TypeScript lines');
  t.match(line.err.stack, new RegExp(`app\\.ts:${lineOf('app.ts', "explode('the helper failed')")}:\\d+`), 'and the walker’s line that called it');
  t.notMatch(line.err.stack, /actors[\\/]anchor|kernel[\\/]/, 'not the runtime’s frames');
  const fnRes = await app.inject({ method: 'POST', url: '/function/crashFn', body: {} });
  t.equal(fnRes.status, 500);
  const fnLine = JSON.parse(await app.waitFor(/the function failed/));
  t.match(fnLine.route, /crashFn/);
  t.equal(fnLine.function, 'crashFn', 'the function named');
  const oops = await app.inject({ method: 'POST', url: '/walker/Oops', body: {} });
  t.equal(oops.status, 500);
  const oopsLine = JSON.parse(await app.waitFor(/"walker":"Oops"/));
  t.equal(oopsLine.err.type, 'TypeError', 'a TypeError is logged as one');
  t.match(fnLine.err.stack, new RegExp(`app\\.ts:${lineOf('app.ts', "explode('the function failed')")}:\\d+`));
});

t.test('--dev: details.stack shows the app’s frames, not only the runtime’s', async (t) => {
  const app = await testApp({ entry, dev: true });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/walker/Crash', body: {} });
  t.equal(res.status, 500);
  const stack = res.json().error.details.stack as string;
  t.match(stack, /^Error: the helper failed/);
  t.match(stack, new RegExp(`helper\\.ts:${lineOf('helper.ts', 'throw new Error')}:\\d+`));
  t.match(stack, new RegExp(`app\\.ts:${lineOf('app.ts', "explode('the helper failed')")}:\\d+`));
  t.notMatch(stack, /actors[\\/]anchor|kernel[\\/]/);
  const pin = await app.inject({ method: 'POST', url: '/walker/Pin', body: {} });
  t.match(pin.json().error.details, [{ field: 'pinned' }], 'a bad write keeps its details');
});
