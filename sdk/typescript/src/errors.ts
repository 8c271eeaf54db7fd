/**
 * Every error the SDK throws, in one tree (the same as the Python SDK's):
 *
 *     HindsightError
 *     ├── ConfigurationError     no URL or key to make the call with (nothing was sent)
 *     ├── TransportError         the service could not be reached, the connection broke, or it timed out
 *     └── APIError               the service answered with an error (.status, .code, .message, .requestId)
 *         ├── InvalidRequest     400, 422: the request is not acceptable; fix it, do not retry
 *         ├── Unauthorized       401 (403): missing, unknown, revoked or wrong-kind key
 *         ├── NotFound           404: unknown id, or an id of another tenant
 *         ├── Conflict           409: the state forbids it (e.g. events after finalize)
 *         ├── PayloadTooLarge    413: too many events, or an event or body too large
 *         ├── RateLimited        429: slow down (.retryAfterMs, when the service said)
 *         └── ServerError        5xx: the service failed (503: a dependency is down, .retryAfterMs)
 *
 * Calls throw these only after the retry policy gave up.
 */

export class HindsightError extends Error {
  override name = "HindsightError";
}

/** A setting needed for the call is missing; thrown before anything is sent. */
export class ConfigurationError extends HindsightError {
  override name = "ConfigurationError";
}

/** The request got no HTTP answer (connection refused, timeout, broken connection). */
export class TransportError extends HindsightError {
  override name = "TransportError";
}

export interface APIErrorInit {
  status: number;
  code: string;
  message: string;
  details?: unknown;
  requestId?: string | null;
  retryAfterMs?: number | null;
}

/** The service answered with an error body `{"error": {"code", "message"}}`. */
export class APIError extends HindsightError {
  override name = "APIError";
  readonly status: number;
  /** The service's error code, e.g. `not_found`, `validation_error` (`http_<status>` when the body had none). */
  readonly code: string;
  /** What the service said beyond the message (e.g. the fields a 422 refused). */
  readonly details: unknown;
  /** The id the gateway gave the request (x-request-id, x-amzn-requestid, apigw-requestid), if any. */
  readonly requestId: string | null;
  /** How long the service asked to wait before a retry (Retry-After), if it said. */
  readonly retryAfterMs: number | null;

  constructor(init: APIErrorInit) {
    // `message` is the service's own message, as in the Python SDK; status and code are fields.
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

export class InvalidRequest extends APIError {
  override name = "InvalidRequest";
}

export class Unauthorized extends APIError {
  override name = "Unauthorized";
}

export class NotFound extends APIError {
  override name = "NotFound";
}

export class Conflict extends APIError {
  override name = "Conflict";
}

export class PayloadTooLarge extends APIError {
  override name = "PayloadTooLarge";
}

export class RateLimited extends APIError {
  override name = "RateLimited";
}

export class ServerError extends APIError {
  override name = "ServerError";
}

const BY_STATUS: Record<number, new (init: APIErrorInit) => APIError> = {
  400: InvalidRequest,
  401: Unauthorized,
  403: Unauthorized,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  422: InvalidRequest,
  429: RateLimited,
};

const REQUEST_ID_HEADERS = ["x-request-id", "x-amzn-requestid", "apigw-requestid"];

/** Retry-After in milliseconds: delta-seconds (what the service sends) or an HTTP date. */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | null {
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

export function requestIdOf(headers: Headers): string | null {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers.get(name);
    if (value) return value;
  }
  return null;
}

/** Translate an HTTP error answer into the tree above, whatever its body looks like. */
export function errorFromResponse(status: number, statusText: string, headers: Headers, text: string): APIError {
  let code = `http_${status}`;
  let message = statusText || "error";
  let details: unknown = undefined;
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const err = isObject(body) && isObject(body["error"]) ? body["error"] : null;
  if (err) {
    code = String(err["code"] || code);
    message = String(err["message"] || message);
    details = err["details"];
  } else if (text) {
    // A proxy or load balancer in front of the service answers in its own format.
    message = text.slice(0, 300);
  }
  const Cls = BY_STATUS[status] ?? (status >= 500 ? ServerError : APIError);
  return new Cls({ status, code, message, details, requestId: requestIdOf(headers), retryAfterMs: retryAfterMs(headers) });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
