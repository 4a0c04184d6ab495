/**
 * Events: CloudEvents 1.0 JSON on streams with consumer groups, the broker
 * that publishes, pulls and runs subscriptions over them, and the consumer
 * actors that run an app's subscriptions under a supervisor — with the event
 * calls of app code (`subscribe`, `publish`, `broker()`, `spawn`, `dedupe`).
 * The stream store is a seam (`StreamBackend`): memory streams within one
 * process, Redis Streams across processes, each registering itself by URL
 * scheme (`stores/`).
 */
export { Event, encodeEvent, decodeEvent, stamp } from './event.ts';
export type { EventInit, CloudEventJson } from './event.ts';
export { registerStreams, openStreams } from './streams.ts';
export type { AddManyResult, StreamBackend, StreamEntry, StreamInfo, GroupInfo, StartFrom, StreamsOptions, StreamsFactory } from './streams.ts';
export { Broker, DEFAULT_RETRY, DEFAULT_BUFFER_BYTES, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_STREAM_BYTES, checkTopic, checkRetry, checkData, sharedBudgetMemory, sharedByteBudget } from './broker.ts';
export type { BrokerOptions, BrokerCounters, BrokerKind, BrokerLog, ByteBudget, RetrySettings } from './broker.ts';
export { SubscriptionRunner } from './subscription-runner.ts';
export type { RunnerSpec } from './subscription-runner.ts';
export { subscribe, isSubscription, subscriptionsOf } from './subscription.ts';
export type { Subscription, SubscribeOptions, EventHandler, HandlerContext, SpawnAsOptions } from './subscription.ts';
export { publish, broker, spawn, broadcast, dedupe, bindEvents, handling, EVENT_OUTBOX_KIND } from './api.ts';
export type { EventsBinding, OutboxEvent } from './api.ts';
export { startConsumers, CONSUMERS_ACTOR } from './consumer.ts';
export type { Consumers, ConsumerStatus } from './consumer.ts';
