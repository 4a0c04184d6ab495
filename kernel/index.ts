/**
 * The actor kernel: supervised actors with bounded mailboxes, virtual actors,
 * timers, dead letters, and a transport seam for other threads and processes.
 * No I/O here: transports live in `transports/`.
 */
export { ActorSystem } from './system.ts';
export type { SystemOptions } from './system.ts';
export { KERNEL_CHANNELS } from './observer.ts';
export type { KernelObserver, ReceiveEvent, RestartEvent, MailboxFullEvent, ActivationEvent, SupervisorDecision, ActorLabel } from './observer.ts';
export { LocalRef } from './context.ts';
export type { CellStatus } from './cell.ts';
export { ActorRefBase, RemoteRef, VirtualRef, isActorRef } from './refs.ts';
export type { ActorRef, RefAddress } from './refs.ts';
export { Rejection, rejectWith, Later, replyLater, fromReceive } from './logic.ts';
export type { ActorLogic, ActorContext, Props } from './logic.ts';
export type { OverflowPolicy } from './mailbox.ts';
export { DEFAULT_SUPERVISION } from './supervision.ts';
export type { RestartType, SupervisionStrategy, SupervisorSpec, Backoff } from './supervision.ts';
export type { Timers } from './timers.ts';
export type { DeadLetter, DeadLetterReason } from './dead-letters.ts';
export type { KindSpec } from './virtual.ts';
export { realClock, ManualClock, flushMicrotasks } from './clock.ts';
export type { Clock, TimerHandle } from './clock.ts';
export { SvcError, KERNEL_ERRORS, kernelError, hasCode, encodeError, decodeError } from './errors.ts';
export type { KernelErrorCode } from './errors.ts';
export type { Transport, TransportHandler, Frame, FrameTarget, WireError } from './transport.ts';
export { RESERVED_KEY, mayHoldReservedKey, reservedKeyPath } from './reserved-key.ts';
export { CompositeTransport } from './composite-transport.ts';
export { RendezvousPlacement, FunctionPlacement, workerPlacement, threadOf, processOf, fnv1a, MAIN_THREAD, isWorkerNode } from './placement.ts';
export type { Placement, RendezvousOptions } from './placement.ts';
export { ActorBroadcast } from './broadcast.ts';
export { serveActivationLeases, remoteLeases, LEASES_ACTOR } from './leases.ts';
export type { ServeLeasesOptions } from './leases.ts';
export type { ActivationLease } from './leases.ts';
export type { Broadcast, ActorBroadcastOptions } from './broadcast.ts';
