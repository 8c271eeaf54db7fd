/**
 * The recorder's sender: it batches events and sends them, so the agent never waits on the network.
 *
 * The agent only appends to a bounded buffer (`submit`); when the buffer is full the event is
 * dropped and counted, rather than growing without bound. One worker at a time creates the
 * trajectory, sends batches of at most 100 events in order, and finalizes on `close`.
 *
 * What it does when a send fails (the client already retried transient errors):
 * - the service refuses the batch (422/413): it resends the events one by one, so one bad event
 *   costs only itself; event ids make the resend idempotent;
 * - the service is unreachable or failing (transport error, 5xx, 429): it keeps the batch and tries
 *   again after a pause, until `close`'s deadline;
 * - anything else (401, 404, 409): resending cannot help; the events are counted as failed.
 */
import { InvalidRequest, PayloadTooLarge, RateLimited, ServerError, TransportError } from "./errors.js";
import type { Outcome, TrajectoryEvent } from "./types.js";

export interface SenderStats {
  /** Accepted into the buffer. */
  recorded: number;
  /** Acknowledged by the service (new or duplicate). */
  sent: number;
  /** Refused because the buffer was full. */
  dropped: number;
  /** Given up on (refused by the service, or still unsent at the close deadline). */
  failed: number;
  /** In the buffer or in flight. */
  pending: number;
}

export interface SenderHooks {
  start(): Promise<unknown>;
  send(batch: TrajectoryEvent[]): Promise<unknown>;
  finalize(outcome: Outcome, feedback: string | null): Promise<unknown>;
}

export interface SenderOptions {
  maxBuffer?: number;
  batchSize?: number;
  flushIntervalMs?: number;
  retryPauseMs?: number;
  /** Called with each error the sender meets (it never throws into the agent). */
  onError?: (error: unknown, what: string) => void;
}

const isTransient = (e: unknown): boolean => e instanceof TransportError || e instanceof ServerError || e instanceof RateLimited;
const isRefused = (e: unknown): boolean => e instanceof InvalidRequest || e instanceof PayloadTooLarge;
const MAX_ERRORS = 20;

/** A timer that does not keep a Node process alive (where timers have unref). */
function unref(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}

export class BatchSender {
  readonly errors: unknown[] = [];
  finalized = false;
  private readonly buf: TrajectoryEvent[] = [];
  private readonly maxBuffer: number;
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  private readonly retryPauseMs: number;
  private recorded = 0;
  private sent = 0;
  private dropped = 0;
  private failed = 0;
  private closing = false;
  private deadline = Infinity;
  private started = false;
  private broken: unknown = null;
  private worker: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private waiters: { target: number; resolve: () => void }[] = [];
  private interruptPause: (() => void) | null = null;

  constructor(private readonly hooks: SenderHooks, private readonly options: SenderOptions = {}) {
    this.maxBuffer = options.maxBuffer ?? 10_000;
    this.batchSize = options.batchSize ?? 100;
    this.flushIntervalMs = options.flushIntervalMs ?? 250;
    this.retryPauseMs = options.retryPauseMs ?? 500;
  }

  /** O(1) and never waits on the network. False if the event was dropped. */
  submit(event: TrajectoryEvent): boolean {
    if (this.buf.length >= this.maxBuffer || this.closing) {
      this.dropped++;
      return false;
    }
    this.buf.push(event);
    this.recorded++;
    if (this.buf.length >= this.batchSize) this.wake(); // a full batch need not wait for the interval
    else this.schedule();
    return true;
  }

  stats(): SenderStats {
    const done = this.sent + this.failed;
    return { recorded: this.recorded, sent: this.sent, dropped: this.dropped, failed: this.failed, pending: this.recorded - done };
  }

  /** Resolve once every event submitted so far was sent or given up on; false on timeout. */
  async flush(timeoutMs = 10_000): Promise<boolean> {
    const target = this.recorded;
    if (this.sent + this.failed >= target) return true;
    const done = new Promise<void>((resolve) => this.waiters.push({ target, resolve }));
    this.wake();
    return withTimeout(done.then(() => true), timeoutMs, false);
  }

  /** Send what is left, finalize with `outcome` (when given), stop. False if cut short. */
  async close(outcome: [Outcome, string | null] | null, timeoutMs: number): Promise<boolean> {
    this.closing = true;
    this.deadline = Date.now() + timeoutMs;
    this.interruptPause?.();
    const work = (async () => {
      await this.wake();
      if (outcome !== null && this.broken === null) {
        this.finalized = await this.untilDone(async () => {
          await this.ensureStarted(); // a run that recorded nothing is still a trajectory
          await this.hooks.finalize(...outcome);
        }, "finalize").catch(() => false); // a refusal is noted already; nothing more to do at shutdown
      }
    })();
    await withTimeout(work, timeoutMs + 1000, undefined);
    const s = this.stats();
    return s.failed === 0 && s.pending === 0 && (outcome === null || this.finalized);
  }

  // --- the worker -------------------------------------------------------------------------------

  private schedule(): void {
    if (this.timer !== null || this.worker !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.wake();
    }, this.flushIntervalMs);
    unref(this.timer);
  }

  /** Start the worker now (or return the running one, which takes whatever is in the buffer). */
  private wake(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.worker === null) {
      this.worker = this.drain().finally(() => {
        this.worker = null;
        if (this.buf.length > 0) this.schedule();
      });
    }
    return this.worker;
  }

  private async drain(): Promise<void> {
    while (this.buf.length > 0) {
      await this.deliver(this.buf.splice(0, this.batchSize));
    }
  }

  private account(sent: number, failed: number): void {
    this.sent += sent;
    this.failed += failed;
    const done = this.sent + this.failed;
    this.waiters = this.waiters.filter((w) => (done >= w.target ? (w.resolve(), false) : true));
  }

  private async ensureStarted(): Promise<void> {
    if (this.broken !== null) throw this.broken;
    if (this.started) return;
    try {
      await this.hooks.start();
    } catch (exc) {
      if (!isTransient(exc)) this.broken = exc; // e.g. a bad key: every later request would fail the same way
      throw exc;
    }
    this.started = true;
  }

  private async deliver(batch: TrajectoryEvent[]): Promise<void> {
    if (this.broken !== null) {
      this.account(0, batch.length); // noted once already; no request could succeed
      return;
    }
    let ok: boolean;
    try {
      ok = await this.untilDone(async () => {
        await this.ensureStarted();
        await this.hooks.send(batch);
      }, `send ${batch.length} events`);
    } catch {
      // refused: one by one, so that one bad event costs only itself
      if (batch.length > 1 && this.broken === null) {
        for (const event of batch) await this.deliver([event]);
      } else {
        this.account(0, batch.length);
      }
      return;
    }
    if (ok) this.account(batch.length, 0);
    else this.account(0, batch.length);
  }

  /**
   * Run `action` until it succeeds; pause and repeat on transient errors until the close deadline.
   * Refusals (422/413) are thrown to the caller; other errors count as failed (false).
   */
  private async untilDone(action: () => Promise<void>, what: string): Promise<boolean> {
    let pause = this.retryPauseMs;
    for (;;) {
      try {
        await action();
        return true;
      } catch (exc) {
        this.note(exc, what);
        if (isRefused(exc)) throw exc;
        if (!isTransient(exc)) return false;
        if (Date.now() + pause > this.deadline) return false;
        await this.pause(pause);
        pause = Math.min(pause * 2, 10_000);
      }
    }
  }

  /** Wait `ms`; `close` cuts a pause short (one more try right away). Before close, the pause does
   * not keep the process alive; during close it does, since close has a deadline. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      if (!this.closing) unref(timer);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        if (self.interruptPause === done) self.interruptPause = null;
        resolve();
      }
      this.interruptPause = this.closing ? null : done;
    });
  }

  private note(exc: unknown, what: string): void {
    this.errors.push(exc);
    if (this.errors.length > MAX_ERRORS) this.errors.shift();
    this.options.onError?.(exc, what);
  }
}

function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
