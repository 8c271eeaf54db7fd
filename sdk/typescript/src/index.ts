/**
 * hindsight-xp: record agent runs, recall the lessons hindsight learned from them, and ask before
 * a tool call. The public surface is what this module exports.
 */
export { Hindsight, MAX_EVENTS_PER_CALL, MAX_RECENT_EVENTS, VERSION, newId, wireEvents } from "./client.js";
export type { HindsightOptions } from "./client.js";
export { TrajectoryRecorder } from "./recorder.js";
export type { RecorderOptions, RecordOptions, ToolCallRecord, WrapOptions } from "./recorder.js";
export type { SenderStats } from "./sender.js";
export { adviceFor, withAdvice } from "./advice.js";
export type { AdviceOptions } from "./advice.js";
export { NO_RETRY, RetryPolicy } from "./retry.js";
export type { AttemptOutcome, RetryOptions } from "./retry.js";
export { DEFAULT_URL, configFromEnv } from "./config.js";
export type { Config } from "./config.js";
export type { Auth, Call, FetchLike, RawBody } from "./transport.js";
export { snapshot } from "./snapshot.js";
export {
  APIError,
  ConfigurationError,
  Conflict,
  HindsightError,
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServerError,
  TransportError,
  Unauthorized,
} from "./errors.js";
export type * from "./types.js";
