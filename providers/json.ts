/** JSON and hash helpers shared by the dynamic providers. Serialized provider code: providers/README.md. */

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

/** `value` with `keys` only: a provider's state holds its own inputs, nothing else the engine passed along. */
export function pick<T, K extends keyof T>(value: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, value[k]])) as Pick<T, K>;
}

/** The hex sha256 of text (as UTF-8) or bytes. */
export function sha256Hex(data: string | Buffer): string {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  return crypto.createHash("sha256").update(data).digest("hex");
}
