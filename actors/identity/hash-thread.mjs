/**
 * A password-hashing thread of the piscina pool in `hasher.ts`: argon2id (and
 * bcrypt, for legacy hashes), synchronously. Plain JavaScript on purpose, so
 * that the thread needs neither tsx nor the bundle (the pool starts it with an
 * empty `execArgv`).
 *
 * The thread lowers its own priority first (`workerData.nice` added to its
 * niceness), and the libraries load once, both before piscina reports the
 * thread ready. A thread that cannot load them still starts, and answers every
 * job with `{ unavailable }`: the pool then knows hashing is impossible on this
 * machine instead of replacing threads that would fail the same way.
 */
import { createRequire } from 'node:module';
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, threadId, workerData } from 'node:worker_threads';

const require = createRequire(import.meta.url);

/** This thread's kernel id (Linux; 0 elsewhere, where priorities are per process). */
function ownTid() {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return 0;
  }
}

// Not piscina's `niceIncrement`: it lets a refused nice(2) (a seccomp profile, a sandbox) kill every thread at start, so
// hashing would be down; here a refusal only leaves the threads at the process's priority, and the pool says so (a
// warning of this thread would not get out: piscina's thread idles in Atomics.wait, its event loop never turns).
const tid = ownTid();
if (tid > 0 && workerData.nice > 0) {
  try {
    setPriority(tid, Math.min(19, getPriority(tid) + workerData.nice));
  } catch (error) {
    parentPort.postMessage({ niceRefused: error.message });
  }
}

let argon2;
let bcrypt;
let unavailable;
try {
  argon2 = require(workerData.argon2Module ?? '@node-rs/argon2');
  bcrypt = require('bcryptjs');
} catch (error) {
  unavailable = String((error && error.message) || error);
}

// Algorithm.Argon2id of @node-rs/argon2 (a const enum in its types).
const hashOptions = { algorithm: 2, ...workerData.options };

/**
 * One job, answered as data: `{ result }`, `{ error }` for a job that failed
 * (a malformed stored hash), or `{ unavailable }`. A rejection of the task
 * means the thread itself died.
 */
export default function run(job) {
  if (unavailable !== undefined) return { unavailable };
  try {
    if (job.op === 'hash') return { result: argon2.hashSync(job.password, hashOptions) };
    if (job.op === 'verify-argon2') return { result: argon2.verifySync(job.stored, job.password) };
    if (job.op === 'verify-bcrypt') return { result: bcrypt.compareSync(job.password, job.stored) };
    return { error: `unknown job ${job.op}` };
  } catch (error) {
    return { error: String((error && error.message) || error) };
  }
}

/** Test hook: which thread this is and its niceness (Linux: per thread). */
export function probe() {
  return { threadId, tid, nice: tid > 0 ? getPriority(tid) : getPriority() };
}

/** Test hook: the thread dies in the middle of a job, as a crash would end it. */
export function exit() {
  process.exit(1);
}
