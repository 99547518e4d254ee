/**
 * JSON helpers shared by the dynamic providers. Like providers/pg.ts, these functions run in the dynamic-provider host
 * as serialized closures: provider files alias them into a local const (never `json_1.stableJson`), so that the
 * serializer captures the functions and not this module.
 */

/** JSON with object keys sorted and undefined members left out: equal values compare equal whatever their key order. */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .filter((k) => record[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${stableJson(record[k])}`)
    .join(",")}}`;
}
