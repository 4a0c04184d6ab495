/**
 * Event consumers and the event calls of app code: `subscribe` (exported
 * subscriptions), `publish`, `broker()`, `spawn`, `dedupe`, and the consumer
 * actors that run subscriptions under a supervisor.
 */
export { subscribe, isSubscription, subscriptionsOf } from './subscription.ts';
export type { Subscription, SubscribeOptions, EventHandler, HandlerContext, SpawnAsOptions } from './subscription.ts';
export { publish, broker, spawn, broadcast, dedupe, bindEvents, handling, EVENT_OUTBOX_KIND } from './api.ts';
export type { EventsBinding, OutboxEvent } from './api.ts';
export { startConsumers, CONSUMERS_ACTOR } from './consumer.ts';
export type { Consumers, ConsumerStatus } from './consumer.ts';
