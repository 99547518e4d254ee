import type * as pulumi from "@pulumi/pulumi";

/**
 * Options for a component's children: the parent, what the component itself waits for (Pulumi does not pass a
 * component's dependsOn down to its children), and what this child waits for besides.
 */
export function childOptions(
  parent: pulumi.ComponentResource,
  opts?: pulumi.ComponentResourceOptions,
  ...more: pulumi.Resource[]
): pulumi.CustomResourceOptions {
  if (more.length === 0) return opts?.dependsOn ? { parent, dependsOn: opts.dependsOn } : { parent };
  const deps = opts?.dependsOn ?? [];
  return { parent, dependsOn: [...more, ...(Array.isArray(deps) ? deps : [deps as pulumi.Input<pulumi.Resource>])] };
}
