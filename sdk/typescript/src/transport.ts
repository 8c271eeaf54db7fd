/**
 * The one place that knows how a call is made: request, retries, answer parsing, error mapping.
 * Every endpoint of the client is a `Call` (data) handed to `Transport.run`.
 */
import { ConfigurationError, HindsightError, TransportError, errorFromResponse, retryAfterMs } from "./errors.js";
import type { AttemptOutcome, RetryPolicy } from "./retry.js";

export type Auth = "tenant" | "admin" | "none";
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** A body sent as it is (OTLP protobuf or JSON), not as JSON built from a value. */
export interface RawBody {
  bytes: Uint8Array | string;
  contentType: string;
  contentEncoding?: string;
}

/** One API call as data: what to send and how to read the answer. */
export interface Call {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | null | undefined>;
  json?: unknown;
  raw?: RawBody;
  auth?: Auth;
  /** True when sending it twice has the effect of sending it once (reads, writes with client ids). */
  idempotent?: boolean;
  /** Milliseconds for this call alone; default: the client's timeout. */
  timeoutMs?: number;
  /** Read the answer as bytes instead of JSON (a protobuf OTLP answer). */
  binary?: boolean;
}

export interface TransportOptions {
  url: string;
  apiKey: string | null;
  adminKey: string | null;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: FetchLike;
  headers: Record<string, string>;
}

// Error codes of a connection that was never opened: nothing was sent, so any call may be retried.
const NOT_SENT = new Set([
  "ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT",
]);

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class Transport {
  constructor(readonly options: TransportOptions) {}

  private authHeader(auth: Auth): Record<string, string> {
    if (auth === "none") return {};
    const key = auth === "tenant" ? this.options.apiKey : this.options.adminKey;
    if (!key) {
      const hint = auth === "tenant" ? "HINDSIGHT_API_KEY (a tenant key)" : "HINDSIGHT_ADMIN_KEY";
      throw new ConfigurationError(`this call needs ${hint}; set it or pass it to the client`);
    }
    return { Authorization: `Bearer ${key}` };
  }

  url(call: Call): string {
    const url = new URL(this.options.url.replace(/\/+$/, "") + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== null && value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  /** Send `call` until it succeeds or the retry policy gives up; return the parsed answer. */
  async run<T>(call: Call): Promise<T> {
    const url = this.url(call);
    const headers: Record<string, string> = { ...this.options.headers, ...this.authHeader(call.auth ?? "tenant") };
    let body: BodyInit | undefined;
    if (call.raw) {
      body = call.raw.bytes as BodyInit;
      headers["Content-Type"] = call.raw.contentType;
      if (call.raw.contentEncoding) headers["Content-Encoding"] = call.raw.contentEncoding;
    } else if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers["Content-Type"] = "application/json";
    }
    const idempotent = call.idempotent ?? true;
    const timeoutMs = call.timeoutMs ?? this.options.timeoutMs;
    const policy = this.options.retry;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.options.fetch(url, { method: call.method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
      } catch (exc) {
        const notSent = NOT_SENT.has(errorCode(exc));
        const wait = policy.delay({ kind: "transport", notSent }, attempt, idempotent);
        if (wait === null) {
          throw new TransportError(`${call.method} ${url} failed: ${describe(exc, timeoutMs)}`, { cause: exc });
        }
        await sleep(wait);
        continue;
      }
      if (response.ok) return (call.binary ? new Uint8Array(await response.arrayBuffer()) : await decode(response, call, url)) as T;
      const text = await response.text().catch(() => "");
      const outcome: AttemptOutcome = { kind: "answer", status: response.status, retryAfterMs: retryAfterMs(response.headers) };
      const wait = policy.delay(outcome, attempt, idempotent);
      if (wait === null) throw errorFromResponse(response.status, response.statusText, response.headers, text);
      await sleep(wait);
    }
  }
}

async function decode(response: Response, call: Call, url: string): Promise<unknown> {
  const text = await response.text();
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HindsightError(`${call.method} ${url} answered non-JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
}

/** The system error code under fetch's "fetch failed" TypeError (Node's undici puts it in `cause`). */
function errorCode(exc: unknown): string {
  for (let e: unknown = exc, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return "";
}

function describe(exc: unknown, timeoutMs: number): string {
  if (exc instanceof Error && (exc.name === "TimeoutError" || exc.name === "AbortError")) {
    return `no answer within ${timeoutMs} ms`;
  }
  const code = errorCode(exc);
  const message = exc instanceof Error ? exc.message : String(exc);
  return code ? `${code}: ${message}` : message;
}
