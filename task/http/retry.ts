/** Retries of hub and queue calls: 429, 5xx and network errors back off with full jitter; the caller counts attempts. */
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, type Dispatcher } from "undici";
import { outcomeOf, type Outcome, type RequestGate } from "./concurrency";

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: envInt("HUB_EXPORT_RETRY_ATTEMPTS", 8),
  baseMs: envInt("HUB_EXPORT_RETRY_BASE_MS", 100),
  maxMs: envInt("HUB_EXPORT_RETRY_MAX_MS", 5000),
};

/** The longest Retry-After honoured: a hub asking for more still gets its request again after this long. */
export const RETRY_AFTER_MAX_MS = 60_000;

/**
 * The wait before attempt `attempt + 1`. A Retry-After (seconds, or an HTTP date) is honoured as given, up to
 * RETRY_AFTER_MAX_MS; otherwise full jitter: a random wait up to base * 2^(attempt-1), capped at maxMs.
 */
export function backoffMs(attempt: number, policy: RetryPolicy, retryAfter?: string | string[]): number {
  const asked = parseRetryAfter(retryAfter);
  if (asked !== undefined) return Math.min(asked, RETRY_AFTER_MAX_MS);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(Math.random() * ceiling);
}

/** A Retry-After header in milliseconds: delay-seconds (fractions accepted) or an HTTP date; undefined if absent or unreadable. */
export function parseRetryAfter(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function wait(ms: number): Promise<void> {
  return sleep(ms);
}

/** A network error (reset, refused, timeout) as text for a status reason: code and message, never a header. */
export function describeNetworkError(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  return `network error${code ? ` ${code}` : ""}: ${e.message ?? String(err)}`;
}

/** One keep-alive agent per process: a bounded pool of connections per origin. */
export function createAgent(connectionsPerOrigin: number): Dispatcher {
  return new Agent({ connections: connectionsPerOrigin, keepAliveTimeout: 30_000, headersTimeout: 60_000, bodyTimeout: 60_000, connectTimeout: 10_000 });
}

/** The first 300 characters of an answer's text, for a reason; JSON error bodies give their message. */
export function answerText(text: string): string {
  try {
    const doc = JSON.parse(text) as { message?: unknown; error?: unknown };
    if (doc && typeof doc === "object" && (doc.message || doc.error)) return String(doc.message ?? doc.error).slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v !== undefined && /^\d+$/.test(v) && Number(v) > 0 ? Number(v) : fallback;
}

/** An HTTP answer, read. */
export interface Answer {
  status: number;
  text: string;
  retryAfter?: string | string[];
}

/**
 * Sends one request through `gate` and reads its answer. The permit covers this request alone, never the wait before a
 * retry, and tells the link what the answer means for it (concurrency.ts, outcomeOf). Network errors are thrown.
 */
export async function sendThrough(gate: RequestGate, dispatcher: Dispatcher, options: Dispatcher.RequestOptions): Promise<Answer> {
  const permit = await gate.acquire();
  let outcome: Outcome = { kind: "error" };
  try {
    const res = await dispatcher.request(options);
    const text = await res.body.text();
    const retryAfter = res.headers["retry-after"];
    outcome = outcomeOf(res.statusCode, parseRetryAfter(retryAfter));
    return { status: res.statusCode, text, retryAfter };
  } finally {
    permit.done(outcome);
  }
}
