/**
 * The logger of walkers and functions (`this.log`, `ctx.log`): pino's call
 * shapes, `(msg)` and `(obj, msg)`. The graph is given a factory (the
 * runtime passes `(b) => pino.child(b)`); each walker gets a child bound to
 * its name, the run's trace id and root, made the first time it logs — a
 * run that never logs makes none.
 */

/** One level: `log.info('done')`, `log.info({ count }, 'done')`. */
export interface LogMethod {
  (msg: string): void;
  (obj: object, msg?: string): void;
}

/**
 * What `this.log` offers: a pino logger fits.
 *
 * @example
 * class Tidy extends Walker {
 *   @entry(Root) async go(here: Root) {
 *     const done = await here.out(Todo, { done: true });
 *     this.log.info({ count: done.length }, 'tidying');   // {"walker":"Tidy","trace_id":"…","root":"…","count":3,"msg":"tidying"}
 *   }
 * }
 */
export interface WalkerLogger {
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
  debug: LogMethod;
}

/**
 * Makes a walker's logger from its bindings: `walker` (or `function`),
 * `trace_id` (when the run has one) and `root`.
 *
 * @example
 * new Graph({ system, registry, store, logger: (bindings) => pinoLogger.child(bindings) });
 */
export type WalkerLoggerFactory = (bindings: Record<string, unknown>) => WalkerLogger;

const ignore: LogMethod = () => undefined;

/**
 * The logger of a graph given none: every line goes nowhere.
 *
 * @example
 * const log = graphOptions.logger?.({ walker: 'X' }) ?? silentLogger;
 */
export const silentLogger: WalkerLogger = Object.freeze({ info: ignore, warn: ignore, error: ignore, debug: ignore });
