/**
 * Placeholders and missing secrets: what a team must still set before its first `pulumi up`. A committed stack file
 * marks each example value with a `PLACEHOLDER:` prefix (`host: PLACEHOLDER:platdb-qa.cluster-xxxx...`): validation
 * reads the example behind it, so `validate` and `plan` work offline; the real program stops on any (preflight.ts).
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

/** `value` with `leaf` applied to everything below it that is not an array or a plain object, given its path. */
export function mapLeaves(
  value: unknown,
  leaf: (value: unknown, path: KeyPath) => unknown,
  path: KeyPath = [],
): unknown {
  if (Array.isArray(value)) return value.map((v, i) => mapLeaves(v, leaf, [...path, i]));
  const proto: unknown = value && typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
  if (proto === Object.prototype || proto === null)
    return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, mapLeaves(v, leaf, [...path, k])]));
  return leaf(value, path);
}

export function isPlaceholder(value: unknown): value is string {
  return typeof value === "string" && value.startsWith(PLACEHOLDER_PREFIX);
}

/** `raw` with every placeholder replaced by its example, and where they were. */
export function stripPlaceholders<T>(raw: T): { value: T; placeholders: Placeholder[] } {
  const placeholders: Placeholder[] = [];
  const value = mapLeaves(raw, (leaf, path) => {
    if (!isPlaceholder(leaf)) return leaf;
    const example = leaf.slice(PLACEHOLDER_PREFIX.length).trim();
    placeholders.push({ path, example });
    return example;
  }) as T;
  return { value, placeholders };
}

/** Paths of the secrets not set in validated config. */
export function missingSecretPaths(config: unknown): KeyPath[] {
  const paths: KeyPath[] = [];
  mapLeaves(config, (value, path) => value instanceof Secret && value.missing && paths.push(path));
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
  return mapLeaves(config, (value, path) =>
    value instanceof Secret && (value.missing || value.encrypted)
      ? Secret.plain(`offline-stand-in:${path.join(".")}`)
      : value,
  ) as T;
}
