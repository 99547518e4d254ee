/** Retries of hub and queue calls: 429, 5xx and network errors back off with full jitter; the caller counts attempts. */
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, type Dispatcher } from "undici";

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

/** Full jitter: a random wait up to base * 2^(attempt-1), capped; a Retry-After in seconds is honoured (capped too). */
export function backoffMs(attempt: number, policy: RetryPolicy, retryAfter?: string | string[]): number {
  const header = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  const seconds = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
  if (seconds !== undefined) return Math.min(seconds * 1000, policy.maxMs);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(Math.random() * ceiling);
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
