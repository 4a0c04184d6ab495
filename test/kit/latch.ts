/** Wait for a condition without sleeping: resolve after `count` calls to `hit()`. */
export class Latch {
  private n = 0;
  private waiters: { at: number; resolve: () => void }[] = [];

  hit(): void {
    this.n++;
    this.waiters = this.waiters.filter((w) => {
      if (this.n < w.at) return true;
      w.resolve();
      return false;
    });
  }

  get count(): number {
    return this.n;
  }

  /** Resolves once `hit()` has been called `count` times in all. */
  wait(count: number): Promise<void> {
    if (this.n >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ at: count, resolve }));
  }
}

/** A promise with its resolve/reject exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
