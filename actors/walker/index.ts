/**
 * The programming model: nodes, edges, walkers, functions, abilities, access
 * levels, and the walker run that executes them inside a partition.
 */
export { Node, Edge, GenericEdge, Root, Archetype, ANCHOR, prepare, viewOf, knownClasses } from './archetype.ts';
export type { ArchetypeClass, NodeFilter, GraphRun } from './archetype.ts';
export { validateFields } from './class-info.ts';
export type { ClassInfo } from './class-info.ts';
export { fieldProblems, invalidFields, MISSING_FIELD, UNKNOWN_FIELD } from './field-errors.ts';
export type { FieldProblem } from './field-errors.ts';
export { takesAnyFields, UnknownFields, unknownFieldsError } from './unknown-fields.ts';
export type { UnknownFieldsOptions } from './unknown-fields.ts';
export { permGrant, permRevoke, allowRoot, disallowRoot } from './permissions.ts';
export { Walker, isWalkerClass, walkerInfo } from './walker.ts';
export type { WalkerClass } from './walker.ts';
export { entry, exit, abilitiesOf } from './abilities.ts';
export { fn, restspec, isFunctionDef, HTTPMethod, APIProtocol } from './fn.ts';
export type { FunctionDef, FnContext, Caller, RestSpec, Access as EndpointAccess } from './fn.ts';
export { Registry, typeName } from './registry.ts';
export { TRAVERSE_WALKER, TRAVERSE_MAX_NODES, TraverseWalker } from './traverse.ts';
export type { Traversal, TraversedNode, TraversedEdge } from './traverse.ts';
export { HookDispatcher, HookRefusal, fillRequestFields, hookRefusal } from './hooks.ts';
export type { HookRequest, HookRun, HookSpawn } from './hooks.ts';
export { WalkerRun } from './run.ts';
export { afterCommit, inWalkerRun, wantRunTracking, runTrackingWanted, untrackedRun, callingRun } from './outbox.ts';
export type { OutboxEntry, OutboxConsumer } from './outbox.ts';
export { silentLogger } from './log.ts';
export type { WalkerLogger, WalkerLoggerFactory, LogMethod } from './log.ts';
export type { RunHost } from './run-loading.ts';
export type { RunChanges } from './transaction.ts';
export { Transaction } from './transaction.ts';
export { Anchor, newId, isAnchorId, FORMAT_VERSION } from './anchor.ts';
export type { AnchorDoc, AnchorKind, AnchorHome } from './anchor.ts';
export { AccessLevel, levelOf, privateAccess, isAccessLevel } from './access.ts';
export type { Access } from './access.ts';
export { GRAPH_ERRORS, graphError } from './errors.ts';
export { rooms, sendTo, presence, bindRooms, RoomSpec, isRoomSpec, roomSpecOf, roomError, toTarget, messageJson, ROOM_ERRORS, MAX_META_BYTES, MAX_MESSAGE_BYTES, MAX_TARGET_LENGTH } from './rooms.ts';
export type { RoomsOptions, RoomHistory, RoomPresence, RoomsBinding, SendTarget, Target, ConnectionInfo, SocketEffects, RoomErrorCode } from './rooms.ts';
export type { GraphErrorCode } from './errors.ts';
