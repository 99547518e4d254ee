/**
 * What the Pulumi engine does with a dynamic provider's resource, for tests that call providers directly: check, then
 * diff against the OLD state's outputs, then an update in place or a replacement. A replacement creates the new
 * resource first and deletes the old one after (the engine's default), unless the diff asks for deleteBeforeReplace;
 * the delete always runs with the OLD state, whatever the program says now.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";

export interface Deployed<T> {
  id: string;
  state: T;
}

export type Step = "create" | "same" | "update" | "replace (create first)" | "replace (delete first)";

/** `pulumi up` of a resource that is not in the state yet. */
export async function createResource<T>(provider: dynamic.ResourceProvider<T, T>, inputs: T): Promise<Deployed<T>> {
  const checked = provider.check ? await provider.check({} as T, inputs) : { inputs };
  if (checked.failures?.length) throw new Error(`check failed: ${JSON.stringify(checked.failures)}`);
  const created = await provider.create(checked.inputs ?? inputs);
  return { id: created.id, state: created.outs ?? inputs };
}

/** `pulumi up` of a resource in the state with new inputs. `steps` records what the engine did. */
export async function updateResource<T>(
  provider: dynamic.ResourceProvider<T, T>,
  old: Deployed<T>,
  inputs: T,
  steps: Step[] = [],
): Promise<Deployed<T>> {
  const checked = provider.check ? await provider.check(old.state, inputs) : { inputs };
  if (checked.failures?.length) throw new Error(`check failed: ${JSON.stringify(checked.failures)}`);
  const news = checked.inputs ?? inputs;
  const diff = provider.diff ? await provider.diff(old.id, old.state, news) : { changes: true };
  if (!diff.changes) {
    steps.push("same");
    return old;
  }
  if (!diff.replaces?.length) {
    const updated = provider.update ? await provider.update(old.id, old.state, news) : { outs: news };
    steps.push("update");
    return { id: old.id, state: updated.outs ?? news };
  }
  if (diff.deleteBeforeReplace) {
    await provider.delete?.(old.id, old.state);
    steps.push("replace (delete first)");
    return createResource(provider, news);
  }
  const created = await createResource(provider, news);
  await provider.delete?.(old.id, old.state);
  steps.push("replace (create first)");
  return created;
}

/** `pulumi destroy` (or the resource removed from the program): delete with the OLD state. */
export async function deleteResource<T>(provider: dynamic.ResourceProvider<T, T>, old: Deployed<T>): Promise<void> {
  await provider.delete?.(old.id, old.state);
}

/** `pulumi refresh`: read with the old state; undefined when the provider says the resource is gone. */
export async function refreshResource<T>(
  provider: dynamic.ResourceProvider<T, T>,
  old: Deployed<T>,
): Promise<Deployed<T> | undefined> {
  if (!provider.read) return old;
  const read = await provider.read(old.id, old.state);
  return read.id ? { id: read.id, state: read.props ?? old.state } : undefined;
}

/** A secret value in an engine property map (the engine's resource.MakeSecret). */
export interface SecretValue {
  secret: unknown;
}
export const secret = (value: unknown): SecretValue => ({ secret: value });
const isSecret = (v: unknown): v is SecretValue =>
  !!v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && "secret" in v;
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && !Array.isArray(v) && !isSecret(v);
const containsSecrets = (v: unknown): boolean =>
  isSecret(v) ||
  (Array.isArray(v) ? v.some(containsSecrets) : isPlainObject(v) && Object.values(v).some(containsSecrets));

/**
 * What the engine does with the state a provider that cannot take secrets (a dynamic provider's ConfigureResponse says
 * acceptSecrets false) returns from Read: "retain the secret bit on any property with the same name"
 * (pkg/resource/plugin/provider_plugin.go, annotateSecrets): a property secret in the old state is secret in the new
 * one, objects key by key; a value under another name is not.
 */
export function annotateSecrets(outs: Record<string, unknown>, ins: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = { ...outs };
  for (const [key, inValue] of Object.entries(ins)) {
    if (!(key in result)) continue;
    const outValue = result[key];
    if (isPlainObject(outValue) && isPlainObject(inValue)) result[key] = annotateSecrets(outValue, inValue);
    else if (!isSecret(outValue) && containsSecrets(inValue)) result[key] = secret(outValue);
  }
  return result;
}

/** Paths of a property map's plain (not secret) strings that hold one of `secrets`. */
export function exposedSecrets(value: unknown, secrets: string[], at = ""): string[] {
  if (isSecret(value)) return [];
  if (typeof value === "string") return secrets.some((s) => s !== "" && value.includes(s)) ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => exposedSecrets(v, secrets, `${at}[${i}]`));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => exposedSecrets(v, secrets, at ? `${at}.${k}` : k));
  return [];
}

/** The operations that configure the default dynamic provider (`pulumi:providers:pulumi-nodejs::default`). */
export type Operation = "up" | "preview" | "refresh" | "destroy" | "refresh --run-program" | "destroy --run-program";

/**
 * The config a dynamic provider's `configure` gets. The engine passes dynamic providers the whole stack config as
 * their provider's inputs (pkg/resource/deploy/target.go GetPackageConfig: "For dynamic providers, we always pass the
 * full configuration") and records those inputs in the state. An operation that runs the program registers the
 * provider again, with the stack config as it is now (an `up` updates the recorded inputs); `pulumi refresh` and
 * `pulumi destroy` run no program and configure the provider from the state's inputs (pkg/resource/deploy/
 * deployment.go EnsureProvider and providers/registry.go Same: "find its old state and just Same it"), unless
 * `--run-program` makes them run it (Pulumi CLI 3.160.0, pulumi/pulumi #18868 and #19044).
 */
export function dynamicProviderConfig<T>(operation: Operation, recorded: T, stackConfig: T): T {
  return operation === "refresh" || operation === "destroy" ? recorded : stackConfig;
}
