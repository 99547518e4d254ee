/**
 * Placeholders and missing secrets: what a team must still set before its first `pulumi up`.
 *
 * The committed stack files hold example values a team must replace (hosts, subnets, account ids, URLs, access ids).
 * Each is marked the one same way, a `PLACEHOLDER:` prefix in front of an example of the right shape:
 *
 *     host: PLACEHOLDER:platdb-qa.cluster-xxxxxxxx.us-east-1.rds.amazonaws.com
 *
 * Validation reads the example behind the prefix, so `hub-export validate` and `hub-export plan` work offline on the
 * committed files; the real program stops on any placeholder left (config/preflight.ts).
 */
import { Secret } from "../core/secret";

export const PLACEHOLDER_PREFIX = "PLACEHOLDER:";

/** A config path: keys and array positions, from the namespace's top-level key down. */
export type KeyPath = (string | number)[];

export interface Placeholder {
  path: KeyPath;
  /** The example value behind the prefix. */
  example: string;
}

export function isPlaceholder(value: unknown): value is string {
  return typeof value === "string" && value.startsWith(PLACEHOLDER_PREFIX);
}

/** `raw` with every placeholder replaced by its example, and where they were. */
export function stripPlaceholders<T>(raw: T): { value: T; placeholders: Placeholder[] } {
  const placeholders: Placeholder[] = [];
  const walk = (value: unknown, path: KeyPath): unknown => {
    if (isPlaceholder(value)) {
      const example = value.slice(PLACEHOLDER_PREFIX.length).trim();
      placeholders.push({ path, example });
      return example;
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i]));
    if (value && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
    return value;
  };
  const value = walk(raw, []) as T;
  return { value, placeholders };
}

/** Paths of the secrets not set in validated config. */
export function missingSecretPaths(config: unknown): KeyPath[] {
  const paths: KeyPath[] = [];
  const walk = (value: unknown, path: KeyPath) => {
    if (value instanceof Secret) {
      if (value.missing) paths.push(path);
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
    else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  walk(config, []);
  return paths;
}

/** `hubExport:tenants[1].clientSecret`: the form `pulumi config set --path` takes. */
export function keyPathText(namespace: string, path: KeyPath): string {
  const [head, ...rest] = path;
  let key = head === undefined ? namespace : `${namespace}:${String(head)}`;
  for (const part of rest) key += typeof part === "number" ? `[${part}]` : `.${part}`;
  return key;
}

/** Stand-ins for the secrets not set, for the offline plan only: never used by a real `pulumi up`. */
export function withOfflineSecrets<T>(config: T): T {
  const walk = (value: unknown, path: KeyPath): unknown => {
    if (value instanceof Secret)
      return value.missing || value.encrypted ? Secret.plain(`offline-stand-in:${path.join(".")}`) : value;
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i]));
    if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
    }
    return value;
  };
  return walk(config, []) as T;
}
