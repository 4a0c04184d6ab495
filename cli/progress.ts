/**
 * A progress line for long CLI runs (`svc db copy`, `recover-all`, `inspect`
 * over many documents), on stderr so that stdout stays the command's answer.
 * On a terminal it is one line rewritten in place with `\r`; otherwise (a log,
 * a pipe, CI) a plain line now and then, and nothing at all for a run shorter
 * than that interval.
 */

/** Where progress goes: a stream, a terminal when `isTTY`. */
export interface ProgressStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  /** Default `process.stderr`. */
  stream?: ProgressStream;
  /** Milliseconds now (tests give a fake clock). */
  now?: () => number;
  /** Not a terminal: a plain line at most this often (default 5 s). */
  plainEveryMs?: number;
  /** A terminal: redraw at most this often (default 100 ms). */
  redrawEveryMs?: number;
}

const BAR = 24;

function figure(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/**
 * @example
 * const progress = new Progress('copy documents', await store.count());
 * for (…) progress.add(batch.length);
 * progress.done();
 */
export class Progress {
  private readonly stream: ProgressStream;
  private readonly now: () => number;
  private readonly tty: boolean;
  private readonly every: number;
  private readonly started: number;
  private last: number;
  private count = 0;
  /** Whether anything was written (a plain run says when it ends only if it said something before). */
  private shown = false;
  private finished = false;

  constructor(
    private readonly label: string,
    private readonly total: number | undefined,
    options: ProgressOptions = {},
  ) {
    this.stream = options.stream ?? process.stderr;
    this.now = options.now ?? Date.now;
    this.tty = this.stream.isTTY === true;
    this.every = this.tty ? (options.redrawEveryMs ?? 100) : (options.plainEveryMs ?? 5000);
    this.started = this.now();
    this.last = this.started;
  }

  /** How many are done so far. */
  get current(): number {
    return this.count;
  }

  /** `n` more are done. */
  add(n = 1): void {
    if (this.finished) return;
    this.count += n;
    const now = this.now();
    if (now - this.last < this.every) return;
    this.last = now;
    this.draw(now);
  }

  /** The run ended: a terminal keeps its final line; a plain log gets one if it had any. */
  done(): void {
    if (this.finished) return;
    this.finished = true;
    const now = this.now();
    if (this.tty) {
      this.draw(now);
      this.stream.write('\n');
    } else if (this.shown) {
      this.stream.write(`svc: ${this.label}: ${figure(this.count)} done in ${((now - this.started) / 1000).toFixed(1)} s\n`);
    }
  }

  private draw(now: number): void {
    this.shown = true;
    const seconds = (now - this.started) / 1000;
    const rate = seconds > 0 ? ` ${figure(this.count / seconds)}/s` : '';
    const total = this.total !== undefined && this.total > 0 ? this.total : undefined;
    const of = total !== undefined ? `${figure(this.count)}/${figure(total)}` : figure(this.count);
    if (!this.tty) {
      const pct = total !== undefined ? ` (${Math.min(100, Math.floor((this.count / total) * 100))}%)` : '';
      this.stream.write(`svc: ${this.label}: ${of}${pct}${rate}\n`);
      return;
    }
    let bar = '';
    if (total !== undefined) {
      const ratio = Math.min(1, this.count / total);
      const full = Math.round(ratio * BAR);
      bar = ` [${'#'.repeat(full)}${'-'.repeat(BAR - full)}] ${String(Math.floor(ratio * 100)).padStart(3)}%`;
    }
    let line = `${this.label}${bar} ${of}${rate}`;
    const width = this.stream.columns;
    if (width !== undefined && width > 10 && line.length > width - 1) line = line.slice(0, width - 1);
    // Clear to the end of the line: a shorter line would leave the tail of the longer one.
    this.stream.write(`\r${line}\u001b[K`);
  }
}
