/**
 * `TrajectoryRecorder`: record what an agent does, cheaply, in the agent's own process.
 *
 *     const rec = new TrajectoryRecorder(client, { agent_id: "weather-bot", goal: question, advise: true });
 *     await rec.run(async () => {
 *       rec.userInput(question);
 *       const getWeather = rec.wrapTool("get_weather", fetchWeather);  // every call recorded (and advised)
 *       ...
 *     });
 *     // then: the rest is sent, and the trajectory finalized as success (failure if the function threw)
 *
 * Recording costs the agent a snapshot of the values and an append to a bounded buffer; the
 * network is the sender's business (`sender.ts`), and its errors never reach the agent.
 *
 * With `advise: true` each wrapped tool call first asks the service what past runs say about it
 * (`POST /v1/advise`, bounded by `adviseTimeoutMs`, no retry, fail-open): the answer goes to
 * `onAdvice` and `lastAdvice`, and its `recall_id` is recorded as a `recall` event when it served
 * a lesson, so the review credits it. `recall()` does the same for a recall before the task.
 */
import type { Hindsight } from "./client.js";
import { newId } from "./client.js";
import { HindsightError } from "./errors.js";
import { NO_RETRY } from "./retry.js";
import { BatchSender, type SenderStats } from "./sender.js";
import { snapshot } from "./snapshot.js";
import type {
  AdviseResult,
  EventType,
  JsonObject,
  Outcome,
  RecallQuery,
  RecallResult,
  StartTrajectory,
  TrajectoryEvent,
} from "./types.js";

const TEXT_LIMIT = 8000; // the service's limit on context fields
const RECENT = 20; // the tool calls sent with an advise: what the agent did just before
const MAX_ERRORS = 20;

export interface RecorderOptions extends StartTrajectory {
  /** Events held while the service is slow; beyond it events are dropped and counted (default 10,000). */
  maxBuffer?: number;
  /** How long an event may wait to be sent with others (default 250 ms). */
  flushIntervalMs?: number;
  /** How long `close` may take to send what is left and finalize (default 10 s). */
  closeTimeoutMs?: number;
  /** Ask the service before each wrapped tool call (POST /v1/advise). */
  advise?: boolean;
  /** How long an advise may hold a tool call up (default 1 s). */
  adviseTimeoutMs?: number;
  onAdvice?: (tool: string, result: AdviseResult) => void;
  /** Called with each error met in the background (the recorder never throws them into the agent). */
  onError?: (error: unknown, what: string) => void;
}

export interface RecordOptions {
  node_id?: string;
  parent_id?: string;
  subtask?: string;
}

export interface ToolCallRecord extends RecordOptions {
  result?: unknown;
  /** An Error or text: the call failed. */
  error?: unknown;
  status?: "ok" | "error";
  durationMs?: number;
}

export interface WrapOptions<A extends unknown[], R> {
  /** Names for positional arguments: `fn(date, city)` recorded as `{date, city}`. Without them a
   * single object argument is the params, and other arguments are recorded as `{args: [...]}`. */
  paramNames?: string[];
  /** Flags tools that report failure in their return value instead of throwing: a truthy answer
   * is recorded as the error (a string answer is the error text). */
  isError?: (result: Awaited<R>, args: A) => unknown;
}

export class TrajectoryRecorder {
  readonly client: Hindsight;
  readonly trajectoryId: string;
  readonly agentId: string;
  readonly goal: string;
  readonly tools: string[];
  /** Set it to override the outcome chosen by `close()`/`run()`. */
  outcome: Outcome | null = null;
  outcomeFeedback: string | null = null;
  advise: boolean;
  lastAdvice: AdviseResult | null = null;
  readonly adviseErrors: unknown[] = [];
  private readonly options: RecorderOptions;
  private readonly sender: BatchSender;
  private readonly advisor: Hindsight;
  private readonly idPrefix = `e${globalThis.crypto.randomUUID().replaceAll("-", "").slice(0, 10)}-`;
  private nextId = 1;
  private lastUserInput: string | null = null;
  private readonly recent: TrajectoryEvent[] = [];
  private closed: Promise<boolean> | null = null;

  constructor(client: Hindsight, options: RecorderOptions) {
    this.client = client;
    this.options = options;
    this.trajectoryId = options.trajectory_id ?? newId("traj");
    this.agentId = options.agent_id;
    this.goal = options.goal;
    this.tools = [...(options.tools ?? [])];
    this.advise = options.advise ?? false;
    // advise must never hold the agent up: one attempt, a short timeout
    this.advisor = client.withRetry(NO_RETRY);
    const { maxBuffer, flushIntervalMs, closeTimeoutMs, advise, adviseTimeoutMs, onAdvice, onError, ...trajectory } = options;
    this.sender = new BatchSender({
      // Built when the first batch goes out, so that tools added by wrapTool() are part of the trajectory.
      start: () => client.startTrajectory({ ...trajectory, trajectory_id: this.trajectoryId, tools: this.tools }),
      send: (batch) => client.appendEvents(this.trajectoryId, batch),
      finalize: (outcome, feedback) => client.finalize(this.trajectoryId, outcome, feedback),
    }, {
      ...(maxBuffer !== undefined ? { maxBuffer } : {}),
      ...(flushIntervalMs !== undefined ? { flushIntervalMs } : {}),
      ...(onError !== undefined ? { onError } : {}),
    });
  }

  // --- lifecycle --------------------------------------------------------------------------------

  /**
   * Run `fn`, then close: success when it returns, failure (with the error as feedback) when it
   * throws; the error is thrown on unchanged. Returns what `fn` returned.
   */
  async run<T>(fn: (recorder: this) => Promise<T> | T): Promise<T> {
    let result: T;
    try {
      result = await fn(this);
    } catch (exc) {
      if (this.outcome === null) await this.close("failure", describeError(exc).slice(0, 4000));
      else await this.close();
      throw exc;
    }
    await this.close();
    return result;
  }

  /**
   * Send everything, finalize (success unless told otherwise), stop. Waits at most
   * `closeTimeoutMs`. True if every event was sent and the trajectory finalized; the agent goes on
   * either way (see `stats` and `errors`). A second call returns the first one's answer.
   */
  close(outcome?: Outcome | null, feedback?: string | null, options: { finalize?: boolean } = {}): Promise<boolean> {
    if (this.closed === null) {
      const final: [Outcome, string | null] | null = options.finalize === false
        ? null
        : [outcome ?? this.outcome ?? "success", feedback ?? this.outcomeFeedback];
      this.closed = this.sender.close(final, this.options.closeTimeoutMs ?? 10_000);
    }
    return this.closed;
  }

  /** Wait until what was recorded so far is sent; false on timeout. */
  flush(timeoutMs = 10_000): Promise<boolean> {
    return this.sender.flush(timeoutMs);
  }

  get stats(): SenderStats {
    return this.sender.stats();
  }

  /** The last errors met in the background (it never throws into the agent). */
  get errors(): unknown[] {
    return [...this.sender.errors];
  }

  get finalized(): boolean {
    return this.sender.finalized;
  }

  // --- recording --------------------------------------------------------------------------------

  /** Record one event of the contract; returns its event_id (use it as another's parent_id). */
  record(type: EventType, content: JsonObject, options: RecordOptions = {}): string {
    const eventId = this.idPrefix + String(this.nextId++);
    const event: TrajectoryEvent = { event_id: eventId, type, timestamp: Date.now(), content };
    if (options.node_id) event.node_id = options.node_id;
    if (options.parent_id) event.parent_id = options.parent_id;
    const context: NonNullable<TrajectoryEvent["context"]> = {};
    if (this.lastUserInput) context.last_user_input = this.lastUserInput;
    if (options.subtask) context.subtask = options.subtask.slice(0, TEXT_LIMIT);
    if (Object.keys(context).length > 0) event.context = context;
    if (type === "tool_call") {
      const recent: JsonObject = {};
      for (const key of ["tool", "params", "status", "error"]) if (key in content) recent[key] = content[key];
      this.recent.push({ type: "tool_call", content: recent });
      if (this.recent.length > RECENT) this.recent.shift();
    }
    this.sender.submit(event);
    return eventId;
  }

  userInput(text: string, options?: RecordOptions): string {
    this.lastUserInput = String(text).slice(0, TEXT_LIMIT);
    return this.record("user_input", { text: snapshot(text) }, options);
  }

  reasoning(text: string, options?: RecordOptions): string {
    return this.record("llm_reasoning", { text: snapshot(text) }, options);
  }

  /** A call and its outcome. `error` (an Error or text) makes it a failed call. */
  toolCall(tool: string, params: JsonObject = {}, call: ToolCallRecord = {}): string {
    const { result, durationMs, node_id, parent_id, subtask } = call;
    const error = call.error instanceof Error ? describeError(call.error) : call.error;
    const status = call.status ?? (error !== undefined && error !== null ? "error" : "ok");
    const content: JsonObject = { tool, params: snapshot(params), status };
    if (status === "error") content["error"] = snapshot(error ?? result);
    else content["result"] = snapshot(result);
    if (this.tools.length > 0) content["available_tools"] = [...this.tools];
    if (durationMs !== undefined) content["duration_ms"] = Math.round(durationMs * 1000) / 1000;
    return this.record("tool_call", content, compactOptions({ node_id, parent_id, subtask }));
  }

  feedback(text: string, sentiment?: "positive" | "negative", options?: RecordOptions): string {
    const content: JsonObject = { text: snapshot(text) };
    if (sentiment) content["sentiment"] = sentiment;
    return this.record("feedback", content, options);
  }

  stateChange(key: string, value: unknown, options?: RecordOptions): string {
    return this.record("state_change", { key, value: snapshot(value) }, options);
  }

  // --- recall ids and advice --------------------------------------------------------------------

  /** Record that the agent was shown a recall or advise answer here: the review then credits the
   * lessons it served (adopted or ignored, and the outcome). */
  attachRecall(recallId: string): string | null {
    return recallId ? this.record("recall", { recall_id: recallId }) : null;
  }

  /** `Hindsight.recall` in this trajectory's scope, its recall id attached when it served a lesson. */
  async recall(query: string, options: RecallQuery = {}): Promise<RecallResult> {
    const result = await this.client.recall(query, { agent_id: this.agentId, user_id: this.options.user_id, ...options });
    if (result.hits.length > 0) this.attachRecall(result.recall_id);
    return result;
  }

  /**
   * What past runs say about calling `tool` with `params` now; its recall id is attached when it
   * served a lesson. Null when the service did not answer within `adviseTimeoutMs` or failed (the
   * error is in `adviseErrors`): advice is an aid, never a blocker.
   */
  async consult(tool: string, params: JsonObject = {}): Promise<AdviseResult | null> {
    let result: AdviseResult;
    try {
      result = await this.advisor.advise(tool, snapshot(params) as JsonObject, {
        goal: this.goal, agent_id: this.agentId, user_id: this.options.user_id ?? null, trajectory_id: this.trajectoryId,
        recent_events: [...this.recent], timeoutMs: this.options.adviseTimeoutMs ?? 1000,
      });
    } catch (exc) {
      if (!(exc instanceof HindsightError)) throw exc;
      this.adviseErrors.push(exc);
      if (this.adviseErrors.length > MAX_ERRORS) this.adviseErrors.shift();
      return null;
    }
    this.lastAdvice = result;
    if (result.hits.length > 0) this.attachRecall(result.recall_id);
    this.options.onAdvice?.(tool, result);
    return result;
  }

  // --- drop-in capture --------------------------------------------------------------------------

  /**
   * `fn` recording each call: params, result or error (thrown on unchanged), status and latency.
   * With `advise`, each call is preceded by `consult`. The wrapper is async whatever `fn` is.
   */
  wrapTool<A extends unknown[], R>(
    name: string, fn: (...args: A) => R, options: WrapOptions<A, R> = {},
  ): (...args: A) => Promise<Awaited<R>> {
    if (!this.tools.includes(name)) this.tools.push(name);
    const paramsOf = (args: A): JsonObject => toolParams(args, options.paramNames);
    return async (...args: A): Promise<Awaited<R>> => {
      if (this.advise) await this.consult(name, paramsOf(args));
      const started = performance.now();
      let result: Awaited<R>;
      try {
        result = await fn(...args);
      } catch (exc) {
        this.toolCall(name, paramsOf(args), { error: describeError(exc), durationMs: performance.now() - started });
        throw exc;
      }
      const durationMs = performance.now() - started;
      const flagged = options.isError ? options.isError(result, args) : undefined;
      if (flagged) this.toolCall(name, paramsOf(args), { error: typeof flagged === "string" ? flagged : result, durationMs });
      else this.toolCall(name, paramsOf(args), { result, durationMs });
      return result;
    };
  }

  /** The same name -> function object, each function recording its calls. */
  wrapTools<T extends Record<string, (...args: never[]) => unknown>>(
    tools: T, options: { isError?: (result: unknown) => unknown } = {},
  ): { [K in keyof T]: (...args: Parameters<T[K]>) => Promise<Awaited<ReturnType<T[K]>>> } {
    const out: Record<string, unknown> = {};
    for (const [name, fn] of Object.entries(tools)) {
      out[name] = this.wrapTool(name, fn as (...args: unknown[]) => unknown, options.isError ? { isError: options.isError } : {});
    }
    return out as { [K in keyof T]: (...args: Parameters<T[K]>) => Promise<Awaited<ReturnType<T[K]>>> };
  }
}

function describeError(exc: unknown): string {
  return exc instanceof Error ? `${exc.name}: ${exc.message}` : String(exc);
}

function isPlainObject(value: unknown): value is JsonObject {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function toolParams(args: readonly unknown[], names?: string[]): JsonObject {
  if (names && names.length > 0) {
    const out: JsonObject = {};
    args.forEach((value, i) => {
      if (i < names.length) {
        if (value !== undefined) out[names[i] as string] = value;
      } else {
        ((out["args"] ??= []) as unknown[]).push(value);
      }
    });
    return out;
  }
  if (args.length === 0) return {};
  if (args.length === 1 && isPlainObject(args[0])) return args[0]; // the tool-calling loop's case: fn(JSON.parse(arguments))
  return { args: [...args] };
}

function compactOptions(options: RecordOptions): RecordOptions {
  const out: RecordOptions = {};
  if (options.node_id) out.node_id = options.node_id;
  if (options.parent_id) out.parent_id = options.parent_id;
  if (options.subtask) out.subtask = options.subtask;
  return out;
}
