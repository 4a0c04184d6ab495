// Preloaded (`--import`) into `svc start` by test/runtime/lazy-load.test.ts, and so into each of its threads:
// appends to the file SVC_TEST_LOADS, one line per module a thread loads — `<thread> <what>`, where what is the
// specifier of a `require` of a package (CommonJS) or the URL of an ES module (through a load hook).
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { isMainThread, threadId } from 'node:worker_threads';

const file = process.env.SVC_TEST_LOADS;
if (file) {
  const who = isMainThread ? 'main' : `thread-${threadId}`;
  const Module = createRequire(import.meta.url)('node:module');
  const load = Module._load;
  Module._load = function (request, ...rest) {
    if (!/^(\.|\/|node:)/.test(request)) appendFileSync(file, `${who} require ${request}\n`);
    return load.call(this, request, ...rest);
  };
  register(new URL('./record-loads-hooks.mjs', import.meta.url), { data: { file, who } });
}
