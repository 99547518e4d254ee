import type * as pulumi from "@pulumi/pulumi";

/**
 * Options for a component's children: the parent, and whatever the component itself must wait for. Pulumi does not
 * pass a component's dependsOn down to its children, so a component created with dependsOn hands it on here.
 */
export function childOptions(
  parent: pulumi.ComponentResource,
  opts?: pulumi.ComponentResourceOptions,
): pulumi.CustomResourceOptions {
  return opts?.dependsOn ? { parent, dependsOn: opts.dependsOn } : { parent };
}

/** A component's dependsOn as a list, to add a child's own dependencies to. */
export function dependencyList(opts?: pulumi.ResourceOptions): pulumi.Input<pulumi.Resource>[] {
  const deps = opts?.dependsOn;
  if (deps === undefined) return [];
  return Array.isArray(deps) ? deps : [deps as pulumi.Input<pulumi.Resource>];
}
