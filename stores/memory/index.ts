/**
 * Backends that keep everything in the thread or the process (`memory:`):
 * the graph store and the users repository (tests, `svc/testing`), and the
 * event streams of one process (`MemoryStreams`, served from the main thread
 * to its workers by `ActorStreams`). Importing this door registers the
 * `memory:` graph store and users repository.
 */
import { registerAnchorStore } from '../../actors/graph/index.ts';
import { registerUsersRepository } from '../../actors/identity/index.ts';
import { MemoryStore } from './graph-store.ts';
import { MemoryUsersRepository } from './users.ts';

export { MemoryStore } from './graph-store.ts';
export { MemoryUsersRepository } from './users.ts';
export { MemoryStreams, compareIds } from './streams.ts';
export { ActorStreams, serveMemoryStreams, servesMemoryStreams, EVENTS_MEMORY_ACTOR } from './actor-streams.ts';

registerAnchorStore('memory', () => new MemoryStore());
registerUsersRepository('memory', () => new MemoryUsersRepository());
