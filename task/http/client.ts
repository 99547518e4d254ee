/**
 * The task's HTTP client for the hub and its brokers (task/README.md, "Talking to the hub"): a total deadline per
 * request, answers cut at MAX_ANSWER_BYTES, a retry budget per request, the run's stop. Per request: one
 * AbortController and one timer (all of one duration, so Node keeps them in one list).
 */
import { Agent, type Dispatcher } from "undici";
import { answerText, describeRequestError } from "./retry";
import { backoffMs, parseRetryAfter, type RetryPolicy } from "../../core/retry";
import { outcomeOf, UNLIMITED, type Outcome, type RequestGate } from "./concurrency";
import type { BreakerGate, BreakerTicket, Verdict } from "./breaker";
import { NEVER_STOPPED, RunStopped, type RunStop } from "../stop";

/** The longest answer read: API answers are small (the broker's answer to a batch of 10 is about 2 KB). */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * One keep-alive agent per process: a bounded pool of connections per origin. Its timeouts are per read; the total
 * deadline is HubHttp's. An answer body past MAX_ANSWER_BYTES destroys the connection as it arrives.
 */
export function createAgent(connectionsPerOrigin: number): Dispatcher {
  return new Agent({
    connections: connectionsPerOrigin,
    keepAliveTimeout: 30_000,
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
    connectTimeout: 10_000,
    maxResponseSize: MAX_ANSWER_BYTES,
  });
}

export interface HttpLimits {
  /** Total time of one request: connecting, sending, the headers and the whole body. */
  deadlineMs: number;
  /** Time of all attempts of one request and the waits between them (an attempt that started may run its deadline). */
  budgetMs: number;
}

/** The defaults: HUB_EXPORT_REQUEST_DEADLINE_SECONDS and HUB_EXPORT_RETRY_BUDGET_SECONDS override them (task/context.ts). */
export const DEFAULT_LIMITS: HttpLimits = { deadlineMs: 60_000, budgetMs: 180_000 };

/** An HTTP answer, read. */
export interface Answer {
  status: number;
  text: string;
  retryAfter?: string | string[];
}

/** No complete answer within the deadline: transient, like a network error. */
export class RequestDeadlineError extends Error {
  readonly code = "HUB_EXPORT_DEADLINE";
  constructor(readonly deadlineMs: number) {
    super(`no complete answer within ${seconds(deadlineMs)} s (the request's deadline)`);
    this.name = "RequestDeadlineError";
  }
}

/** An answer longer than MAX_ANSWER_BYTES: a permanent failure of the request (retrying would only download it again). */
export class AnswerTooLongError extends Error {
  readonly code = "HUB_EXPORT_ANSWER_TOO_LONG";
  constructor() {
    super(`the answer is longer than ${MAX_ANSWER_BYTES / 1024} KiB; it was cut off and the request is not retried`);
    this.name = "AnswerTooLongError";
  }
}

export class HubHttp {
  private readonly inFlight = new Set<AbortController>();

  constructor(
    readonly dispatcher: Dispatcher,
    readonly retry: RetryPolicy,
    readonly limits: HttpLimits = DEFAULT_LIMITS,
    readonly stop: RunStop = NEVER_STOPPED,
  ) {
    if (stop !== NEVER_STOPPED) {
      stop.abandonSignal.addEventListener("abort", () => {
        for (const c of this.inFlight) c.abort(stop.abandonSignal.reason);
      });
    }
  }

  /**
   * Sends one request through `breaker` and `gate` and reads its answer. The permit covers this request alone, never
   * the wait before a retry, and tells the link what the answer means for it (concurrency.ts, outcomeOf); the breaker
   * learns whether the hub answered (breaker.ts). Throws a network error, RequestDeadlineError, AnswerTooLongError,
   * LinkOpen when the link is open, or RunStopped when the run abandons its requests.
   */
  async send(
    options: Dispatcher.RequestOptions,
    gate: RequestGate = UNLIMITED,
    breaker?: BreakerGate,
  ): Promise<Answer> {
    const ticket = breaker ? await breaker.admit() : NO_TICKET;
    const permit = await gate.acquire();
    let outcome: Outcome = { kind: "error" };
    let verdict: Verdict = "none";
    let failure: string | undefined;
    let sentAt: number | undefined;
    let deadline = false;
    const controller = new AbortController();
    const timer = setTimeout(abortAtDeadline, this.limits.deadlineMs, controller, this.limits.deadlineMs);
    this.inFlight.add(controller);
    try {
      // The link opened while this request waited for its permit: it is not sent.
      if (breaker?.isOpen()) {
        outcome = { kind: "unsent" };
        breaker.throwIfOpen();
      }
      this.stop.throwIfStopping();
      sentAt = breaker?.now();
      const res = await this.dispatcher.request({ ...options, signal: controller.signal });
      const text = await res.body.text();
      const retryAfter = res.headers["retry-after"];
      outcome = outcomeOf(res.statusCode, parseRetryAfter(retryAfter));
      verdict = res.statusCode >= 500 ? "failed" : "answered";
      if (verdict === "failed") failure = `HTTP ${res.statusCode}: ${answerText(text)}`;
      return { status: res.statusCode, text, retryAfter };
    } catch (err) {
      const error = requestError(err, controller.signal);
      // An answer too long is an answer; a stop or an open link decides nothing about the link.
      if (!(error instanceof RunStopped) && outcome.kind !== "unsent") {
        verdict = error instanceof AnswerTooLongError ? "answered" : "failed";
        failure = describeRequestError(error);
        deadline = error instanceof RequestDeadlineError;
      }
      throw error;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
      permit.done(outcome);
      ticket.done(verdict, failure, deadline ? sentAt : undefined);
    }
  }
}

const NO_TICKET: BreakerTicket = { done() {} };

/** One request's attempts: at most `retry.attempts`, none started once the budget is spent or `breaker` open. */
export class Attempts {
  attempt = 0;
  private readonly until: number;
  private spent = false;

  constructor(
    private readonly http: HubHttp,
    private readonly breaker?: BreakerGate,
  ) {
    this.until = Date.now() + http.limits.budgetMs;
  }

  /**
   * Before each attempt: false when the attempts or the budget are used up. Throws RunStopped when the run stops, and
   * LinkOpen when the link opened: then the request is neither tried again nor given up as failed.
   */
  next(): boolean {
    this.http.stop.throwIfStopping();
    this.breaker?.throwIfOpen();
    if (this.attempt >= this.http.retry.attempts || this.spent || (this.attempt > 0 && Date.now() >= this.until)) {
      this.spent ||= this.attempt < this.http.retry.attempts;
      return false;
    }
    this.attempt++;
    return true;
  }

  /** The wait before the next attempt (Retry-After, or backoff with jitter); none when it would end past the budget. */
  async backoff(retryAfter?: string | string[]): Promise<void> {
    if (this.attempt >= this.http.retry.attempts) return;
    const ms = backoffMs(this.attempt, this.http.retry, retryAfter);
    if (Date.now() + ms >= this.until) {
      this.spent = true;
      return;
    }
    await this.http.stop.sleep(ms);
  }

  /** `after 8 attempts`, or `after 3 attempts (its retry budget of 180 s is used up)`. */
  describe(): string {
    return `after ${this.attempt} attempt${this.attempt === 1 ? "" : "s"}${this.spent ? ` (its retry budget of ${seconds(this.http.limits.budgetMs)} s is used up)` : ""}`;
  }
}

/** Whether a request's error is permanent: retrying cannot help. */
export function isPermanentRequestError(err: unknown): boolean {
  return err instanceof AnswerTooLongError;
}

function abortAtDeadline(controller: AbortController, ms: number): void {
  controller.abort(new RequestDeadlineError(ms));
}

/** What a failed request says: the deadline or the stop that aborted it, the size cap, or the network error. */
function requestError(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted && (signal.reason instanceof RequestDeadlineError || signal.reason instanceof RunStopped))
    return signal.reason;
  if (err instanceof RunStopped) return err;
  if ((err as { code?: string })?.code === "UND_ERR_RES_EXCEEDED_MAX_SIZE") return new AnswerTooLongError();
  return err;
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}
