import t from 'tap';
import { composeRuntime, key, RUNTIME, type RuntimeModule } from '../../runtime/index.ts';

function recorder(log: string[], name: string, extra: Partial<RuntimeModule> = {}): RuntimeModule {
  return {
    name,
    start: () => void log.push(`start ${name}`),
    drain: (ms) => void log.push(`drain ${name} ${ms > 0 ? 'in time' : 'late'}`),
    close: () => void log.push(`close ${name}`),
    ...extra,
  };
}

t.test('modules start in declared order, drain in order within one deadline, close in reverse', async (t) => {
  const log: string[] = [];
  const rt = composeRuntime([recorder(log, 'store'), recorder(log, 'graph'), recorder(log, 'http')]);
  await rt.start();
  t.same(rt.startedModules, ['store', 'graph', 'http']);
  await rt.drain(1000);
  await rt.close();
  await rt.close(); // once
  t.same(log, ['start store', 'start graph', 'start http', 'drain store in time', 'drain graph in time', 'drain http in time', 'close http', 'close graph', 'close store']);
});

t.test('services: provided by one module, needed by later ones; mistakes are named', async (t) => {
  const STORE = key<{ kind: string }>('store');
  const GRAPH = key<{ over: string }>('graph');
  const rt = composeRuntime([
    { name: 'store', provides: [STORE], start: (rt) => void rt.provide(STORE, { kind: 'memory' }) },
    { name: 'graph', needs: [STORE], provides: [GRAPH], start: (rt) => void rt.provide(GRAPH, { over: rt.need(STORE).kind }) },
  ]);
  await rt.start();
  t.same(rt.need(GRAPH), { over: 'memory' });
  t.equal(rt.find(key('nothing')), undefined);
  t.equal(rt.need(RUNTIME), rt, 'the runtime provides itself');

  // A provider that declared a key but did not provide it (a module that is off): its user is refused at start, named.
  const off = composeRuntime([
    { name: 'store', provides: [STORE], start: () => undefined },
    { name: 'graph', needs: [STORE], start: (rt) => void rt.need(STORE) },
  ]);
  await t.rejects(off.start(), { code: 'SVC_ERR_RUNTIME', message: /graph needs store, which no module before it provided/ });
  t.throws(() => composeRuntime([recorder([], 'a'), recorder([], 'a')]), { code: 'SVC_ERR_RUNTIME' });
});

t.test('composition: the list is checked before anything starts, each mistake named with the module and the key', async (t) => {
  const STORE = key<{ kind: string }>('store');
  const X = key<number>('x');
  const started: string[] = [];
  const store: RuntimeModule = { name: 'store', provides: [STORE], start: (rt) => void (started.push('store'), rt.provide(STORE, { kind: 'memory' })) };
  const graph: RuntimeModule = { name: 'graph', needs: [STORE], start: () => void started.push('graph') };

  t.throws(() => composeRuntime([recorder([], 'log'), graph]), { code: 'SVC_ERR_RUNTIME', message: 'runtime module graph needs store, which no module in the list provides' }, 'a missing provider');
  t.throws(
    () => composeRuntime([graph, store]),
    { code: 'SVC_ERR_RUNTIME', message: 'runtime module graph needs store, provided by store, which comes after it: list store before graph' },
    'a provider listed after its user',
  );
  t.throws(
    () =>
      composeRuntime([
        { name: 'a', provides: [X], start: (rt) => void rt.provide(X, 1) },
        { name: 'b', provides: [X], start: (rt) => void rt.provide(X, 2) },
      ]),
    { code: 'SVC_ERR_RUNTIME', message: 'runtime module b provides x, already provided by a' },
    'a key provided twice',
  );
  t.throws(() => composeRuntime([{ name: 'a', provides: [RUNTIME], start: () => undefined }]), { message: 'runtime module a provides runtime, already provided by the runtime' });
  t.same(started, [], 'nothing started');
  t.same(composeRuntime([store, graph]).modules.map((m) => m.name), ['store', 'graph'], 'in order: composed');

  // Optional and later services are `uses`: no order, read through find.
  const late = composeRuntime([
    { name: 'metrics', uses: [STORE], start: (rt) => void started.push(`metrics sees ${rt.find(STORE)?.kind ?? 'nothing yet'}`) },
    store,
  ]);
  await late.start();
  t.same(started, ['metrics sees nothing yet', 'store']);
});

t.test('a module uses only the keys it declared', async (t) => {
  const STORE = key<{ kind: string }>('store');
  const provider: RuntimeModule = { name: 'store', provides: [STORE], start: (rt) => void rt.provide(STORE, { kind: 'memory' }) };
  await t.rejects(composeRuntime([provider, { name: 'graph', start: (rt) => void rt.need(STORE) }]).start(), {
    code: 'SVC_ERR_RUNTIME',
    message: 'runtime module graph needs store without declaring it in needs',
  });
  await t.rejects(composeRuntime([provider, { name: 'graph', start: (rt) => void rt.find(STORE) }]).start(), { message: 'runtime module graph uses store without declaring it in needs or uses' });
  await t.rejects(composeRuntime([{ name: 'store', start: (rt) => void rt.provide(STORE, { kind: 'memory' }) }]).start(), { message: 'runtime module store provides store without declaring it in provides' });
});

t.test('a module that fails to start: those started are closed in reverse, the error is thrown', async (t) => {
  const log: string[] = [];
  const rt = composeRuntime([
    recorder(log, 'one'),
    recorder(log, 'two'),
    recorder(log, 'three', {
      start: () => {
        throw new Error('port taken');
      },
    }),
    recorder(log, 'four'),
  ]);
  await t.rejects(rt.start(), { message: 'port taken' });
  t.same(log, ['start one', 'start two', 'close two', 'close one']);
});

t.test('a module failing to drain or close does not stop the others', async (t) => {
  const log: string[] = [];
  const errors: string[] = [];
  const rt = composeRuntime(
    [
      recorder(log, 'a'),
      recorder(log, 'b', {
        drain: () => Promise.reject(new Error('stuck')),
        close: () => {
          throw new Error('busy');
        },
      }),
      recorder(log, 'c'),
    ],
    { onError: (e, m, phase) => errors.push(`${m} ${phase}: ${(e as Error).message}`) },
  );
  await rt.start();
  await rt.drain(100);
  await rt.close();
  t.same(log, ['start a', 'start b', 'start c', 'drain a in time', 'drain c in time', 'close c', 'close a']);
  t.same(errors, ['b drain: stuck', 'b close: busy']);
});
