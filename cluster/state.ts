/**
 * What every thread of a member process must know of its membership, at the
 * cost of a memory read: until when its lease is surely held, and why it is
 * not ready. The main thread (which heartbeats) writes; worker threads read
 * the same SharedArrayBuffer, so a paused or cut-off process stops serving
 * graphs the moment its lease may have lapsed — before it even runs a timer.
 */
import { clusterError } from './errors.ts';

const VALID_UNTIL = 0;
const FLAGS = 1;
const JOINED = 1;
const REDIS_DOWN = 2;
const LEAVING = 4;

/**
 * @example
 * const state = new MemberState();                 // main thread; pass state.buffer to the workers
 * state.validUntil = membership.validUntil();
 * const seen = new MemberState(buffer);             // a worker thread
 * seen.guard();                                     // an SVC_ERR_NOT_MEMBER error once the lease may have lapsed
 */
export class MemberState {
  private readonly cells: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.cells = new BigInt64Array(buffer);
  }

  /** `Date.now()` instant until which this member's lease is surely held (0: not held). */
  get validUntil(): number {
    return Number(Atomics.load(this.cells, VALID_UNTIL));
  }
  set validUntil(ms: number) {
    Atomics.store(this.cells, VALID_UNTIL, BigInt(Math.floor(ms)));
  }

  private flag(bit: number, on: boolean): void {
    for (;;) {
      const old = Atomics.load(this.cells, FLAGS);
      const next = on ? old | BigInt(bit) : old & ~BigInt(bit);
      if (Atomics.compareExchange(this.cells, FLAGS, old, next) === old) return;
    }
  }
  private has(bit: number): boolean {
    return (Atomics.load(this.cells, FLAGS) & BigInt(bit)) !== 0n;
  }

  set joined(on: boolean) {
    this.flag(JOINED, on);
  }
  get joined(): boolean {
    return this.has(JOINED);
  }
  set redisDown(on: boolean) {
    this.flag(REDIS_DOWN, on);
  }
  get redisDown(): boolean {
    return this.has(REDIS_DOWN);
  }
  set leaving(on: boolean) {
    this.flag(LEAVING, on);
  }
  get leaving(): boolean {
    return this.has(LEAVING);
  }

  /** Why the member is not ready for traffic (`/ready` answers 503 with it), or undefined. */
  readiness(): string | undefined {
    if (this.leaving) return 'leaving';
    if (!this.joined) return 'joining';
    if (this.redisDown) return 'redis unreachable';
    if (Date.now() > this.validUntil) return 'lease lapsed';
    return undefined;
  }

  /** For a partition about to serve: an error once this member's lease may have lapsed. */
  guard(): Error | undefined {
    return Date.now() > this.validUntil ? clusterError('SVC_ERR_NOT_MEMBER') : undefined;
  }
}
