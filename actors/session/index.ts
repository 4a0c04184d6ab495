/**
 * WebSocket sessions: one actor per connection, holding its caller, handling
 * its frames in order. Sockets are the transport's (`transports/ws`).
 */
export { CLOSE, Session, sessionProps, SESSION_MAILBOX } from './session.ts';
export type { SessionAuth, SessionCaller, SessionEnv, SessionMsg, SessionSink } from './session.ts';
