/**
 * Hub-side configuration with an API (specification, "Endpoints"): each tenant's routing rule set, posted to the cfg
 * API. The other hub-side items (wrapper data, code lists, tenant data domain) have no API and stay with the hub team.
 */
import * as pulumi from "@pulumi/pulumi";
import { RoutingRuleSet, type RoutingRuleSetArgs } from "./routingRuleSet";

export interface HubRoutingRulesArgs {
  tenants: RoutingRuleSetArgs[];
}

export class HubRoutingRules extends pulumi.ComponentResource {
  /** Rules per hub tenant id, for the stack outputs. */
  readonly ruleCounts: Record<string, number>;

  constructor(name: string, args: HubRoutingRulesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("hubExport:hub:HubRoutingRules", name, {}, opts);
    this.ruleCounts = {};
    for (const tenant of args.tenants) {
      // Named after the component (two in one stack never collide); the alias keeps a set deployed as routingRules/<id>.
      new RoutingRuleSet(`${name}/${tenant.tenantId}`, tenant, {
        parent: this,
        aliases: [{ name: `routingRules/${tenant.tenantId}` }],
      });
      this.ruleCounts[tenant.tenantId] = tenant.rules.length;
    }
    this.registerOutputs({ ruleCounts: this.ruleCounts });
  }
}
