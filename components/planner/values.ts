/**
 * Property values as the engine receives them (google.protobuf.Struct as JSON): secrets, unknowns, resource
 * references and assets are objects tagged with a signature. Plans keep them so, and these helpers read them.
 */
const SIG = "4dabf18193072939515e22adb298388d";
const SECRET = "1b47061264138c4ac30d75fd1eb44270";
const RESOURCE = "5cf8f73096256a8f31e491e813e4eb8e";
const ASSET = "c44067f5952c0a294b673a41bacd8c17";
const ARCHIVE = "0def7320c3a5731c473e5ecbe6d01bc7";
const OUTPUT_VALUE = "d0e6a833031e9bbcd3f4e8bde6ca49a4";
const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export const MASK = "[secret]";
/** A dynamic resource's provider code (components/dynamicResource.ts); a stand-in offline, summarized in plans. */
export const DYNAMIC_PROVIDER_KEY = "__provider";

type Tagged = Record<string, unknown> & { [SIG]?: string };
const sigOf = (value: unknown): string | undefined =>
  value && typeof value === "object" && !Array.isArray(value) ? (value as Tagged)[SIG] : undefined;

/** True when the value itself is a secret (not only something inside it). */
export function isSecretValue(value: unknown): boolean {
  return sigOf(value) === SECRET || (sigOf(value) === OUTPUT_VALUE && (value as { secret?: boolean }).secret === true);
}

/** True when the value is or holds a secret anywhere. */
export function containsSecret(value: unknown): boolean {
  if (isSecretValue(value)) return true;
  if (Array.isArray(value)) return value.some(containsSecret);
  if (value && typeof value === "object") return Object.values(value).some(containsSecret);
  return false;
}

/** Secrets as "[secret]", unknowns as "[unknown]", references as {"$resource": urn}, provider code summarized. */
export function maskValue(value: unknown, key?: string): unknown {
  if (key === DYNAMIC_PROVIDER_KEY && typeof value === "string") return "[dynamic provider code]";
  if (value === UNKNOWN) return "[unknown]";
  const sig = sigOf(value);
  const v = value as Record<string, unknown>;
  if (sig === SECRET) return MASK;
  if (sig === OUTPUT_VALUE) return v.secret ? MASK : "value" in v ? maskValue(v.value) : "[unknown]";
  if (sig === RESOURCE) return { $resource: v.urn };
  if (sig === ASSET)
    return { $asset: v.path ?? v.uri ?? `text, ${((v.text as string | undefined) ?? "").length} characters` };
  if (sig === ARCHIVE) return { $archive: v.path ?? v.uri ?? Object.keys((v.assets as object) ?? {}) };
  if (Array.isArray(value)) return value.map((x) => maskValue(x));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, maskValue(x, k)]));
  return value;
}

/** The plain values, secrets revealed. For tests and in-process checks only: never print the result. */
export function revealValue(value: unknown): unknown {
  const sig = sigOf(value);
  const v = value as Record<string, unknown>;
  if (sig === SECRET) return revealValue(v.value);
  if (sig === OUTPUT_VALUE) return revealValue(v.value);
  if (sig === RESOURCE) return { $resource: v.urn };
  if (sig === ASSET || sig === ARCHIVE) return value;
  if (Array.isArray(value)) return value.map(revealValue);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, revealValue(x)]));
  return value;
}

/**
 * A value as two plans are compared (components/planner/diff.ts): a secret becomes `secret(leaf)` for each of its
 * leaves, its keys kept (a secret object, or a secret JSON text of one: tenant_credentials.txt's entries are keyed by
 * hub tenant id), other tagged values masked. A saved plan's "[secret]" is `secret(undefined)`: its content unknown.
 * The leaves reach `secret` revealed, for comparing only: never print what it receives.
 */
export function comparableValue(value: unknown, secret: (leaf: unknown) => unknown, key?: string): unknown {
  if (key === DYNAMIC_PROVIDER_KEY && typeof value === "string") return maskValue(value, key);
  const sig = sigOf(value);
  const v = value as Record<string, unknown>;
  if (sig === SECRET || (sig === OUTPUT_VALUE && v.secret)) return secretTree(revealValue(value), secret);
  if (sig === OUTPUT_VALUE) return "value" in v ? comparableValue(v.value, secret) : "[unknown]";
  if (sig !== undefined || value === UNKNOWN) return maskValue(value);
  if (value === MASK) return secret(undefined);
  if (Array.isArray(value)) return value.map((x) => comparableValue(x, secret));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, comparableValue(x, secret, k)]));
  return value;
}

function secretTree(plain: unknown, secret: (leaf: unknown) => unknown): unknown {
  if (typeof plain === "string" && /^\s*\{/.test(plain)) {
    try {
      return secretTree(JSON.parse(plain), secret);
    } catch {
      return secret(plain);
    }
  }
  if (Array.isArray(plain)) return plain.map((x) => secretTree(x, secret));
  if (plain && typeof plain === "object")
    return Object.fromEntries(Object.entries(plain).map(([k, x]) => [k, secretTree(x, secret)]));
  return secret(plain);
}
