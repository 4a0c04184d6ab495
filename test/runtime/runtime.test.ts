import t from 'tap';
import { composeRuntime, type RuntimeModule } from '../../runtime/index.ts';

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
  const rt = composeRuntime([
    { name: 'store', start: (rt) => void rt.provide('store', { kind: 'memory' }) },
    { name: 'graph', start: (rt) => void rt.provide('graph', { over: rt.need<{ kind: string }>('store').kind }) },
  ]);
  await rt.start();
  t.same(rt.need('graph'), { over: 'memory' });
  t.equal(rt.find('nothing'), undefined);

  const early = composeRuntime([{ name: 'graph', start: (rt) => void rt.need('store') }]);
  await t.rejects(early.start(), { code: 'SVC_ERR_RUNTIME', message: /graph needs store, which no module before it provides/ });
  const twice = composeRuntime([
    { name: 'a', start: (rt) => void rt.provide('x', 1) },
    { name: 'b', start: (rt) => void rt.provide('x', 2) },
  ]);
  await t.rejects(twice.start(), { code: 'SVC_ERR_RUNTIME', message: /b provides x, already provided by a/ });
  t.throws(() => composeRuntime([recorder([], 'a'), recorder([], 'a')]), { code: 'SVC_ERR_RUNTIME' });
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
