/**
 * The `signals` module of the main thread, last: SIGINT and SIGTERM drain and
 * close the runtime (every module, in reverse) and end the process — as does
 * the end of the process that started this one (a sibling of `sv` calls: its
 * parent; under npm: npm). Then it says the server is ready: signals are
 * handled and, with `--dev`, changes watched from the moment a user or a test
 * reads that line.
 */
import { Socket } from 'node:net';
import { PARENT_FD_VARIABLE } from '../../transports/sv/index.ts';
import { releaseYoungGeneration } from '../../transports/worker/index.ts';
import { ADDRESS, RUNTIME } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { type Lifecycle, say, type StartOptions } from './options.ts';

/**
 * `stopping(signal)`: the line said when it starts stopping. `failures`: what
 * modules failed to drain or close (the runtime's `onError`): the shutdown
 * then fails (exit 1) with the first.
 *
 * @example
 * signalsModule(options, life, (signal) => `${signal}: draining (up to 10000 ms)`, failures)
 */
export function signalsModule(options: StartOptions, life: Lifecycle, stopping: (signal: string) => string, failures: readonly unknown[]): RuntimeModule {
  let launcher: { stop(): void } | undefined;
  return {
    name: 'signals',
    needs: [RUNTIME, ADDRESS],
    start(rt) {
      const runtime = rt.need(RUNTIME);
      const { host, port } = rt.need(ADDRESS);
      const server = options.config['scale.server'];
      const shutdown = (signal: string): void => {
        if (life.stopping) return;
        life.stopping = true;
        say(`svc: ${stopping(signal)}`);
        exitAfter(
          runtime
            .drain(server.shutdown_timeout_ms)
            .then(() => runtime.close())
            .then(() => {
              if (failures.length > 0) throw failures[0];
            }),
        );
      };
      process.on('SIGINT', () => shutdown('SIGINT'));
      process.on('SIGTERM', () => shutdown('SIGTERM'));
      if (options.parentFd) watchParent(Number(options.parentFd), () => shutdown('the process that started this one is gone'));
      // Under npx / npm exec / npm start: drained when npm is gone (SIGKILL reaches no handler; cli/launcher.ts).
      else {
        const watch = options.watchLauncher?.((why) => shutdown(why), server.watch_launcher);
        if (watch) say(`svc: started by npm: drains when ${watch.watching} is gone (watch_launcher = false: never)`);
        launcher = watch;
      }
      // Last: signals are handled and, with --dev, changes watched from the moment a user or a test reads this line.
      // The young generation, held at its smallest while the server started (`svc start`), grows again as load asks.
      releaseYoungGeneration();
      say(`Server ready at http://${host}:${port}`);
    },
    close: () => launcher?.stop(),
  };
}

/** Exit once `stopping` settles: 0 and `svc: stopped`, or 1 with why the shutdown failed. */
function exitAfter(stopping: Promise<unknown>): void {
  void stopping.then(
    () => {
      say('svc: stopped');
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`svc: shutdown failed: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}

/**
 * A sibling's watch on its parent: the parent holds the other end of this
 * pipe and never writes; its end of file means the parent is gone (also when
 * it was killed with SIGKILL, which no handler sees).
 */
function watchParent(fd: number, gone: () => void): void {
  let pipe: Socket;
  try {
    pipe = new Socket({ fd, readable: true, writable: false });
  } catch (error) {
    process.stderr.write(`svc: ${PARENT_FD_VARIABLE}=${fd} is not a pipe (${(error as Error).message}); not watching the parent\n`);
    return;
  }
  let once = false;
  const end = (): void => {
    if (once) return;
    once = true;
    gone();
  };
  pipe.on('end', end).on('close', end).on('error', end);
  pipe.resume();
}
