/**
 * Metrics: per-thread recorders and observers ({@link ThreadMetrics}), merged
 * across threads at each scrape ({@link renderMetrics}, {@link adminMetrics}).
 */
export { ThreadMetrics } from './thread-metrics.ts';
export type { MetricsSettings, ThreadSources } from './thread-metrics.ts';
export { HttpRecorder, RunRecorder, Histogram } from './recorder.ts';
export type { MetricJson, MetricSample } from './recorder.ts';
export { renderMetrics, adminMetrics, merge } from './render.ts';
export type { AdminMetric, MetricsSummary } from './render.ts';
export { MainMetrics, serveMainMetrics, THREAD_METRICS_ACTOR } from './main-metrics.ts';
export type { MainSources, ThreadSnapshot } from './main-metrics.ts';
