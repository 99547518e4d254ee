/**
 * The one function every text from the hub, the broker or an error passes through before it reaches a log, the
 * database or a terminal: the process's known secrets, in the forms they take on the wire, become `[secret]` and
 * control characters are escaped. No imports: the routing-rules provider is serialized with what it captures.
 */

/** What a secret is replaced by. */
const MARKER = "[secret]";

/** Shorter strings are never masked: a 1 to 3 character "secret" would blank out ordinary text everywhere. */
const MIN_SECRET_LENGTH = 4;

/** The process's masked secrets, each in every form it is sent in. */
const masked: { forms: string[]; pattern?: RegExp } = { forms: [] };

/**
 * Masks a secret from now on, in the forms it travels in: as it is, URL-encoded (a query or a form body), form-encoded
 * (`+` for spaces) and as it appears inside a JSON string.
 */
export function maskSecret(...values: (string | undefined | null)[]): void {
  let added = false;
  for (const value of values) {
    if (!value || value.length < MIN_SECRET_LENGTH) continue;
    for (const form of secretForms(value)) {
      if (masked.forms.includes(form)) continue;
      masked.forms.push(form);
      added = true;
    }
  }
  if (added) masked.pattern = secretPattern(masked.forms);
}

/**
 * Replaces every known secret by `[secret]` and escapes control characters: C0 (newlines and tabs too: a reason is one
 * line), DEL, C1 (0x9b is CSI on some terminals), the line separators and the bidi controls that reorder what a
 * terminal shows. `\x1b[31m` in an answer is shown as those characters.
 */
export function redact(text: string): string {
  return scrub(String(text), masked.pattern);
}

/**
 * `redact` with the given secrets instead of the process's: for code that runs apart from the process that loaded
 * them (the routing-rules provider is serialized into the Pulumi state, which must not hold the masked secrets).
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return scrub(
    String(text),
    secretPattern(secrets.flatMap((s) => (s && s.length >= MIN_SECRET_LENGTH ? secretForms(s) : []))),
  );
}

function scrub(text: string, pattern: RegExp | undefined): string {
  const out = pattern ? text.replace(pattern, MARKER) : text;
  return CONTROL.test(out) ? out.replace(CONTROL_ALL, escapeControl) : out;
}

/** Characters of a value a message echoes at most: a 100,000-character id is shown by its start and its length. */
const ECHO_MAX = 80;

/** `text` as a message echoes it: cut to its first `max` characters with an ellipsis and its length when longer. */
export function cut(text = "", max = ECHO_MAX): string {
  return text.length <= max ? text : `${text.slice(0, max)}... (${text.length.toLocaleString("en-US")} characters)`;
}

/** `redact` line by line: for a text of several lines (a stack trace) shown as several lines. */
export function redactLines(text: string): string {
  return String(text).split(/\r?\n/).map(redact).join("\n");
}

/** `redact` on every string of a value (object keys too), for a log line's fields or a JSON column. Dates stay. */
export function redactDeep<T>(value: T): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) return (value as unknown[]).map((v) => redactDeep(v)) as T;
  if (value && typeof value === "object" && !(value instanceof Date) && !Buffer.isBuffer(value)) {
    if (value instanceof Error) return redact(value.message) as T;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[redact(k)] = redactDeep(v);
    return out as T;
  }
  return value;
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const CONTROL_ALL = new RegExp(CONTROL.source, "g");

function escapeControl(c: string): string {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

function secretForms(value: string): string[] {
  const forms = new Set([
    value,
    encodeURIComponent(value),
    new URLSearchParams({ s: value }).toString().slice(2),
    JSON.stringify(value).slice(1, -1),
  ]);
  return [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/** Longest first, so that a secret inside a longer one (a client secret in its credentials string) leaves no tail. */
function secretPattern(forms: readonly string[]): RegExp | undefined {
  if (forms.length === 0) return undefined;
  const sorted = [...new Set(forms)].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map((f) => f.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|"), "g");
}
