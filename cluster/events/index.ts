/**
 * Event streaming: events in CloudEvents 1.0 JSON on streams with consumer
 * groups — Redis Streams across processes, memory streams within one — and
 * the broker that publishes, pulls and runs subscriptions over them.
 */
export { Event, encodeEvent, decodeEvent, stamp } from './event.ts';
export type { EventInit, CloudEventJson } from './event.ts';
export type { StreamBackend, StreamEntry, StreamInfo, GroupInfo, StartFrom } from './streams.ts';
export { MemoryStreams, compareIds } from './memory-streams.ts';
export { RedisStreams } from './redis-streams.ts';
export { ActorStreams, serveMemoryStreams, servesMemoryStreams, EVENTS_MEMORY_ACTOR } from './actor-streams.ts';
export { Broker, SubscriptionRunner, DEFAULT_RETRY, DEFAULT_BUFFER_BYTES, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_STREAM_BYTES, checkTopic, checkRetry, checkData, sharedBudgetMemory, sharedByteBudget } from './broker.ts';
export type { BrokerOptions, BrokerCounters, BrokerKind, BrokerLog, ByteBudget, RetrySettings, RunnerSpec } from './broker.ts';
