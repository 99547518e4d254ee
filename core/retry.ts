/**
 * The one retry policy: the task's hub and queue calls (task/http/client.ts) and the providers' cfg API calls
 * (providers/routingRules.ts). Pure and self-contained: the providers capture its functions by value.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  baseMs: number;
  maxMs: number;
}

/** The longest Retry-After honoured: a hub asking for more still gets its request again after this long. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * The wait after attempt `attempt` failed. A Retry-After (seconds, or an HTTP date) is honoured as given, up to
 * MAX_RETRY_AFTER_MS; otherwise full jitter: a random wait up to base * 2^(attempt-1), capped at maxMs.
 */
export function backoffMs(attempt: number, policy: RetryPolicy, retryAfter?: string | string[] | null): number {
  const asked = parseRetryAfter(retryAfter ?? undefined);
  if (asked !== undefined) return Math.min(asked, MAX_RETRY_AFTER_MS);
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
