/**
 * The load harness behind `svc bench`: run a scenario against an app, report
 * it, compare two runs. Other folders import only this file.
 *
 * @example
 * import { runBench, compareResults, formatComparison } from '../../bench/harness/index.ts';
 * const { result } = await runBench('http://127.0.0.1:8000', { duration: 10 });
 */
export { runBench, readResult, parseMetrics } from './run.ts';
export { runLoad } from './engine.ts';
export type { LoadOutcome, LoadOptions, LoadProgress } from './engine.ts';
export { createHistogram, decodeHistogram, summarize } from './histogram.ts';
export type { BenchOptions, BenchRun, Out } from './run.ts';
export { BenchError, loadScenario, validateScenario, defaultScenario, fetchApi, prepare, registerUsers, requestName } from './scenario.ts';
export type { LoadedScenario, PoolUser, Prepared, PrepareOptions, ApiIndex, ApiRoute } from './scenario.ts';
export { runWs } from './ws.ts';
export type { WsResult, WsRunOptions } from './ws.ts';
export { compareResults, formatComparison } from './compare.ts';
export type { Comparison, CompareOptions, MetricComparison } from './compare.ts';
export { renderReport } from './report.ts';
export type {
  BenchResult,
  BodyContext,
  EnginePlan,
  ErrorSummary,
  LatencySummary,
  PreparedRequest,
  Scenario,
  ScenarioRequest,
  TimelinePoint,
  WsScenario,
} from './types.ts';
