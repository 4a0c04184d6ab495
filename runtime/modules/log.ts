/** The `log` module: the thread's pino log (stdout, or the destination given), and unhandled rejections written to it. */
import pino from 'pino';
import type { RuntimeModule } from '../runtime.ts';
import type { Log } from './shared.ts';
import { LOG } from '../keys.ts';

export function logModule(thread: string, destination?: pino.DestinationStream): RuntimeModule {
  let log: Log | undefined;
  const onRejection = (error: unknown) => log?.error({ err: error }, 'unhandled rejection (an operation that was not awaited?)');
  return {
    name: 'log',
    provides: [LOG],
    start(rt) {
      log = rt.provide(LOG, pino({ base: { worker: thread }, level: 'info' }, destination ?? pino.destination({ fd: 1, sync: false })));
      process.on('unhandledRejection', onRejection);
    },
    close() {
      process.off('unhandledRejection', onRejection);
      log?.flush();
    },
  };
}
