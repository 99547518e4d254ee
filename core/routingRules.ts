import { z } from "zod";

/** Allowed values of the hub's cfg_routing_rule fields (specification, "Routing rule record"). */
export const ROUTING_RULE_VALUES = {
  dataDomainCode: ["EMPL"],
  isDataMastered: [0, 1],
  systemRoleCodeSource: ["OM", "ALL", "RDPR", "MDM"],
  systemRoleCodeTarget: ["MKT", "CRM", "OM", "ALL", "HUBOPT", "MDM"],
  status: [-1, 1],
} as const;

/** A literal from a fixed list, with a message that names the allowed values. */
function oneOf<const T extends readonly (string | number)[]>(values: T) {
  const list = values.map((v) => JSON.stringify(v)).join(", ");
  return z.custom<T[number]>((v) => values.includes(v as T[number]), { message: `must be one of ${list}` });
}

/** One routing rule; all five fields are sent in every object. */
export const routingRuleSchema = z.strictObject({
  dataDomainCode: oneOf(ROUTING_RULE_VALUES.dataDomainCode),
  isDataMastered: oneOf(ROUTING_RULE_VALUES.isDataMastered),
  systemRoleCodeSource: oneOf(ROUTING_RULE_VALUES.systemRoleCodeSource),
  systemRoleCodeTarget: oneOf(ROUTING_RULE_VALUES.systemRoleCodeTarget),
  status: oneOf(ROUTING_RULE_VALUES.status),
});
export type RoutingRule = z.infer<typeof routingRuleSchema>;

type Row = [RoutingRule["isDataMastered"], RoutingRule["systemRoleCodeSource"], RoutingRule["systemRoleCodeTarget"], RoutingRule["status"]];

/** The specification's 8-rule set for a client that does not use OM and uses the HR system for employee data. */
const DEFAULT_ROWS: readonly Row[] = [
  [0, "OM", "MKT", -1],
  [0, "OM", "CRM", -1],
  [0, "ALL", "OM", -1],
  [0, "RDPR", "ALL", 1],
  [0, "RDPR", "HUBOPT", -1],
  [1, "RDPR", "MDM", 1],
  [1, "MDM", "ALL", 1],
  [1, "MDM", "HUBOPT", -1],
];

export function defaultRoutingRules(): RoutingRule[] {
  return DEFAULT_ROWS.map(([isDataMastered, systemRoleCodeSource, systemRoleCodeTarget, status]) => ({
    dataDomainCode: "EMPL",
    isDataMastered,
    systemRoleCodeSource,
    systemRoleCodeTarget,
    status,
  }));
}

/** A canonical text of a rule set: field order fixed, so equal sets hash and compare equal. */
export function canonicalRuleSet(rules: readonly RoutingRule[]): string {
  return JSON.stringify(
    rules.map((r) => ({
      dataDomainCode: r.dataDomainCode,
      isDataMastered: r.isDataMastered,
      systemRoleCodeSource: r.systemRoleCodeSource,
      systemRoleCodeTarget: r.systemRoleCodeTarget,
      status: r.status,
    })),
  );
}

/** The rule set posted for a tenant: its custom list, or the specification's 8-rule set. */
export function routingRulesFor(tenant: { routingRules?: RoutingRule[] }): RoutingRule[] {
  return tenant.routingRules ?? defaultRoutingRules();
}
