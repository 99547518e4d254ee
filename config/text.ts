/**
 * Text in the stack config, refused where it would harm: no control, bidirectional-override or lone-surrogate
 * character at any depth (a NUL fails PostgreSQL mid-apply; an override hides what a value says in a review), at most
 * MAX_TEXT characters; names never climb out with `..`, and file paths stay inside the project.
 */
import path from "node:path";
import { z } from "zod";
import { mapLeaves, type KeyPath } from "./placeholders";

/** The longest string any key accepts (a key's own limit is tighter). */
export const MAX_TEXT = 2048;

/** C0 and C1 controls (NUL, ESC, newline, ...), bidirectional embeddings, overrides and isolates, LRM/RLM/ALM. */
const UNSAFE_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be config text, or undefined. The value is never quoted (it may be a secret). */
export function unsafeTextProblem(value: string): string | undefined {
  const bad = UNSAFE_CHARACTER.exec(value);
  if (bad)
    return `must not contain control or bidirectional-override characters (found U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")})`;
  if (LONE_SURROGATE.test(value)) return "must be well-formed Unicode text (it holds a lone surrogate)";
  if (value.length > MAX_TEXT) return `must be at most ${MAX_TEXT} characters (it has ${value.length})`;
  return undefined;
}

/** Every string of a raw config value that is not safe text, with its key path. */
export function unsafeTextIssues(raw: unknown): { path: KeyPath; message: string }[] {
  const issues: { path: KeyPath; message: string }[] = [];
  mapLeaves(raw, (value, path) => {
    const message = typeof value === "string" ? unsafeTextProblem(value) : undefined;
    if (message) issues.push({ path, message });
  });
  return issues;
}

/** `..` or `.` as a name, or `..` in it: a name that would climb out of its folder, key prefix or URL path. */
export function isDotName(value: string): boolean {
  return /^\.+$/.test(value) || value.includes("..");
}

/**
 * A file or folder path in the stack config: relative to the project folder, forward slashes, and inside it. The
 * readers check again where it really leads (config/load.ts projectFile: symbolic links included).
 */
export function projectPath(what: string) {
  return z
    .string()
    .min(1, `must name ${what}`)
    .max(1024, "must be at most 1024 characters")
    .refine(
      (v) => !path.posix.isAbsolute(v) && !/^[A-Za-z]:/.test(v),
      `must be relative to the project folder (${what}), not absolute`,
    )
    .refine((v) => !v.includes("\\"), "must use / between folders, not \\")
    .refine((v) => {
      const normal = path.posix.normalize(v);
      return normal !== ".." && !normal.startsWith("../");
    }, `must stay inside the project folder (${what}): no .. out of it`);
}
