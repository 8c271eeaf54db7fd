/** When to try a call again, and how long to wait first. Pure: no I/O, no clock, no sleeping. */

/** What an attempt ended with, as far as retrying is concerned. */
export type AttemptOutcome =
  | { kind: "answer"; status: number; retryAfterMs: number | null }
  /** notSent: the connection could not be opened, so the service cannot have applied anything. */
  | { kind: "transport"; notSent: boolean };

export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 means no retry). */
  maxAttempts?: number;
  /** Backoff before the first retry is between half of this and this (default 250 ms); it doubles per retry. */
  baseDelayMs?: number;
  /** Backoff ceiling (default 8 s). */
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the caller gets the error instead (default 30 s). */
  maxRetryAfterMs?: number;
  /** Source of jitter in [0, 1) (default Math.random); a fixed one makes delays predictable in tests. */
  random?: () => number;
}

/**
 * Exponential backoff with jitter, honouring Retry-After.
 *
 * - 429 is retried for every call: the service refused it, so nothing was applied. It waits what
 *   Retry-After says (backoff when the header is missing).
 * - A connection that could not be opened is retried for every call, for the same reason.
 * - 5xx (503 with its Retry-After) and connections that broke mid-way are retried only for
 *   idempotent calls, since the service may have applied the write. Writes that carry
 *   client-chosen ids are idempotent.
 */
export class RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxRetryAfterMs: number;
  private readonly random: () => number;

  constructor(options: RetryOptions = {}) {
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 4);
    this.baseDelayMs = options.baseDelayMs ?? 250;
    this.maxDelayMs = options.maxDelayMs ?? 8000;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  /**
   * Delay before retry number `attempt` (0-based): half fixed, half random ("equal jitter").
   * The random half spreads the retries of many agents that failed at the same moment.
   */
  backoff(attempt: number): number {
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** attempt);
    return ceiling / 2 + this.random() * (ceiling / 2);
  }

  /** Milliseconds to wait before the next attempt, or null to give up with this outcome. */
  delay(outcome: AttemptOutcome, attempt: number, idempotent: boolean): number | null {
    if (attempt + 1 >= this.maxAttempts) return null;
    if (outcome.kind === "transport") {
      return outcome.notSent || idempotent ? this.backoff(attempt) : null;
    }
    const { status, retryAfterMs } = outcome;
    if (status === 429 || (status === 503 && idempotent)) {
      if (retryAfterMs === null) return this.backoff(attempt);
      return retryAfterMs <= this.maxRetryAfterMs ? retryAfterMs : null;
    }
    if (status >= 500 && idempotent) return this.backoff(attempt);
    return null;
  }
}

/** One attempt only: what the recorder's advise uses, since advice must never hold an agent up. */
export const NO_RETRY = new RetryPolicy({ maxAttempts: 1 });
