/** A hub tenant's routing rules as a resource (providers/routingRules.ts): posted on create and when the set changes. */
import * as pulumi from "@pulumi/pulumi";
import { DynamicResource } from "../dynamicResource";
import { routingRulesHash, type RoutingRule } from "../../core/routingRules";
import { routingRulesProvider, ROUTING_RULES_PROVIDER_VERSION } from "../../providers/routingRules";

export interface RoutingRuleSetArgs {
  /** The CFG API URL, ending in /api/. */
  cfgApiUrl: string;
  tenantId: string;
  /** The tenant's credentials string, a Pulumi secret: the Basic authorization. */
  credentialsString: pulumi.Output<string>;
  rules: RoutingRule[];
}

export class RoutingRuleSet extends DynamicResource {
  declare readonly tenantId: pulumi.Output<string>;
  declare readonly rulesHash: pulumi.Output<string>;
  declare readonly ruleCount: pulumi.Output<number>;
  declare readonly postedAt: pulumi.Output<string | undefined>;

  constructor(name: string, args: RoutingRuleSetArgs, opts?: pulumi.CustomResourceOptions) {
    const inputs = {
      ...args,
      rulesHash: routingRulesHash(args.rules),
      version: ROUTING_RULES_PROVIDER_VERSION,
      ruleCount: undefined,
      postedAt: undefined,
    };
    super(
      routingRulesProvider,
      name,
      inputs,
      { ...opts, additionalSecretOutputs: ["credentialsString"] },
      "hubExport",
      "RoutingRuleSet",
    );
  }
}
