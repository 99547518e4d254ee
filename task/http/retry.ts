/** Retries of hub and queue calls: 429, 5xx and network errors back off with full jitter; the caller counts attempts. */
import { redact } from "../../core/redact";

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

/**
 * A failed request (reset, refused, the deadline, an answer too long) as text for a reason: code and message, never a
 * header; redacted (core/redact.ts), since a message may quote what the server sent.
 */
export function describeRequestError(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  if (typeof e?.code === "string" && e.code.startsWith("HUB_EXPORT_")) return redact(e.message ?? String(err));
  const code = e?.code ?? e?.cause?.code;
  return redact(`network error${code ? ` ${code}` : ""}: ${e?.message ?? String(err)}`);
}

/**
 * The first 300 characters of an answer's text, for a reason; JSON error bodies give their message. Redacted first
 * (core/redact.ts): the hub's text reaches logs, _STATUS and terminals only through here.
 */
export function answerText(text: string): string {
  let shown = text;
  try {
    const doc = JSON.parse(text) as { message?: unknown; error?: unknown };
    if (doc && typeof doc === "object" && (doc.message || doc.error)) shown = String(doc.message ?? doc.error);
  } catch {
    // not JSON
  }
  return redact(shown).slice(0, 300);
}

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v !== undefined && /^\d+$/.test(v) && Number(v) > 0 ? Number(v) : fallback;
}
