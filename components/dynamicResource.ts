/**
 * The base of the project's dynamic resources (providers/README.md): what pulumi.dynamic.Resource registers, through
 * the SDK's public API, a `pulumi-nodejs:dynamic/<module>:<type>` resource whose input `__provider` is the provider's
 * serialized code, which the dynamic-provider host runs. The offline plan registers a stand-in instead
 * (withoutProviderCode): serializing the providers (an inspector session, a TypeScript parse of every function they
 * capture) was about half of `hub-export plan`'s time, for a value the plan only summarizes.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import * as pulumi from "@pulumi/pulumi";
import { DYNAMIC_PROVIDER_KEY } from "./planner/values";

/** What the offline plan registers as a dynamic resource's provider code. */
export const OFFLINE_PROVIDER_CODE = "(not serialized offline: pulumi preview and up serialize the provider's code)";

const offline = new AsyncLocalStorage<true>();

/** Runs `declare`: the dynamic resources it declares, at once or in its callbacks, get OFFLINE_PROVIDER_CODE. */
export function withoutProviderCode<T>(declare: () => T): T {
  return offline.run(true, declare);
}

// One serialization per provider, shared by its resources, as pulumi.dynamic.Resource caches it.
const serialized = new WeakMap<pulumi.dynamic.ResourceProvider, pulumi.Output<string>>();

/** The provider's code as pulumi.dynamic.Resource serializes it: a secret when it captured one. */
function providerCode(provider: pulumi.dynamic.ResourceProvider): pulumi.Output<string> {
  let code = serialized.get(provider);
  if (!code) {
    code = pulumi
      .output(pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true }))
      .apply((f) => (f.containsSecrets ? pulumi.secret(f.text) : pulumi.output(f.text)));
    serialized.set(provider, code);
  }
  return code;
}

/** pulumi.dynamic.Resource, with the same constructor. */
export abstract class DynamicResource extends pulumi.CustomResource {
  constructor(
    provider: pulumi.dynamic.ResourceProvider,
    name: string,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions | undefined,
    module: string,
    type: string,
  ) {
    const code = offline.getStore() ? OFFLINE_PROVIDER_CODE : providerCode(provider);
    super(`pulumi-nodejs:dynamic/${module}:${type}`, name, { ...props, [DYNAMIC_PROVIDER_KEY]: code }, opts);
  }
}
