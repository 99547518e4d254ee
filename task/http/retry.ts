/** The task's retry settings (the policy is core/retry.ts's) and how a failed request reads in a reason. */
import { redact } from "../../core/redact";
import type { RetryPolicy } from "../../core/retry";

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: envInt("HUB_EXPORT_RETRY_ATTEMPTS", 8),
  baseMs: envInt("HUB_EXPORT_RETRY_BASE_MS", 100),
  maxMs: envInt("HUB_EXPORT_RETRY_MAX_MS", 5000),
};

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
  const doc = parseJson(text) as { message?: unknown; error?: unknown } | undefined;
  const shown = doc && typeof doc === "object" && (doc.message || doc.error) ? String(doc.message ?? doc.error) : text;
  return redact(shown).slice(0, 300);
}

/** An answer's JSON, or undefined when it is none. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v !== undefined && /^\d+$/.test(v) && Number(v) > 0 ? Number(v) : fallback;
}
